// Which runpath entries matter for each DT_NEEDED, as the note records them.
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/resolving/resolution_cache.hpp"
#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

namespace {

// An entry whose meaning is only known at run time: the loader must search it itself.
bool decided_at_run_time(const std::string& entry, const std::filesystem::path& root) {
  if (entry.empty() || entry[0] != '/' || entry.find('$') != std::string::npos) return true;
  std::string host = under_root(root, entry).string();
  struct stat st {};
  // Missing, not a directory or not searchable now: it may be all of those at run time (/run/opengl-driver/lib).
  if (::stat(host.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::access(host.c_str(), X_OK) != 0) return true;
  // The loader picks among glibc-hwcaps/ subdirectories by the CPU it runs on.
  return ::stat((host + "/glibc-hwcaps").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool loadable_candidate(const std::filesystem::path& host, const ElfIdentity& identity) {
  struct stat st {};
  if (::stat(host.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  auto info = read_elf_info(host);
  return info && loadable_together(identity, info->identity);
}

}  // namespace

ResolutionCacheInputs resolution_cache_inputs(const ElfInfo& info) {
  return {info.needed, effective_runpath(info), info.identity};
}

ResolutionCache build_resolution_cache(const ResolutionCacheInputs& inputs, const std::filesystem::path& root) {
  std::map<std::string, std::vector<std::string>> locations;  // byte order, as the loader's lookup expects
  for (const auto& name : inputs.needed)
    if (name.find('/') == std::string::npos && !name.empty()) locations[name];
  for (const auto& entry : split_runpath(inputs.runpath)) {
    if (decided_at_run_time(entry, root)) {
      for (auto& [name, list] : locations) list.push_back("?" + entry);
      continue;
    }
    // The loader drops a trailing slash before appending the name.
    std::string dir = entry.size() > 1 && entry.back() == '/' ? entry.substr(0, entry.size() - 1) : entry;
    for (auto& [name, list] : locations) {
      std::string path = (dir == "/" ? "" : dir) + "/" + name;
      if (loadable_candidate(under_root(root, path), inputs.identity)) list.push_back("=" + path);
    }
  }
  ResolutionCache cache;
  for (auto& [name, list] : locations)
    if (!list.empty()) cache.push_back({name, std::move(list)});
  return cache;
}

std::string resolution_cache_unavailable_reason(const ResolutionCacheInputs& inputs, const ResolutionCache& cache) {
  if (inputs.needed.empty()) return "no DT_NEEDED";
  if (inputs.runpath.empty()) return "no runpath";
  if (cache.empty()) return "no DT_NEEDED is found in or searched through the runpath";
  return "";
}

}  // namespace runpatch
