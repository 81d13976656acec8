#include "editing/rpath_conversion.hpp"

#include <fmt/format.h>

#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

bool converts_rpath(const ElfInfo& before, const EditRequest& request) {
  if (!before.rpath || before.runpath || !request.runpath || request.force_rpath) return false;
  // Removing the runpath, or keeping it, converts nothing.
  auto change = request.runpath(before);
  return change && change->kind == RunpathChange::Kind::Set;
}

std::vector<EditWarning> inherited_rpath_warnings(const std::filesystem::path& file) {
  std::vector<EditWarning> warnings;
  SearchEnvironment env = SearchEnvironment::host(false);
  env.record_attempts = false;
  auto tree = resolve_tree(file, env);
  if (!tree || tree->objects.empty()) return warnings;
  const std::string& self = tree->objects[0].path;
  for (const auto& e : tree->edges) {
    const Resolution& r = e.resolution;
    if (e.from == 0 || r.via != FoundVia::Rpath || r.via_object != self || !r.path) continue;
    warnings.push_back(
        {EditWarningKind::RpathBecomesRunpath,
         fmt::format(
             "DT_RPATH becomes DT_RUNPATH, which the loader does not search for other objects' dependencies: {} "
             "(needed by {}) is found at {} only through this file's DT_RPATH today and may not be found after the "
             "edit; keep DT_RPATH with --force-rpath",
             r.name, tree->objects[e.from].path, *r.path)});
  }
  return warnings;
}

}  // namespace runpatch
