#include "runpatch/policy/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "runpatch/cuda/cuda.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/reading/loader_paths.hpp"

namespace runpatch {

namespace {

// Entries that differ only in repeated or trailing slashes ("/run/opengl-driver/lib/")
// name the same directory: one key for both. ".." is left alone: through a
// symlink, "a/b/.." need not be "a".
std::string directory_key(const std::string& entry) {
  std::string key;
  for (char c : entry)
    if (c != '/' || key.empty() || key.back() != '/') key += c;
  while (key.size() > 1 && key.back() == '/') key.pop_back();
  return key;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  std::string key = directory_key(item);
  return std::any_of(list.begin(), list.end(), [&](const std::string& e) { return directory_key(e) == key; });
}

}  // namespace

namespace {

// A ':' can never be inside one runpath entry: "/a:/b" given as one entry is two.
// Without this, applying a policy twice would not give the same runpath.
std::vector<std::string> split_each(const std::vector<std::string>& entries) {
  std::vector<std::string> out;
  for (const auto& entry : entries)
    for (auto& part : split_runpath(entry)) out.push_back(std::move(part));
  return out;
}

RunpathPolicy with_split_entries(RunpathPolicy policy) {
  for (auto* list : {&policy.compat_dirs, &policy.driver_dirs, &policy.resolved_dirs, &policy.append})
    *list = split_each(*list);
  return policy;
}

bool under_forbidden_prefix(const RunpathPolicy& policy, const std::string& entry) {
  return std::any_of(
      policy.forbidden_prefixes.begin(), policy.forbidden_prefixes.end(),
      [&](const std::string& prefix) { return !prefix.empty() && entry.compare(0, prefix.size(), prefix) == 0; });
}

// A DT_NEEDED library that a forbidden entry the policy drops supplies and
// no entry it keeps does: the file would not load from its output. Nixpkgs'
// audit-tmpdir fails such a build; so must the hooks (dropping is right only
// for entries nothing needs).
std::optional<Error> needed_only_in_dropped(const RunpathPolicy& policy, const ElfInfo& info,
                                            const std::string& current, const std::string& next) {
  if (policy.forbidden_prefixes.empty()) return std::nullopt;
  const std::string origin = dirname_of(info.path);
  auto holds = [&](const std::string& entry, const std::string& name) {
    std::error_code ec;
    return !entry.empty() && std::filesystem::exists(std::filesystem::path(expand_origin(entry, origin)) / name, ec);
  };
  const std::vector<std::string> kept = split_runpath(next);
  for (const auto& name : info.needed) {
    if (name.find('/') != std::string::npos) continue;
    if (std::any_of(kept.begin(), kept.end(), [&](const std::string& k) { return holds(k, name); })) continue;
    for (const auto& entry : split_runpath(current))
      if (under_forbidden_prefix(policy, entry) && holds(entry, name))
        return make_error(ErrorCode::InvalidRequest, info.path,
                          fmt::format("needs {}, which only '{}' supplies, and that entry is under a forbidden prefix "
                                      "(--forbid): without it {} is not found; install the library into an output",
                                      name, entry, name));
  }
  return std::nullopt;
}

}  // namespace

std::string apply_policy(const RunpathPolicy& given, const std::string& current,
                         const std::set<std::string>& compat_entries) {
  const RunpathPolicy policy = with_split_entries(given);
  std::vector<std::string> existing = split_runpath(current);
  auto allowed = [&](const std::string& entry) {
    if (entry.empty()) return false;  // an empty entry means the current directory
    if (policy.drop_stubs && is_stubs_directory(entry)) return false;
    if (!policy.keep_origin && names_origin(entry)) return false;
    return !under_forbidden_prefix(policy, entry);
  };

  // Layers, each in its own order; entries already present are recognised by role.
  std::vector<std::string> compat = policy.compat_dirs, driver, rest;
  bool has_driver = policy.driver;
  // An entry the policy names explicitly goes back to that layer; only then
  // do heuristics (a cuda_compat-looking directory) classify. Otherwise an
  // appended entry that looks like compat would move on the second run.
  for (const auto& entry : existing) {
    if (contains(policy.compat_dirs, entry)) {
      compat.push_back(entry);
    } else if (contains(policy.driver_dirs, entry)) {
      has_driver = true;  // a driver layer added earlier keeps its place behind compat
    } else if (contains(policy.resolved_dirs, entry) || contains(policy.append, entry)) {
      continue;  // re-added by its own layer
    } else if (looks_like_compat_dir(entry) || compat_entries.count(entry)) {
      compat.push_back(entry);
    } else if (policy.keep_existing) {
      rest.push_back(entry);
    }
  }
  if (has_driver) driver = policy.driver_dirs;

  // A directory the file already names keeps the spelling it has there, so that
  // "/run/opengl-driver/lib/" is neither doubled nor rewritten.
  std::map<std::string, std::string> spelled;
  for (const auto& entry : existing) spelled.emplace(directory_key(entry), entry);
  std::vector<std::string> result;
  std::set<std::string> added;
  auto add = [&](const std::vector<std::string>& layer) {
    for (const auto& entry : layer) {
      std::string key = directory_key(entry);
      if (!allowed(entry) || !added.insert(key).second) continue;
      auto it = spelled.find(key);
      result.push_back(it != spelled.end() ? it->second : entry);
    }
  };
  add(compat);
  add(driver);
  add(policy.resolved_dirs);
  add(rest);
  add(policy.append);
  return join_runpath(result);
}

std::set<std::string> compat_entries_by_content(const RunpathPolicy& policy, const ElfInfo& info) {
  std::set<std::string> found;
  for (const auto& entry : split_runpath(effective_runpath(info))) {
    if (contains(policy.compat_dirs, entry) || contains(policy.driver_dirs, entry)) continue;
    if (is_compat_layer(entry, expand_origin(entry, dirname_of(info.path)), policy.driver_dirs)) found.insert(entry);
  }
  return found;
}

EditRequest policy_request(const RunpathPolicy& policy) {
  EditRequest request;
  request.force_rpath = policy.force_rpath;
  request.runpath = [policy](const ElfInfo& info) -> Expected<RunpathChange> {
    std::string current = effective_runpath(info);
    std::string next = apply_policy(policy, current, compat_entries_by_content(policy, info));
    if (auto broken = needed_only_in_dropped(policy, info, current, next)) return *broken;
    bool had_tag = info.runpath.has_value() || info.rpath.has_value();
    if (next.empty() && !had_tag) return RunpathChange::keep();  // nothing to add: do not create an empty tag
    if (next.empty()) return RunpathChange::remove();
    return RunpathChange::set(next);
  };
  return request;
}

Expected<std::optional<std::string>> validate_compat_dir(const std::string& dir) {
  auto refuse = [&](std::string why) { return make_error(ErrorCode::InvalidInput, "", std::move(why)); };
  auto at = dir.find('@');
  if (dir.empty() || (at != std::string::npos && dir.find('@', at + 1) != std::string::npos))
    return refuse(
        fmt::format("--libcuda '{}' is empty or holds an unsubstituted @placeholder@ (set cudaCompatLibcudaDir)", dir));
  if (dir[0] != '/' && !starts_with_origin(dir))
    return refuse(
        fmt::format("--libcuda '{}' is relative: the loader would resolve it against the current directory", dir));
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir, ec))
    return refuse(fmt::format("--libcuda '{}' is a file; give the directory that holds libcuda.so.1 ('{}')", dir,
                              std::filesystem::path(dir).parent_path().string()));
  if (!dir.starts_with("$") && !std::filesystem::is_directory(dir, ec))
    return std::optional<std::string>(fmt::format("--libcuda '{}' does not exist here (written anyway)", dir));
  return std::optional<std::string>();
}

}  // namespace runpatch
