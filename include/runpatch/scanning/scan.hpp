// Walking trees for ELF files, and reading many files on all cores.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

struct TreeListing {
  std::vector<std::filesystem::path> elf_files;  // sorted; each inode once
  std::vector<Error> problems;                   // unreadable roots or directories
  size_t non_elf_files = 0;
  size_t symlinks_skipped = 0;  // links met inside a tree and not followed
};

// How a walk treats symlinks met inside a tree. Roots are always followed: a
// symlink named on the command line means its target, as patchelf takes it.
enum class TreeSymlinks {
  // As Nixpkgs' hooks walk (`find -type f`): symlinked directories are not
  // entered and symlinked files are not listed, so nothing outside the tree
  // (another store path, /usr/lib) is ever edited through a link. For every
  // command that edits or judges a tree.
  NotFollowed,
  // Links are followed, each directory and file visited once, a file reachable
  // both directly and through a link listed under its direct path. Only for
  // reading, such as looking for a library in search directories.
  Followed,
};

// Every ELF file under roots (files or directories), each inode once, in a
// deterministic (sorted) order.
TreeListing list_elf_files(const std::vector<std::filesystem::path>& roots,
                           TreeSymlinks symlinks = TreeSymlinks::NotFollowed);

// Runs fn(i) for i in [0, count) on up to `threads` threads (0: one per core).
void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& fn);

// read_elf_info on every path, on all cores; results in the order of paths.
std::vector<Expected<ElfInfo>> read_elf_infos(const std::vector<std::filesystem::path>& paths, unsigned threads = 0);

}  // namespace runpatch
