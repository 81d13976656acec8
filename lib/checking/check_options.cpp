// CheckOptions from what a caller names: rule ids (--disable), a JetPack
// release (--jetpack), and the build directories the environment says.
#include <fmt/format.h>

#include <cstdlib>

#include "runpatch/checking/check.hpp"

namespace runpatch {

Status disable_check_rules(CheckOptions& options, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    auto rule = find_check_rule(id);
    if (!rule) return make_error(ErrorCode::InvalidInput, "", fmt::format("unknown rule '{}'", id));
    options.disabled.insert(*rule);
  }
  return {};
}

Expected<std::string> target_jetpack(CheckOptions& options, std::string_view release) {
  auto target = find_jetpack_release(release);
  if (!target) {
    std::string known;
    for (const auto& r : jetpack_releases())
      known += fmt::format("{}JetPack {} (L4T R{})", known.empty() ? "" : ", ", r.jetpack, l4t_version_text(r.l4t));
    return make_error(ErrorCode::InvalidInput, "",
                      fmt::format("--jetpack {}: not a release of a JetPack line runpatch knows ({})", release, known));
  }
  options.jetpack = target->release;
  if (target->exact) return std::string();
  return fmt::format("--jetpack {}: judged by JetPack {} (L4T R{}), the newest release of its line in runpatch's table",
                     release, target->release->jetpack, l4t_version_text(target->release->l4t));
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
