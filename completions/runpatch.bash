# bash completion for runpatch (source it, or install to
# share/bash-completion/completions/runpatch).
_runpatch() {
  local cur prev words cword
  _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; }
  local commands="print scan set tree why driver compat apply auto-patchelf check doctor trace"
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  local opts
  case ${COMP_WORDS[1]} in
    print) opts="--json" ;;
    scan) opts="--json --dynamic-paths --jobs" ;;
    set) opts="--runpath --add-runpath --prepend-runpath --remove-runpath --force-rpath --interpreter --soname --add-needed --remove-needed --replace-needed --rename-dynamic-symbols --output --dry-run --in-place --atomic-copy --ldcache --remove-ldcache" ;;
    tree) opts="--json --stats --use-ldcache --root --ld-library-path --ld-so-cache --ignore-environment" ;;
    why) opts="--search --json --use-ldcache --root --ld-library-path --ld-so-cache --ignore-environment" ;;
    driver) opts="--driver-dir --dry-run --in-place --atomic-copy --ldcache --remove-ldcache --verbose --force-rpath --forbid --jobs" ;;
    compat) opts="--libcuda --driver-dir --with-driver --dry-run --in-place --atomic-copy --ldcache --remove-ldcache --verbose --force-rpath --forbid --jobs" ;;
    apply) opts="--policy --dry-run --in-place --atomic-copy --ldcache --remove-ldcache --verbose --force-rpath --forbid --jobs" ;;
    auto-patchelf) opts="--paths --libs --runtime-dependencies --append-rpaths --ignore-missing --no-recurse --keep-libc --ignore-existing --origin --interpreter --dry-run --in-place --ldcache --remove-ldcache --extra-args" ;;
    doctor) opts="--json --run --proc-root --root --ld-library-path --ld-so-cache --ignore-environment" ;;
    trace) opts="--json --output --fail-on" ;;
    check) opts="--json --junit --sarif --fail-on --forbid --disable --driver-dir --interpreter --require --closure --jetpack --search --root --ignore-environment" ;;
  esac
  case $prev in
    --fail-on)
      if [[ ${COMP_WORDS[1]} == trace ]]; then
        COMPREPLY=($(compgen -W "host-dependent undeclared-dlopen failed" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "error warning info" -- "$cur"))
      fi
      return ;;
    --closure) COMPREPLY=($(compgen -W "auto nix host" -- "$cur")); return ;;
    --disable) COMPREPLY=($(compgen -W "unresolved-needed driver-library driver-dir-missing compat-after-driver stubs-entry forbidden-prefix relative-entry world-writable missing-entry duplicate-entry rpath-not-runpath wrong-interpreter foreign-machine cuda-version-mix closure-bloat unused-entry ld-library-path-shadowing runtime-stub stale-ldcache" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _runpatch runpatch
