# bash completion for auto-patchelf, runpatch's drop-in for Nixpkgs'
# auto-patchelf.py (source it, or install to share/bash-completion/completions/auto-patchelf).
_auto_patchelf() {
  local cur prev words cword
  _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; }
  local i
  # --extra-args takes the rest of the line: patchelf options.
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ ${COMP_WORDS[i]} == --extra-args ]] && { COMPREPLY=($(compgen -f -- "$cur")); return; }
  done
  local opts="--help --ignore-missing --no-recurse --paths --libs --runtime-dependencies --append-rpaths --keep-libc --ignore-existing --search-path --interpreter --origin --dry-run --atomic --in-place --ldcache --remove-ldcache --verbose --extra-args"
  case $prev in
    --search-path) COMPREPLY=($(compgen -W "recursive shallow" -- "$cur")); return ;;
    --interpreter) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _auto_patchelf auto-patchelf
