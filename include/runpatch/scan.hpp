// Walking trees for ELF files, and reading many files on all cores.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "runpatch/elf_info.hpp"
#include "runpatch/expected.hpp"

namespace runpatch {

struct TreeListing {
  std::vector<std::filesystem::path> elf_files;  // sorted; each inode once
  std::vector<Error> problems;                   // unreadable roots or directories
  size_t non_elf_files = 0;
};

// Every ELF file under roots (files or directories). Symlinks are followed but
// no file or directory is visited twice; a file reachable both directly and
// through a symlink is listed under its direct path. Order is deterministic.
TreeListing list_elf_files(const std::vector<std::filesystem::path>& roots);

// Runs fn(i) for i in [0, count) on up to `threads` threads (0: one per core).
void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& fn);

// read_elf_info on every path, on all cores; results in the order of paths.
std::vector<Expected<ElfInfo>> read_elf_infos(const std::vector<std::filesystem::path>& paths,
                                              unsigned threads = 0);

}  // namespace runpatch
