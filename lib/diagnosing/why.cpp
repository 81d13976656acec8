#include <algorithm>

#include "runpatch/diagnosing/diagnose.hpp"

namespace runpatch {

bool WhyAnswer::all_found() const {
  return std::all_of(needs.begin(), needs.end(), [](const WhyNeed& n) { return n.resolution.path.has_value(); });
}

Expected<WhyAnswer> explain_why(const std::filesystem::path& file, const std::string& library,
                                const std::vector<std::filesystem::path>& search_dirs, const SearchEnvironment& env) {
  RUNPATCH_TRY(DependencyTree tree, resolve_tree(file, env));
  WhyAnswer answer{library, tree.loader, {}, {}};
  for (const auto& edge : tree.edges) {
    if (edge.resolution.name != library) continue;
    auto suggestions = edge.resolution.path ? std::vector<Suggestion>{} : suggest_fixes(tree, edge, search_dirs);
    answer.needs.push_back({tree.objects[edge.from].path, edge.resolution, std::move(suggestions)});
  }
  for (auto& f : tree_findings(file, tree, env))
    if (f.concerns(library)) answer.related.push_back(std::move(f));
  return answer;
}

}  // namespace runpatch
