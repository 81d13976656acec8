# bash completion for runpatch-patchelf (source it, or install to
# share/bash-completion/completions/runpatch-patchelf). Its options are patchelf 0.19's.
_runpatch_patchelf() {
  local cur prev words cword
  _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; }
  local opts="--set-interpreter --interpreter --page-size --print-interpreter --print-os-abi --set-os-abi --print-soname --set-soname --set-rpath --add-rpath --remove-rpath --shrink-rpath --allowed-rpath-prefixes --print-rpath --force-rpath --add-needed --remove-needed --replace-needed --print-needed --no-default-lib --no-sort --clear-symbol-version --add-debug-tag --print-execstack --clear-execstack --set-execstack --rename-dynamic-symbols --no-clobber-old-sections --build-resolution-cache --output --atomic-copy --debug --version --help"
  case $prev in
    --set-interpreter|--interpreter|--output|--rename-dynamic-symbols) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --set-os-abi) COMPREPLY=($(compgen -W "sysv hp-ux netbsd linux gnu hurd solaris aix irix freebsd tru64 openbsd openvms" -- "$cur")); return ;;
    --page-size|--set-soname|--set-rpath|--add-rpath|--allowed-rpath-prefixes|--add-needed|--remove-needed|--clear-symbol-version) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _runpatch_patchelf runpatch-patchelf
