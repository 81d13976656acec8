// runpatch check: runpath verification for CI and build hooks. Each rule has
// an id and a severity and can be turned off; findings come out in file order.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/l4t_versions.hpp"
#include "runpatch/resolve.hpp"

namespace runpatch {

enum class Severity { Info = 0, Warning = 1, Error = 2 };
std::string severity_name(Severity s);
std::optional<Severity> parse_severity(const std::string& name);

struct RuleInfo {
  const char* id;
  Severity severity;
  const char* summary;
};
// Every rule check knows, in report order.
const std::vector<RuleInfo>& check_rules();
// The severity a rule reports with (error for an unknown id).
Severity rule_severity(std::string_view id);

struct Finding {
  std::string rule;
  Severity severity = Severity::Error;
  std::string file;
  std::string message;
};

struct CheckOptions {
  SearchEnvironment env;                       // how dependencies resolve
  std::vector<std::string> forbidden_prefixes; // e.g. the build dir; $TMPDIR is added by the CLI
  std::vector<std::string> driver_dirs = {"/run/opengl-driver/lib"};
  std::optional<std::string> interpreter;      // wrong-interpreter: executables must use this one
  bool require_runpath = false;                // rpath-not-runpath becomes an error
  const JetpackRelease* jetpack = nullptr;     // jetpack-cuda-range: the target's row (find_jetpack)
  std::set<std::string> disabled;              // rule ids turned off
  unsigned threads = 0;
  // Called from worker threads as files finish (done, total); may be null.
  std::function<void(size_t, size_t)> progress;
};

struct CheckReport {
  std::vector<std::string> files;   // every dynamically linked ELF file checked, sorted
  std::vector<Finding> findings;    // grouped by file, in file order
  std::vector<Error> problems;      // unreadable inputs
  std::map<std::string, LoaderModel> loaders;  // by file: whose rules resolved it
  bool any_at_least(Severity s) const;
};

CheckReport check_paths(const std::vector<std::filesystem::path>& paths, const CheckOptions& options);

// The findings about a resolved tree as a whole (cuda-version-mix,
// ld-library-path-shadowing, runtime-stub of what it loads), for `tree` and
// `why` to show under the tree they describe.
std::vector<Finding> tree_findings(const std::filesystem::path& file, const DependencyTree& tree,
                                   const SearchEnvironment& env);

}  // namespace runpatch
