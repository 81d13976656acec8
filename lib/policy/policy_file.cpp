// JSON policy files (docs/policies.md).
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runpatch/policy/policy.hpp"
#include "runpatch/reading/loader_paths.hpp"

namespace runpatch {

namespace {

// What an entry of each list key must look like.
enum class EntryKind {
  RunpathEntry,  // a directory the loader searches: absolute, or relative to the file through $ORIGIN
  Prefix,        // a forbidden prefix, compared with absolute entries
};

std::string json_kind(const nlohmann::json& value) {
  if (value.is_string()) return fmt::format("the string \"{}\"", value.get<std::string>());
  std::string shown = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  return fmt::format("{} {}", value.type_name(), shown);
}

std::string expectation(EntryKind kind) {
  return kind == EntryKind::Prefix ? "an absolute directory prefix"
                                   : "an absolute directory or one starting with $ORIGIN";
}

// An empty or relative runpath entry would be searched relative to the
// process's working directory, whatever that is at run time.
bool acceptable(const std::string& entry, EntryKind kind) {
  bool absolute = entry.starts_with("/");
  bool origin = starts_with_origin(entry);
  return absolute || (origin && kind == EntryKind::RunpathEntry);
}

Expected<std::vector<std::string>> entry_list(const nlohmann::json& value, const std::string& key,
                                              const std::string& origin, EntryKind kind) {
  std::string expected = expectation(kind);
  if (!value.is_string() && !value.is_array())
    return make_error(ErrorCode::InvalidInput, origin,
                      fmt::format("\"{}\": expected {} or a list of them, got {}", key, expected, json_kind(value)));
  nlohmann::json items = value.is_string() ? nlohmann::json::array({value}) : value;
  std::vector<std::string> out;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string where = value.is_string() ? fmt::format("\"{}\"", key) : fmt::format("\"{}\"[{}]", key, i);
    if (!items[i].is_string())
      return make_error(ErrorCode::InvalidInput, origin,
                        fmt::format("{}: expected {}, got {}", where, expected, json_kind(items[i])));
    std::string entry = items[i].get<std::string>();
    if (!acceptable(entry, kind))
      return make_error(ErrorCode::InvalidInput, origin,
                        fmt::format("{}: expected {}, got {}", where, expected, json_kind(items[i])));
    out.push_back(std::move(entry));
  }
  return out;
}

Expected<bool> boolean(const nlohmann::json& value, const std::string& key, const std::string& origin) {
  if (!value.is_boolean())
    return make_error(ErrorCode::InvalidInput, origin,
                      fmt::format("\"{}\": expected true or false, got {}", key, json_kind(value)));
  return value.get<bool>();
}

// "driver": true, false, or the driver directories.
Expected<void> read_driver(const nlohmann::json& value, const std::string& origin, RunpathPolicy& policy) {
  if (value.is_boolean()) {
    policy.driver = value.get<bool>();
    return {};
  }
  if (!value.is_string() && !value.is_array())
    return make_error(
        ErrorCode::InvalidInput, origin,
        fmt::format("\"driver\": expected true, false or absolute directories, got {}", json_kind(value)));
  RUNPATCH_TRY(policy.driver_dirs, entry_list(value, "driver", origin, EntryKind::RunpathEntry));
  if (policy.driver_dirs.empty())
    return make_error(ErrorCode::InvalidInput, origin,
                      "\"driver\": expected at least one directory (or false), got an empty list");
  policy.driver = true;
  return {};
}

Expected<nlohmann::json> parse_json(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1 and points at the character that did not fit.
    size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    line_start = line_start == std::string::npos || at == 0 ? 0 : line_start + 1;
    size_t line = 1 + std::count(text.begin(), text.begin() + line_start, '\n');
    return make_error(ErrorCode::InvalidInput, origin,
                      fmt::format("not valid JSON at line {}, column {}", line, at - line_start + 1));
  } catch (const nlohmann::json::exception& e) {
    // Well-formed but unrepresentable, e.g. a number too large for a double.
    return make_error(ErrorCode::InvalidInput, origin, std::string("not usable JSON: ") + e.what());
  }
}

}  // namespace

Expected<RunpathPolicy> RunpathPolicy::from_json_text(const std::string& text, const std::string& origin) {
  nlohmann::json doc;
  RUNPATCH_TRY(doc, parse_json(text, origin));
  if (!doc.is_object())
    return make_error(ErrorCode::InvalidInput, origin, fmt::format("expected a JSON object, got {}", json_kind(doc)));
  RunpathPolicy policy;
  for (const auto& [key, value] : doc.items()) {
    if (key == "compat") {
      RUNPATCH_TRY(policy.compat_dirs, entry_list(value, key, origin, EntryKind::RunpathEntry));
    } else if (key == "driver") {
      if (auto read = read_driver(value, origin, policy); !read) return read.error();
    } else if (key == "append") {
      RUNPATCH_TRY(policy.append, entry_list(value, key, origin, EntryKind::RunpathEntry));
    } else if (key == "forbid") {
      RUNPATCH_TRY(policy.forbidden_prefixes, entry_list(value, key, origin, EntryKind::Prefix));
    } else if (key == "keep_existing") {
      RUNPATCH_TRY(policy.keep_existing, boolean(value, key, origin));
    } else if (key == "drop_stubs") {
      RUNPATCH_TRY(policy.drop_stubs, boolean(value, key, origin));
    } else if (key == "keep_origin") {
      RUNPATCH_TRY(policy.keep_origin, boolean(value, key, origin));
    } else if (key == "force_rpath") {
      RUNPATCH_TRY(policy.force_rpath, boolean(value, key, origin));
    } else {
      return make_error(ErrorCode::InvalidInput, origin, fmt::format("unknown policy key \"{}\"", key));
    }
  }
  return policy;
}

Expected<RunpathPolicy> RunpathPolicy::from_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::SystemCall, path.string(), "cannot read the policy file");
  std::stringstream text;
  text << in.rdbuf();
  return from_json_text(text.str(), path.string());
}

}  // namespace runpatch
