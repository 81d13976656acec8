// CheckOptions from what a caller names: rule ids (--disable), a JetPack
// release (--jetpack), and the build directories the environment says.
#include <fmt/format.h>

#include <cstdlib>

#include "runpatch/policy/check.hpp"

namespace runpatch {

Status disable_check_rules(CheckOptions& options, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    auto rule = find_check_rule(id);
    if (!rule) return make_error("", fmt::format("unknown rule '{}'", id));
    options.disabled.insert(*rule);
  }
  return {};
}

Status target_jetpack(CheckOptions& options, std::string_view release) {
  options.jetpack = find_jetpack(release);
  if (options.jetpack) return {};
  std::string known;
  for (const auto& r : jetpack_releases()) known += (known.empty() ? "" : ", ") + std::string(r.jetpack);
  return make_error("", fmt::format("--jetpack {}: not a JetPack release runpatch knows ({})", release, known));
}

std::vector<std::string> build_directory_prefixes() {
  std::vector<std::string> prefixes;
  for (const char* variable : {"TMPDIR", "NIX_BUILD_TOP"}) {
    const char* value = std::getenv(variable);
    if (!value || !*value || std::string_view(value) == "/tmp") continue;
    prefixes.push_back(value);
    if (!prefixes.back().ends_with('/')) prefixes.back() += '/';
  }
  return prefixes;
}

}  // namespace runpatch
