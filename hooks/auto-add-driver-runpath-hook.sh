# shellcheck shell=bash
# Drop-in for Nixpkgs' autoAddDriverRunpath: adds the driver directory to every
# dynamically linked ELF file of every output after fixup. Needs
# add-driver-runpath.sh and auto-fix-elf-files.sh sourced too (as in Nixpkgs,
# where they are propagated hooks).
echo "Sourcing auto-add-driver-runpath-hook"

if [ -z "${dontUseAutoAddDriverRunpath-}" ]; then
  echo "Using autoAddDriverRunpath"
  postFixupHooks+=("autoFixElfFiles addDriverRunpath")
fi
