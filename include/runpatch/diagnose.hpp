// Why a library is (not) found, and what would fix it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runpatch/resolve.hpp"

namespace runpatch {

struct Suggestion {
  std::string candidate;  // a file named like the library in a --search directory
  std::string verdict;    // "usable", "stub", "wrong class or machine: ..."
  std::string advice;     // one line a packager can act on
};

// Files named `library` under search_dirs, judged against what requester needs.
std::vector<Suggestion> suggest_fixes(const DependencyTree& tree, const DependencyEdge& edge,
                                      const std::vector<std::filesystem::path>& search_dirs);

// True for the CUDA toolkit's link-time stubs (lib/stubs/libcuda.so and friends).
bool is_stub_library(const std::string& path);
// A libcuda.so* whose code is a few kilobytes: the toolkit's stub, wherever it
// lies (the real driver library has tens of megabytes of code).
bool is_stub_libcuda(const ElfInfo& info);
// True for a directory of such stubs (".../stubs", with or without a trailing slash).
bool is_stubs_directory(const std::string& dir);

}  // namespace runpatch
