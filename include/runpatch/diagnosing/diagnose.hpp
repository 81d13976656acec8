// Why a library is (not) found, and what would fix it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runpatch/checking/check.hpp"
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

// `runpatch why LIB FILE`: each object of FILE's tree that needs LIB, how
// the loader searched for it and what would fix a miss; the findings about
// the tree that concern LIB (a version mix, shadowing, a stub loaded).
struct WhyNeed {
  std::string needed_by;
  Resolution resolution;
  std::vector<Suggestion> suggestions;  // for a miss
};
struct WhyAnswer {
  std::string library;
  LoaderModel loader;
  std::vector<WhyNeed> needs;
  std::vector<Finding> related;
  bool needed() const { return !needs.empty(); }
  bool all_found() const;
};
Expected<WhyAnswer> explain_why(const std::filesystem::path& file, const std::string& library,
                                const std::vector<std::filesystem::path>& search_dirs, const SearchEnvironment& env);

}  // namespace runpatch
