# shellcheck shell=bash
# Drop-in for Nixpkgs' autoFixElfFiles: runs ACTION over every dynamically
# linked ELF file of every output (getAllOutputNames). The runpatch actions
# (addDriverRunpath, addCudaCompatRunpath) get all outputs in one call and walk
# them themselves; any other action is called once per file, as before, with
# the file list from one `runpatch scan` instead of a patchelf per file.
# Outputs are walked as `find -type f` walks them: symlinks into other outputs
# or store paths are neither entered nor edited.

autoFixElfFiles() {
  local action="$1"
  shift
  local output outputPaths=()
  for output in $(getAllOutputNames); do
    [ -e "${!output}" ] && outputPaths+=("${!output}")
  done
  [ ${#outputPaths[@]} -gt 0 ] || return 0
  case "$action" in
    addDriverRunpath | addOpenGLRunpath | addCudaCompatRunpath)
      "$action" "$@" "${outputPaths[@]}"
      ;;
    *)
      # NUL-separated, as Nixpkgs' find -print0: a file name may hold a newline.
      local file
      while IFS= read -r -d '' file; do
        "$action" "$@" "$file"
      done < <("${RUNPATCH:-runpatch}" scan --dynamic-paths -0 "${outputPaths[@]}")
      ;;
  esac
}
