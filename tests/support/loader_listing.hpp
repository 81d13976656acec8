// What a real loader's `--list` (ldd) prints, and the same view of a resolved
// tree, so the two can be compared name by name.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "process.hpp"
#include "runpatch/resolving/resolve.hpp"
#include "synthetic_elf.hpp"

namespace runpatch::test {

struct LoaderListing {
  std::map<std::string, std::string> found;  // name (or the path, for a name with a slash) -> path
  std::set<std::string> missing;
};

// glibc's `ld.so --list` or musl's ldd output; lines naming `loader` itself
// are left out. A library the loader could not find is in `missing` (glibc
// then lists nothing else: compare `missing` alone).
LoaderListing parse_loader_listing(const std::string& output, const std::string& loader);

// The DT_NEEDED edges of a tree as --list shows them (not dlopen, not the loader, not re-uses).
LoaderListing listing_of(const DependencyTree& tree, const std::string& loader);

// "" when equal; otherwise each difference, on one line starting with file.
std::string listing_differences(const std::string& file, const LoaderListing& mine, const LoaderListing& theirs);

// A glibc loader that runs files of one ELF class and byte order here: the
// host's for ELF64LE (x86-64); qemu-user and a cross sysroot's for ELF64BE
// (ppc64), ELF32LE (i386) and ELF32BE (ppc); nullopt where it is missing.
// It loads files of flavour_machine(flavour).
struct FlavourLoader {
  std::vector<std::string> emulator;  // qemu-user and -L SYSROOT, or nothing
  std::string loader;                 // the loader's path
};
std::optional<FlavourLoader> loader_for(const ElfFlavour& flavour);

// Runs the loader with `environment` (NAME=value, for the loaded program) and `args`.
CommandResult run_loader(const FlavourLoader& loader, const std::vector<std::string>& environment,
                         const std::vector<std::string>& args);

// The directories the loader searched for `file`'s libraries by its
// DT_RUNPATH, as LD_DEBUG=libs shows them under `ld.so --list` (glibc adds
// hwcaps, tls and platform subdirectories to each entry); nullopt when it
// searched no DT_RUNPATH of the file (or did not load it).
std::optional<std::vector<std::string>> loader_runpath_search(const FlavourLoader& loader,
                                                              const std::filesystem::path& file);

}  // namespace runpatch::test
