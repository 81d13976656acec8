// Why a library is (not) found, and what would fix it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

struct Suggestion {
  std::string candidate;  // a file named like the library in a --search directory
  std::string verdict;    // "usable", "stub", "wrong class or machine: ..."
  std::string advice;     // one line a packager can act on
};

// Files named `library` under search_dirs, judged against what requester needs.
std::vector<Suggestion> suggest_fixes(const DependencyTree& tree, const DependencyEdge& edge,
                                      const std::vector<std::filesystem::path>& search_dirs);

}  // namespace runpatch
