#include "runpatch/reading/loader_paths.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace runpatch {

bool has_empty_runpath_entry(const std::string& value) {
  auto entries = split_runpath(value);
  return std::any_of(entries.begin(), entries.end(), [](const auto& e) { return e.empty(); });
}

std::vector<std::string> split_list(std::string_view list, std::string_view separators) {
  std::vector<std::string> entries;
  for (size_t start = 0;;) {
    size_t sep = list.find_first_of(separators, start);
    entries.emplace_back(list.substr(start, sep == std::string_view::npos ? std::string_view::npos : sep - start));
    if (sep == std::string_view::npos) return entries;
    start = sep + 1;
  }
}

std::vector<std::string> split_runpath(const std::string& runpath) {
  if (runpath.empty()) return {};
  return split_list(runpath, ":");
}

std::string join_runpath(const std::vector<std::string>& entries) {
  std::string out;
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? ":" : "") + entries[i];
  return out;
}

namespace {
// The length of token `name` at entry[dollar] ("$NAME" ending at a non-word
// character, or "${NAME}"), 0 if it is not there.
size_t token_length(const std::string& entry, size_t dollar, std::string_view name) {
  size_t after = dollar + 1 + name.size();  // may lie past the end: "$O" is shorter than "ORIGIN"
  if (after <= entry.size() && entry.compare(dollar + 1, name.size(), name) == 0 &&
      (after == entry.size() || (!std::isalnum(static_cast<unsigned char>(entry[after])) && entry[after] != '_')))
    return name.size() + 1;
  if (entry.compare(dollar + 1, name.size() + 2, "{" + std::string(name) + "}") == 0) return name.size() + 3;
  return 0;
}
}  // namespace

bool names_origin(const std::string& entry) {
  for (size_t at = entry.find('$'); at != std::string::npos; at = entry.find('$', at + 1))
    if (token_length(entry, at, "ORIGIN")) return true;
  return false;
}

bool starts_with_origin(const std::string& entry) { return !entry.empty() && token_length(entry, 0, "ORIGIN") > 0; }

bool names_loader_tokens(const std::string& entry) {
  for (size_t at = entry.find('$'); at != std::string::npos; at = entry.find('$', at + 1))
    if (token_length(entry, at, "LIB") || token_length(entry, at, "PLATFORM")) return true;
  return false;
}

std::string expand_dynamic_tokens(const std::string& entry, const DynamicTokens& values) {
  std::string out;
  for (size_t i = 0; i < entry.size();) {
    size_t n = 0;
    if (entry[i] != '$') {
      out += entry[i++];
    } else if ((n = token_length(entry, i, "ORIGIN"))) {
      out += values.origin;
      i += n;
    } else if ((n = token_length(entry, i, "LIB"))) {
      out += values.lib;
      i += n;
    } else if ((n = token_length(entry, i, "PLATFORM"))) {
      out += values.platform;
      i += n;
    } else {
      out += entry[i++];
    }
  }
  return out;
}

std::string effective_runpath(const ElfInfo& info) {
  if (info.runpath) return *info.runpath;
  return info.rpath.value_or("");
}

}  // namespace runpatch
