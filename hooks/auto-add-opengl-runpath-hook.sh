# shellcheck shell=bash
# autoAddOpenGLRunpathHook, the name of autoAddDriverRunpath before Nixpkgs'
# 2024 rename: the same hook, with a deprecation warning naming the new one.
# Needs add-driver-runpath.sh and auto-fix-elf-files.sh sourced too.
echo "Sourcing auto-add-opengl-runpath-hook"
echo "autoAddOpenGLRunpathHook: warning: deprecated (renamed in Nixpkgs in 2024); use autoAddDriverRunpath" >&2

if [ -z "${dontUseAutoAddOpenGLRunpath-}" ] && [ -z "${dontUseAutoAddDriverRunpath-}" ]; then
  echo "Using autoAddDriverRunpath (as autoAddOpenGLRunpathHook)"
  postFixupHooks+=("autoFixElfFiles addDriverRunpath")
fi
