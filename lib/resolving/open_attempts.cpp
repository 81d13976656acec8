// `runpatch tree --stats`: the loader's open attempts for the direct
// DT_NEEDED of a file, searched without and with a resolution-cache note.
#include <sys/stat.h>

#include <set>

#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/resolving/resolution_cache.hpp"

namespace runpatch {

namespace {

// Opens the loader makes for these resolutions, one file after another:
// every path tried, except in a directory already found missing.
std::vector<size_t> count_opens(const std::vector<Resolution>& resolutions, const std::filesystem::path& root) {
  std::set<std::string> missing_dirs;
  std::vector<size_t> counts;
  for (const auto& r : resolutions) {
    size_t opens = 0;
    for (const auto& attempt : r.attempts) {
      if (attempt.outcome == AttemptOutcome::NotInCache) continue;  // a lookup, not an open
      std::string dir = dirname_of(attempt.path);
      if (missing_dirs.count(dir)) continue;
      ++opens;
      struct stat st {};
      if (attempt.outcome == AttemptOutcome::NoSuchFile && ::stat(under_root(root, dir).c_str(), &st) != 0)
        missing_dirs.insert(dir);
    }
    counts.push_back(opens);
  }
  return counts;
}

std::vector<Resolution> resolve_direct(const DependencyTree& tree, SearchEnvironment env, bool with_note) {
  env.record_attempts = true;
  env.every_candidate = false;
  env.use_resolution_cache = with_note;
  ResolutionSession session(env);
  std::vector<Resolution> out;
  for (const auto& name : tree.objects[0].info->needed) out.push_back(session.resolve_name(tree, 0, name));
  return out;
}

}  // namespace

Expected<OpenAttemptStats> count_open_attempts(const std::filesystem::path& file, const SearchEnvironment& env) {
  SearchEnvironment plain = env;
  plain.record_attempts = false;
  RUNPATCH_TRY(DependencyTree tree, resolve_tree(file, plain));
  tree.objects.resize(1);  // each search on its own, as for the first DT_NEEDED
  tree.edges.clear();
  OpenAttemptStats stats;
  const ElfInfo& info = *tree.objects[0].info;
  stats.note_in_file = info.resolution_cache.has_value();
  if (!stats.note_in_file) {
    ResolutionCacheInputs inputs = resolution_cache_inputs(info);
    ResolutionCache cache = build_resolution_cache(inputs, env.root);
    stats.note_possible = resolution_cache_unavailable_reason(inputs, cache).empty();
    auto with_note = std::make_shared<ElfInfo>(info);
    with_note->resolution_cache = ResolutionCacheNote{std::move(cache), 0, 0, ""};
    tree.objects[0].info = std::move(with_note);
  }
  auto without = count_opens(resolve_direct(tree, env, false), env.root);
  auto with = count_opens(resolve_direct(tree, env, true), env.root);
  for (size_t i = 0; i < without.size(); ++i) {
    stats.needed.push_back({tree.objects[0].info->needed[i], without[i], with[i]});
    stats.without_note += without[i];
    stats.with_note += with[i];
  }
  return stats;
}

}  // namespace runpatch
