# bash completion for auto-patchelf, runpatch's drop-in for Nixpkgs'
# auto-patchelf.py (source it, or install to
# share/bash-completion/completions/auto-patchelf). The options are those of
# tools/auto_patchelf/auto_patchelf_args.cpp; after --extra-args every word
# goes to patchelf, so patchelf's options are offered there.
_auto_patchelf() {
  local cur prev words cword
  _init_completion 2>/dev/null || {
    cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
  }
  local opts="--help --ignore-missing --no-recurse --paths --libs --runtime-dependencies --append-rpaths --keep-libc
    --ignore-existing --search-path --interpreter --origin --dry-run --atomic --in-place --ldcache --remove-ldcache
    --driver-dir --libcuda --forbid --verbose --extra-args"
  local patchelf_opts="--set-interpreter --page-size --set-os-abi --set-soname --set-rpath --add-rpath --remove-rpath
    --shrink-rpath --allowed-rpath-prefixes --force-rpath --add-needed --remove-needed --replace-needed --no-default-lib
    --no-sort --clear-symbol-version --add-debug-tag --clear-execstack --set-execstack --no-clobber-old-sections --debug"
  local i
  for ((i = 1; i < cword; i++)); do
    if [[ ${words[i]} == --extra-args ]]; then  # the rest of the line is patchelf's
      case $prev in
        --set-os-abi) COMPREPLY=($(compgen -W "sysv hp-ux netbsd linux gnu hurd solaris aix irix freebsd tru64 openbsd openvms" -- "$cur")); return ;;
        --set-interpreter) COMPREPLY=($(compgen -f -- "$cur")); return ;;
      esac
      [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$patchelf_opts" -- "$cur"))
      return
    fi
  done
  # --search-path MODE PATH: the mode first, then a directory.
  if [[ $prev == --search-path ]]; then
    COMPREPLY=($(compgen -W "recursive shallow" -- "$cur"))
    return
  fi
  if ((cword >= 3)) && [[ ${words[cword - 2]} == --search-path ]]; then
    COMPREPLY=($(compgen -d -- "$cur"))
    return
  fi
  case $prev in
    --interpreter) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --driver-dir | --libcuda) COMPREPLY=($(compgen -d -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))  # --paths, --libs and the rest take paths
  fi
}
complete -o filenames -F _auto_patchelf auto-patchelf
