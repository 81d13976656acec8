#include "runpatch/reading/loader_paths.hpp"

#include <algorithm>

namespace runpatch {

bool has_empty_runpath_entry(const std::string& value) {
  auto entries = split_runpath(value);
  return std::any_of(entries.begin(), entries.end(), [](const auto& e) { return e.empty(); });
}

std::vector<std::string> split_runpath(const std::string& runpath) {
  std::vector<std::string> entries;
  if (runpath.empty()) return entries;
  size_t start = 0;
  for (;;) {
    size_t colon = runpath.find(':', start);
    entries.push_back(runpath.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return entries;
}

std::string join_runpath(const std::vector<std::string>& entries) {
  std::string out;
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? ":" : "") + entries[i];
  return out;
}

std::string effective_runpath(const ElfInfo& info) {
  if (info.runpath) return *info.runpath;
  return info.rpath.value_or("");
}

}  // namespace runpatch
