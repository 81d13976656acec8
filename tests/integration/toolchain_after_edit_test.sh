#!/usr/bin/env bash
# Edited ELF files survive the rest of a build toolchain.
#
# Each file — the library lib/libgreet.so and the program prog-pie of every arch
# in arches.tsv (and librunpath.so, a library with a runpath, on x86-64), plus on
# an x86-64 host copies of libz.so.1, libcudart.so.13 and libcufft.so.12 (when
# CUDA 13.0 is installed) and 20 system libraries — is edited twice in each mode:
#   default        runpatch set --prepend-runpath E FILE
#   in-place       runpatch set --in-place --prepend-runpath E FILE
#   atomic-copy    runpatch set --atomic-copy --prepend-runpath E FILE
#   nix-build-top  runpatch set --prepend-runpath E FILE, $NIX_BUILD_TOP set to the scratch dir holding FILE
#   rp-patchelf    runpatch-patchelf --set-rpath OLD:/x FILE
# (the second edit adds another entry), then a fresh copy of the result goes
# through each later tool of a build:
#   strip; strip -g; separate debug info (objcopy --only-keep-debug F F.debug,
#   strip --strip-debug F, objcopy --add-gnu-debuglink=F.debug F); eu-strip;
#   llvm-strip; Debian's patchelf --set-rpath CURRENT:/y
# (binutils of the file's arch: <triple>-strip, <triple>-objcopy). A control row
# (mode "unedited") runs the same tools on the unedited file. A row whose edited
# file is byte for byte an earlier row's of the same file (the modes of runpatch
# set differ in how they write, not in what) takes that row's tool cells: each
# tool's input is the same (column "tools": own, or =MODE).
# After every edit and every tool: the command exited 0, the runpath (readelf -d)
# is what the edits set (plus /y after patchelf), and the file still loads: the
# arch's fixture program prog-pie runs (natively, or under qemu-user -L SYSROOT)
# with LD_BIND_NOW=1 and prints what it prints unedited — the edited program
# itself, or the program with the library under test reachable: libgreet.so
# through LD_LIBRARY_PATH only (no other copy is reachable), librunpath.so and
# the host libraries LD_PRELOADed.
# Also: copies without section headers (llvm-objcopy --strip-sections) of
# lib/libgreet.so and prog-pie, edited three times in a row with runpatch set and
# with runpatch-patchelf, run after each edit.
#
# Cells: ok; ok* (ok, but the command or readelf printed a warning: listed, not
# a failure); TOOL-FAIL(exit n, message); NO-LOAD(message); RUNPATH(expected X,
# got Y) (the runpath is not what the edits set); - (not run: an earlier step of
# the row failed); n/a (no edit: the control row); skip (left out for a file
# over 64 MiB, see HEAVY_TOOLS). A failure in the control row
# is the tool's own and is not counted; nor is an edited row's failure with the
# same tool (shown with a trailing ~). The full message of every failing cell is
# listed after the table.
#
# Usage: toolchain_after_edit_test.sh RUNPATCH_CLI RUNPATCH_PATCHELF FIXTURES_DIR SCRATCH_DIR
# Environment:
#   TOOLCHAIN_QUICK=1  only the x86-64 fixtures and libz
#   TOOLCHAIN_JOBS=N   rows run in parallel (default: nproc)
#   TOOLCHAIN_HEAVY_ALL=1  every tool and the control row for files over 64 MiB too (libcufft: +2 minutes)
#   TOOLCHAIN_KEEP=1   keep every cell's files under SCRATCH_DIR/run (default: failing cells' only)
# Exit status: 0 every counted cell ok, 1 some cell failed, 2 usage error.
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 RUNPATCH_CLI RUNPATCH_PATCHELF FIXTURES_DIR SCRATCH_DIR" >&2
  exit 2
fi
cli=$1 rp_patchelf=$2 fixtures=$3 scratch=$4
for tool in "$cli" "$rp_patchelf"; do
  [[ -x $tool ]] || { echo "error: $tool is not an executable" >&2; exit 2; }
done
[[ -f $fixtures/arches.tsv ]] || { echo "error: $fixtures/arches.tsv not found" >&2; exit 2; }
cli=$(realpath "$cli") rp_patchelf=$(realpath "$rp_patchelf") fixtures=$(realpath "$fixtures")

quick=${TOOLCHAIN_QUICK:-0}
jobs_max=${TOOLCHAIN_JOBS:-$(nproc)}
keep=${TOOLCHAIN_KEEP:-0}
syslib_count=20
host_libdir=/usr/lib/x86_64-linux-gnu
cuda_root=/usr/local/cuda-13.0
start_seconds=$SECONDS

# Whatever the caller's environment preloads or adds must not reach the programs run here.
unset LD_PRELOAD LD_LIBRARY_PATH LD_BIND_NOW

missing=()
for tool in readelf strip objcopy eu-strip llvm-strip llvm-objcopy patchelf; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "error: missing tools: ${missing[*]}" >&2
  exit 2
fi

mkdir -p "$scratch"
run=$(realpath "$scratch")/run
[[ -e $run ]] && chmod -R u+w "$run"
rm -rf "$run"
mkdir -p "$run/cells" "$run/results" "$run/base" "$run/tmp"

E=("" /run/opengl-driver/lib /run/second-edit/lib "/opt/third-edit/$(printf 'long%.0s' {1..30})/lib")  # runpatch set, edit k
P=("" /x /x2 "/x3/$(printf 'long%.0s' {1..30})")                                                      # runpatch-patchelf, edit k
MODES=(unedited default in-place atomic-copy nix-build-top rp-patchelf)  # unedited: the control row
TOOLS=(strip strip-g debuglink eu-strip llvm-strip patchelf)
MATRIX_COLS=(edit1 edit2 "${TOOLS[@]}")
NOSHDR_COLS=(edit1 edit2 edit3)

# --- helpers -----------------------------------------------------------------

join_rp() {  # A B: A:B without empty entries (an empty entry is the current directory to ld.so)
  if [[ -z $1 ]]; then printf '%s' "$2"; elif [[ -z $2 ]]; then printf '%s' "$1"; else printf '%s:%s' "$1" "$2"; fi
}

slurp() {  # VAR FILE: the file's contents into VAR, without a subshell
  printf -v "$1" '%s' ''
  IFS= read -r -d '' "$1" <"$2" || true
}

flat() {  # FILE: its first two non-empty lines on one line, scratch paths shortened
  local text
  text=$(tr '\t\r' '  ' <"$1" | sed '/^[[:space:]]*$/d' | head -n 2 | paste -sd'|' | cut -c1-240) || true
  printf '%s' "${text//"$run/"/}"
}

describe_rc() {  # RC
  local rc=$1
  if [[ $rc -gt 128 && $rc -lt 160 ]]; then printf 'exit %d, SIG%s' "$rc" "$(kill -l $((rc - 128)) 2>/dev/null || echo '?')"
  else printf 'exit %d' "$rc"; fi
}

# inspect FILE: sets file_runpath (DT_RUNPATH, else DT_RPATH, else empty) and file_warnings
# (readelf's warnings on the program headers, sections and dynamic section), with one readelf.
inspect() {
  local out='' tmp=$run/tmp/readelf.$BASHPID  # (expanded here: in a redirection of a command it is the child's)
  readelf -lSdW "$1" >"$tmp" 2>&1 || true
  slurp out "$tmp"
  file_runpath='' file_warnings=''
  if [[ $out =~ \(RUNPATH\)[^[]*\[([^]$'\n']*)\] ]]; then file_runpath=${BASH_REMATCH[1]}
  elif [[ $out =~ \(RPATH\)[^[]*\[([^]$'\n']*)\] ]]; then file_runpath=${BASH_REMATCH[1]}; fi
  if [[ $out == *[Ww]arning* ]]; then
    file_warnings=$(grep -i 'warning' <<<"$out" | sort -u | head -n 2 | paste -sd'|' | cut -c1-200) || true
  fi
}

declare -A QEMU SYSROOT BINPREFIX
arches=()
while IFS=$'\t' read -r arch compiler qemu sysroot; do
  [[ -n $arch ]] || continue
  [[ $quick == 1 && $arch != x86_64 ]] && continue
  arches+=("$arch")
  QEMU[$arch]=$qemu SYSROOT[$arch]=$sysroot
  if [[ $compiler == cc ]]; then BINPREFIX[$arch]=""; else BINPREFIX[$arch]=${compiler%gcc}; fi
done <"$fixtures/arches.tsv"

# limited CPU_SECONDS CMD...: CMD in a subshell with a CPU-time limit (cheaper than timeout: one process).
# CMD keeps the caller's stderr (fd 3 here); this shell's own "Aborted"/"Segmentation fault" line is dropped:
# the exit status tells.
limited() {
  { (ulimit -t "$1" && shift && exec "$@" 2>&3 3>&-); } 3>&2 2>/dev/null
}

# run_prog ARCH PROGRAM LIBRARY_PATH PRELOAD LOG: runs PROGRAM with LD_BIND_NOW=1 (and the others when not empty).
run_prog() {
  local arch=$1 prog=$2 llp=$3 preload=$4 log=$5 qemu=${QEMU[$1]}
  if [[ $qemu == - ]]; then
    { (ulimit -t 60 && export LD_BIND_NOW=1 LD_LIBRARY_PATH="$llp" LD_PRELOAD="$preload" && exec "$prog") >"$log" 2>&1; } 2>/dev/null
  else
    local qemu_env=(-E LD_BIND_NOW=1)
    [[ -z $llp ]] || qemu_env+=(-E "LD_LIBRARY_PATH=$llp")
    [[ -z $preload ]] || qemu_env+=(-E "LD_PRELOAD=$preload")
    { (ulimit -t 120 && exec "$qemu" -L "${SYSROOT[$arch]}" "${qemu_env[@]}" "$prog") >"$log" 2>&1; } 2>/dev/null
  fi
}

# The files under test. HOW says how the program reaches one:
#   prog     it is the program (DIR/prog-pie, with DIR/lib/libgreet.so)
#   libpath  DIR/libgreet.so, through LD_LIBRARY_PATH=DIR, for $run/base/ARCH-nolib/prog-pie (nothing else finds it)
#   preload  DIR/NAME, LD_PRELOADed into $run/base/ARCH/prog-pie (which finds its own lib/libgreet.so)
# A file over 64 MiB (libcufft) is heavy: each tool takes seconds on it, so (unless TOOLCHAIN_HEAVY_ALL=1)
# it has no control row, and only the default mode runs every tool; the other modes run strip, eu-strip
# and patchelf (one tool of binutils, elfutils and patchelf each); the cells left out read "skip".
F_LABEL=() F_ARCH=() F_SRC=() F_NAME=() F_HOW=() F_HEAVY=()
add_file() {
  F_LABEL+=("$1") F_ARCH+=("$2") F_SRC+=("$3") F_NAME+=("$4") F_HOW+=("$5")
  if [[ ${TOOLCHAIN_HEAVY_ALL:-0} != 1 && $(stat -Lc %s "$3") -gt $((64 << 20)) ]]; then F_HEAVY+=(1); else F_HEAVY+=(0); fi
}
HEAVY_TOOLS=(strip eu-strip patchelf)
skipped=()

link_or_copy() { ln -f "$1" "$2" 2>/dev/null || cp "$1" "$2"; }

# make_cell DIR ARCH NAME HOW FILE: DIR as HOW needs it, with a copy of FILE as DIR/NAME.
make_cell() {
  local dir=$1 arch=$2 name=$3 how=$4 file=$5
  mkdir -p "$dir/lib"
  if [[ $how == prog ]]; then link_or_copy "$run/base/$arch/lib/libgreet.so" "$dir/lib/libgreet.so"; fi
  cp "$file" "$dir/$name"
  [[ -w $dir/$name ]] || chmod u+w "$dir/$name"
}

# check_loads ARCH DIR NAME HOW LOG: the program runs and prints what it prints unedited;
# otherwise returns 1 with the reason in LOG.msg.
check_loads() {
  local arch=$1 dir=$2 name=$3 how=$4 log=$5 rc=0 output expected
  case $how in
    prog) run_prog "$arch" "$dir/$name" "" "" "$log" || rc=$? ;;
    libpath) run_prog "$arch" "$run/base/$arch-nolib/prog-pie" "$dir" "" "$log" || rc=$? ;;
    preload) run_prog "$arch" "$run/base/$arch/prog-pie" "" "$dir/$name" "$log" || rc=$? ;;
  esac
  if [[ $rc -ne 0 ]]; then
    printf '%s%s' "$(describe_rc "$rc")" "$(flat "$log" | sed 's/^./: &/')" >"$log.msg"
    return 1
  fi
  slurp output "$log"
  slurp expected "$run/base/$arch.out"
  if [[ $output != "$expected" ]]; then
    printf 'exit 0, printed "%s", expected "%s"' "$(flat "$log")" "$(flat "$run/base/$arch.out")" >"$log.msg"
    return 1
  fi
}

# --- baselines: every arch's unedited program runs ----------------------------

# The fixtures used are copied first: a build may rebuild the fixture tree while this runs.
good_arches=()
for arch in "${arches[@]}"; do
  mkdir -p "$run/fixtures/$arch/lib" "$run/base/$arch/lib" "$run/base/$arch-nolib"
  if ! cp "$fixtures/$arch/prog-pie" "$fixtures/$arch/librunpath.so" "$run/fixtures/$arch/" 2>"$run/base/$arch.out" ||
    ! cp "$fixtures/$arch/lib/libgreet.so" "$run/fixtures/$arch/lib/" 2>"$run/base/$arch.out"; then
    skipped+=("$arch: fixtures missing ($(flat "$run/base/$arch.out"))")
    continue
  fi
  cp "$run/fixtures/$arch/prog-pie" "$run/base/$arch/prog-pie"
  cp "$run/fixtures/$arch/prog-pie" "$run/base/$arch-nolib/prog-pie"
  cp "$run/fixtures/$arch/lib/libgreet.so" "$run/base/$arch/lib/libgreet.so"
  rc=0
  run_prog "$arch" "$run/base/$arch/prog-pie" "" "" "$run/base/$arch.out" || rc=$?
  if [[ $rc -ne 0 ]]; then
    skipped+=("$arch: the unedited prog-pie does not run ($(describe_rc $rc): $(flat "$run/base/$arch.out"))")
    continue
  fi
  good_arches+=("$arch")
  add_file "$arch/lib/libgreet.so" "$arch" "$run/fixtures/$arch/lib/libgreet.so" libgreet.so libpath
  if [[ $arch == x86_64 ]]; then
    add_file "$arch/librunpath.so" "$arch" "$run/fixtures/$arch/librunpath.so" librunpath.so preload
  fi
  add_file "$arch/prog-pie" "$arch" "$run/fixtures/$arch/prog-pie" prog-pie prog
done

# A host library qualifies when an unedited copy LD_PRELOADed into the x86-64 program loads.
host_lib_loads() {  # FILE NAME
  local dir=$run/base/host-$2 rc=0
  make_cell "$dir" x86_64 "$2" preload "$1"
  check_loads x86_64 "$dir" "$2" preload "$dir.log" || rc=$?
  rm -rf "$dir"
  return $rc
}
is_shared_lib() {  # FILE: an ELF shared object with a dynamic section
  local magic header dynamic
  magic=$(head -c4 "$1" | od -An -c | tr -d ' ') || return 1
  [[ $magic == '177ELF' ]] || return 1
  header=$(readelf -hW "$1" 2>/dev/null) || return 1
  [[ $header =~ Type:[[:space:]]*DYN ]] || return 1
  dynamic=$(readelf -dW "$1" 2>/dev/null) || return 1
  [[ $dynamic == *'Dynamic section at offset'* ]]
}

if [[ $(uname -m) == x86_64 && " ${good_arches[*]} " == *" x86_64 "* ]]; then
  libz=$(find "$host_libdir" -maxdepth 1 -name 'libz.so.1' | head -n1)
  if [[ -z $libz ]]; then
    skipped+=("libz.so.1: not found under $host_libdir")
  elif host_lib_loads "$(realpath "$libz")" libz.so.1; then
    add_file host/libz.so.1 x86_64 "$(realpath "$libz")" libz.so.1 preload
  else
    skipped+=("libz.so.1: the unedited copy does not load: $(cat "$run/base/host-libz.so.1.log.msg")")
  fi
  if [[ $quick != 1 ]]; then
    for name in libcudart.so.13 libcufft.so.12; do
      found=$(find "$cuda_root"/lib* -maxdepth 1 -name "$name" 2>/dev/null | LC_ALL=C sort | head -n1) || true
      if [[ -z $found ]]; then
        skipped+=("$name: not present under $cuda_root/lib*")
      elif host_lib_loads "$(realpath "$found")" "$name"; then
        add_file "cuda/$name" x86_64 "$(realpath "$found")" "$name" preload
      else
        skipped+=("$name: the unedited copy does not load: $(cat "$run/base/host-$name.log.msg")")
      fi
    done
    # System libraries: sorted, every Nth; from each pick on, the first that is a shared
    # object with a dynamic section, not glibc's own (a second libc in one process) nor
    # libz (above), under 16 MiB, and loads unedited.
    mapfile -t candidates < <(find "$host_libdir" -maxdepth 1 -type f -name 'lib*.so*' -size -16M | LC_ALL=C sort)
    stride=$((${#candidates[@]} / syslib_count))
    glibc='^(libc|libm|libmvec|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale|libthread_db|libc_malloc_debug|libmemusage|libpcprofile|libnss_[a-z]+|libz)\.so'
    syslibs=0
    for ((k = 0; stride > 0 && k < syslib_count; k++)); do
      for ((j = k * stride; j < (k + 1) * stride; j++)); do
        candidate=${candidates[j]} name=${candidates[j]##*/}
        [[ $name =~ $glibc ]] && continue
        is_shared_lib "$candidate" || continue
        host_lib_loads "$candidate" "$name" || continue
        add_file "sys/$name" x86_64 "$candidate" "$name" preload
        syslibs=$((syslibs + 1))
        break
      done
    done
    [[ $syslibs -eq $syslib_count ]] || skipped+=("system libraries: $syslibs of $syslib_count picked under $host_libdir")
  fi
else
  skipped+=("host libraries: not an x86-64 host with a running x86_64 fixture")
fi

# --- the cells -----------------------------------------------------------------

record() {  # OUT COLUMN STATUS MESSAGE
  local msg=${4//$'\t'/ }
  printf '%s\t%s\t%s\n' "$2" "$3" "${msg//$'\n'/ }" >>"$1"
}

# edit_cmd MODE STEP FILE OLD_RUNPATH: the edit of step STEP in MODE.
edit_cmd() {
  local mode=$1 step=$2 file=$3 old=$4
  case $mode in
    default) limited 300 "$cli" set --prepend-runpath "${E[step]}" "$file" ;;
    in-place) limited 300 "$cli" set --in-place --prepend-runpath "${E[step]}" "$file" ;;
    atomic-copy) limited 300 "$cli" set --atomic-copy --prepend-runpath "${E[step]}" "$file" ;;
    nix-build-top) NIX_BUILD_TOP=$run limited 300 "$cli" set --prepend-runpath "${E[step]}" "$file" ;;
    rp-patchelf) limited 300 "$rp_patchelf" --set-rpath "$(join_rp "$old" "${P[step]}")" "$file" ;;
  esac
}
expected_after_edit() {  # MODE STEP OLD
  if [[ $1 == rp-patchelf ]]; then join_rp "$3" "${P[$2]}"; else join_rp "${E[$2]}" "$3"; fi
}

step_cmd() {  # LABEL CMD...: runs CMD; on failure its output is preceded by [LABEL]
  local label=$1 rc=0 output=$run/tmp/step.$BASHPID; shift
  "$@" >"$output" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]]; then echo "[$label]"; fi
  cat "$output"
  rm -f "$output"
  return $rc
}

tool_cmd() {  # TOOL ARCH FILE CURRENT_RUNPATH
  local tool=$1 prefix=${BINPREFIX[$2]} file=$3 current=$4
  case $tool in
    strip) limited 300 "${prefix}strip" "$file" ;;
    strip-g) limited 300 "${prefix}strip" -g "$file" ;;
    debuglink)
      step_cmd "${prefix}objcopy --only-keep-debug" limited 300 "${prefix}objcopy" --only-keep-debug "$file" "$file.debug" &&
        step_cmd "${prefix}strip --strip-debug" limited 300 "${prefix}strip" --strip-debug "$file" &&
        step_cmd "${prefix}objcopy --add-gnu-debuglink" limited 300 "${prefix}objcopy" --add-gnu-debuglink="$file.debug" "$file" ;;
    eu-strip) limited 300 eu-strip "$file" ;;
    llvm-strip) limited 300 llvm-strip "$file" ;;
    patchelf) limited 300 patchelf --set-rpath "$(join_rp "$current" /y)" "$file" ;;
  esac
}

# verify OUT COLUMN RC LOG ARCH DIR NAME HOW EXPECTED_RUNPATH: records the cell; returns 1 when it failed.
verify() {
  local out=$1 col=$2 rc=$3 log=$4 arch=$5 dir=$6 name=$7 how=$8 expected=$9 msg text warn
  if [[ $rc -ne 0 ]]; then
    record "$out" "$col" TOOL-FAIL "$(describe_rc "$rc")$(flat "$log" | sed 's/^./, &/')"
    return 1
  fi
  inspect "$dir/$name"
  if ! check_loads "$arch" "$dir" "$name" "$how" "$log.run"; then
    msg=$(<"$log.run.msg")
    [[ $file_runpath == "$expected" ]] || msg+="; runpath [$file_runpath], expected [$expected]"
    record "$out" "$col" NO-LOAD "$msg"
    return 1
  fi
  if [[ $file_runpath != "$expected" ]]; then
    record "$out" "$col" RUNPATH "expected [$expected], got [$file_runpath]"
    return 1
  fi
  warn=$file_warnings
  slurp text "$log"
  if [[ $text == *[Ww]arn* ]]; then
    warn=$(grep -i 'warn' "$log" | head -n 2 | paste -sd'|' | cut -c1-200)${warn:+|$warn} || true
  fi
  if [[ -n $warn ]]; then record "$out" "$col" 'ok*' "${warn//"$run/"/}"; else record "$out" "$col" ok ""; fi
}

not_run() {  # OUT COLUMN...
  local out=$1 col; shift
  for col in "$@"; do record "$out" "$col" - ""; done
}

# edit_row IDX MODE OUT BASE: the row's two edits (none in the control row) on a
# fresh copy, BASE/edit/NAME; sets row_runpath. Returns 1 when an edit failed
# (the row's remaining cells are then recorded as not run).
edit_row() {
  local idx=$1 mode=$2 out=$3 base=$4
  local arch=${F_ARCH[idx]} name=${F_NAME[idx]} how=${F_HOW[idx]} step rc old expected
  make_cell "$base/edit" "$arch" "$name" "$how" "${F_SRC[idx]}"
  local file=$base/edit/$name
  inspect "$file"
  old=$file_runpath
  if [[ $mode == unedited ]]; then
    record "$out" edit1 n/a ""
    record "$out" edit2 n/a ""
  fi
  for step in 1 2; do
    [[ $mode != unedited ]] || break
    expected=$(expected_after_edit "$mode" "$step" "$old")
    rc=0
    edit_cmd "$mode" "$step" "$file" "$old" >"$base/edit$step.log" 2>&1 || rc=$?
    if ! verify "$out" "edit$step" "$rc" "$base/edit$step.log" "$arch" "$base/edit" "$name" "$how" "$expected"; then
      if [[ $step -eq 1 ]]; then not_run "$out" edit2; fi
      not_run "$out" "${TOOLS[@]}"
      return 1
    fi
    old=$expected
  done
  row_runpath=$old
}

# tools_row IDX OUT BASE RUNPATCH TOOLS...: each tool on a fresh copy of BASE/edit/NAME;
# sets row_failed. A passing cell's files are removed unless TOOLCHAIN_KEEP=1.
tools_row() {
  local idx=$1 out=$2 base=$3 runpath=$4 tool dir expected rc; shift 4
  local arch=${F_ARCH[idx]} name=${F_NAME[idx]} how=${F_HOW[idx]}
  row_failed=0
  for tool in "$@"; do
    dir=$base/$tool
    make_cell "$dir" "$arch" "$name" "$how" "$base/edit/$name"
    expected=$runpath
    if [[ $tool == patchelf ]]; then expected=$(join_rp "$runpath" /y); fi
    rc=0
    tool_cmd "$tool" "$arch" "$dir/$name" "$runpath" >"$base/$tool.log" 2>&1 || rc=$?
    if verify "$out" "$tool" "$rc" "$base/$tool.log" "$arch" "$dir" "$name" "$how" "$expected"; then
      [[ $keep == 1 ]] || rm -rf "$dir"
    else
      row_failed=1
    fi
  done
}

# shared_cells FROM_OUT FROM_MODE OUT TOOLS...: the tool cells of a row whose edited
# file is byte for byte this row's (each tool sees the same input, so gives the
# same cell); returns 1, copying nothing, when FROM_OUT lacks one of TOOLS.
shared_cells() {
  local from=$1 from_mode=$2 out=$3 tool col status msg; shift 3
  declare -A have=()
  while IFS=$'\t' read -r col status msg; do have[$col]=$status$'\t'$msg; done <"$from"
  for tool in "$@"; do [[ -n ${have[$tool]:-} ]] || return 1; done
  for tool in "$@"; do
    IFS=$'\t' read -r status msg <<<"${have[$tool]}"
    record "$out" "$tool" "$status" "$msg${msg:+ }(same bytes as the $from_mode row)"
  done
}

# One file's rows, a mode each: two edits, then each tool on a fresh copy of the
# result. Edits that leave the same bytes as an earlier row's (the four modes of
# runpatch set write one layout each way) share that row's tool cells instead of
# running the tools again: the edits are what differs between modes.
file_job() {
  local idx=$1 mode out base started tools tool rep reps=() failed=0
  local name=${F_NAME[idx]}
  for mode in "${MODES[@]}"; do
    started=$SECONDS out=$run/results/m-$idx-$mode.tsv base=$run/cells/$idx-$mode
    if [[ ${F_HEAVY[idx]} == 1 && $mode == unedited ]]; then
      record "$out" edit1 n/a ""
      record "$out" edit2 n/a ""
      for tool in "${TOOLS[@]}"; do record "$out" "$tool" skip ""; done
      record "$out" tools own ""
      record "$out" seconds 0 ""
      echo "#done" >>"$out"
      continue
    fi
    if ! edit_row "$idx" "$mode" "$out" "$base"; then
      failed=1
      record "$out" tools - ""
      record "$out" seconds "$((SECONDS - started))" ""
      echo "#done" >>"$out"
      continue
    fi
    tools=("${TOOLS[@]}")
    if [[ ${F_HEAVY[idx]} == 1 && $mode != default ]]; then
      tools=("${HEAVY_TOOLS[@]}")
      for tool in "${TOOLS[@]}"; do
        [[ " ${tools[*]} " == *" $tool "* ]] || record "$out" "$tool" skip ""
      done
    fi
    local shared=''
    if [[ $mode != unedited ]]; then
      for rep in "${reps[@]}"; do
        if cmp -s "$run/cells/$idx-$rep/edit/$name" "$base/edit/$name" &&
          shared_cells "$run/results/m-$idx-$rep.tsv" "$rep" "$out" "${tools[@]}"; then
          shared=$rep
          break
        fi
      done
    fi
    if [[ -n $shared ]]; then
      record "$out" tools "=$shared" ""
    else
      tools_row "$idx" "$out" "$base" "$row_runpath" "${tools[@]}"
      [[ $row_failed == 0 ]] || failed=1
      [[ $mode == unedited ]] || reps+=("$mode")
      record "$out" tools own ""
    fi
    record "$out" seconds "$((SECONDS - started))" ""
    echo "#done" >>"$out"
  done
  # The rows' edited files are kept until every row of the file has compared with them.
  if [[ $keep != 1 && $failed == 0 ]]; then
    for mode in "${MODES[@]}"; do rm -rf "$run/cells/$idx-$mode"; done
  fi
}

# A copy without section headers, edited three times in a row by one editor, run after each edit.
noshdr_job() {
  local arch=$1 rel=$2 editor=$3 out=$4
  local base=$run/cells/noshdr-$arch-${rel##*/}-$editor step rc old expected mode=default name=${rel##*/} how=prog s
  local rest=()
  if [[ $editor == rp-patchelf ]]; then mode=rp-patchelf; fi
  if [[ $name == libgreet.so ]]; then how=libpath; fi
  mkdir -p "$base"
  if ! llvm-objcopy --strip-sections "$run/fixtures/$arch/$rel" "$base/stripped" >"$base/strip.log" 2>&1; then
    record "$out" edit1 TOOL-FAIL "llvm-objcopy --strip-sections: $(flat "$base/strip.log")"
    not_run "$out" edit2 edit3
    echo "#done" >>"$out"
    return 0
  fi
  make_cell "$base/edit" "$arch" "$name" "$how" "$base/stripped"
  if ! check_loads "$arch" "$base/edit" "$name" "$how" "$base/unedited.run"; then
    record "$out" edit1 NO-LOAD "unedited --strip-sections copy: $(<"$base/unedited.run.msg")"
    not_run "$out" edit2 edit3
    echo "#done" >>"$out"
    return 0
  fi
  inspect "$base/edit/$name"
  old=$file_runpath
  for step in 1 2 3; do
    expected=$(expected_after_edit "$mode" "$step" "$old")
    rc=0
    edit_cmd "$mode" "$step" "$base/edit/$name" "$old" >"$base/edit$step.log" 2>&1 || rc=$?
    if ! verify "$out" "edit$step" "$rc" "$base/edit$step.log" "$arch" "$base/edit" "$name" "$how" "$expected"; then
      for ((s = step + 1; s <= 3; s++)); do rest+=("edit$s"); done
      if [[ ${#rest[@]} -gt 0 ]]; then not_run "$out" "${rest[@]}"; fi
      echo "#done" >>"$out"
      return 0
    fi
    old=$expected
  done
  if [[ $keep != 1 ]]; then rm -rf "$base"; fi
  echo "#done" >>"$out"
}

throttle() {
  while [[ $(jobs -rp | wc -l) -ge $jobs_max ]]; do wait -n || true; done
}

echo "toolchain_after_edit: ${#F_LABEL[@]} files x ${#MODES[@]} modes (one the unedited control), ${#good_arches[@]} arches without section headers; $jobs_max jobs; scratch $run"
# The largest files start first: a 286 MB library's cells take seconds each.
mapfile -t order < <(for idx in "${!F_SRC[@]}"; do printf '%s %s\n' "$(stat -Lc %s "${F_SRC[idx]}")" "$idx"; done |
  sort -k1,1nr -k2,2n | cut -d' ' -f2)
for idx in "${order[@]}"; do
  throttle
  file_job "$idx" &
done
for arch in "${good_arches[@]}"; do
  for rel in lib/libgreet.so prog-pie; do
    for editor in runpatch rp-patchelf; do
      throttle
      noshdr_job "$arch" "$rel" "$editor" "$run/results/n-$arch-${rel##*/}-$editor.tsv" &
    done
  done
done
wait

# --- the table -------------------------------------------------------------------

failures=() warnings=() controls=() excused=() cells=0 bad=0 shared_rows=0
declare -A cell_status control_failed
short() {  # STATUS MESSAGE: the table's cell
  if [[ $1 == TOOL-FAIL && $2 =~ ^(exit\ [0-9]+) ]]; then printf 'TOOL-FAIL(%s)' "${BASH_REMATCH[1]}"; else printf '%s' "$1"; fi
}
# read_row RESULTS LABEL MODE COLUMNS...: fills cell_status[COLUMN] and collects failures and warnings.
# A failure in the control row (MODE unedited) is the tool's own: recorded in control_failed[COLUMN],
# not counted; an edited row's failure in such a column is shown with a trailing ~ and not counted.
read_row() {
  local results=$1 label=$2 mode=$3 col status msg cell; shift 3
  cell_status=()
  if [[ ! -f $results ]] || ! grep -qx '#done' "$results"; then
    for col in "$@"; do cell_status[$col]="ERROR"; done
    failures+=("$label | $mode | (all): the test's own job did not finish ($results)")
    bad=$((bad + 1))
    return 0
  fi
  while IFS=$'\t' read -r col status msg; do
    [[ $col == '#done' ]] && continue
    if [[ $col == seconds || $col == tools ]]; then
      cell_status[$col]=$status
      [[ $col != tools || $status != =* ]] || shared_rows=$((shared_rows + 1))
      continue
    fi
    cells=$((cells + 1))
    cell=$(short "$status" "$msg")
    case $status in
      ok | - | n/a | skip) ;;
      ok\*) warnings+=("$label | $mode | $col: $msg") ;;
      *)
        if [[ $mode == unedited ]]; then
          control_failed[$col]=1
          controls+=("$label | $col: $status($msg)")
        elif [[ -n ${control_failed[$col]:-} ]]; then
          cell+="~"
          excused+=("$label | $mode | $col: $status($msg)")
        else
          bad=$((bad + 1))
          failures+=("$label | $mode | $col: $status($msg)")
        fi ;;
    esac
    cell_status[$col]=$cell
  done <"$results"
}

label_width=36
for label in "${F_LABEL[@]}"; do
  if ((${#label} > label_width)); then label_width=${#label}; fi
done
print_row() {  # LABEL MODE CELLS...
  local label=$1 mode=$2 c; shift 2
  printf "%-${label_width}s %-13s" "$label" "$mode"
  for c in "$@"; do printf ' %-17s' "$c"; done
  printf '\n'
}

echo
echo "== two edits, then each tool on a fresh copy of the edited file =="
print_row file mode "${MATRIX_COLS[@]}" tools seconds
for ((idx = 0; idx < ${#F_LABEL[@]}; idx++)); do
  control_failed=()
  for mode in "${MODES[@]}"; do
    read_row "$run/results/m-$idx-$mode.tsv" "${F_LABEL[idx]}" "$mode" "${MATRIX_COLS[@]}"
    row=()
    for col in "${MATRIX_COLS[@]}" tools seconds; do row+=("${cell_status[$col]:-?}"); done
    print_row "${F_LABEL[idx]}" "$mode" "${row[@]}"
  done
done

echo
echo "== without section headers (llvm-objcopy --strip-sections), edited three times in a row =="
print_row file editor "${NOSHDR_COLS[@]}"
for arch in "${good_arches[@]}"; do
  for rel in lib/libgreet.so prog-pie; do
    for editor in runpatch rp-patchelf; do
      label="$arch/$rel (no shdrs)"
      control_failed=()
      read_row "$run/results/n-$arch-${rel##*/}-$editor.tsv" "$label" "$editor" "${NOSHDR_COLS[@]}"
      row=()
      for col in "${NOSHDR_COLS[@]}"; do row+=("${cell_status[$col]:-?}"); done
      print_row "$label" "$editor" "${row[@]}"
    done
  done
done

if [[ ${#skipped[@]} -gt 0 ]]; then
  echo
  echo "== skipped =="
  printf '  %s\n' "${skipped[@]}"
fi
if [[ ${#warnings[@]} -gt 0 ]]; then
  echo
  echo "== ok*: warnings (not failures) =="
  printf '  %s\n' "${warnings[@]}"
fi
if [[ ${#controls[@]} -gt 0 ]]; then
  echo
  echo "== control row: the tool fails on the unedited file (not counted) =="
  printf '  %s\n' "${controls[@]}"
fi
if [[ ${#excused[@]} -gt 0 ]]; then
  echo
  echo "== ~: fails after the edit, as on the unedited file (not counted) =="
  printf '  %s\n' "${excused[@]}"
fi
if [[ ${#failures[@]} -gt 0 ]]; then
  echo
  echo "== failed cells (their files are kept under $run/cells) =="
  printf '  %s\n' "${failures[@]}"
fi
echo
echo "toolchain_after_edit: $cells cells, $bad failed, ${#warnings[@]} with warnings, ${#controls[@]} control failures, ${#excused[@]} excused, ${#skipped[@]} skipped; $shared_rows rows shared the tool cells of a byte-identical row; $((SECONDS - start_seconds)) s"
[[ $bad -eq 0 ]] || exit 1
[[ $keep == 1 ]] || rm -rf "$run/base" "$run/tmp" "$run/fixtures" "$run/cells"
exit 0
