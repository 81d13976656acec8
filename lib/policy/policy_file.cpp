// JSON policy files (docs/policies.md).
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runpatch/policy.hpp"

namespace runpatch {

namespace {

Expected<std::vector<std::string>> string_list(const nlohmann::json& value, const std::string& key,
                                               const std::string& origin) {
  if (value.is_string()) return std::vector<std::string>{value.get<std::string>()};
  if (!value.is_array()) return make_error(origin, fmt::format("\"{}\" must be a string or a list of strings", key));
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) return make_error(origin, fmt::format("\"{}\" must hold strings only", key));
    out.push_back(item.get<std::string>());
  }
  return out;
}

Expected<bool> boolean(const nlohmann::json& value, const std::string& key, const std::string& origin) {
  if (!value.is_boolean()) return make_error(origin, fmt::format("\"{}\" must be true or false", key));
  return value.get<bool>();
}

}  // namespace

Expected<RunpathPolicy> RunpathPolicy::from_json_text(const std::string& text, const std::string& origin) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded()) return make_error(origin, "not valid JSON");
  if (!doc.is_object()) return make_error(origin, "a policy is a JSON object");
  RunpathPolicy policy;
  for (const auto& [key, value] : doc.items()) {
    if (key == "compat") {
      RUNPATCH_TRY(policy.compat_dirs, string_list(value, key, origin));
    } else if (key == "driver") {
      if (value.is_boolean()) {
        policy.driver = value.get<bool>();
      } else {
        RUNPATCH_TRY(policy.driver_dirs, string_list(value, key, origin));
        policy.driver = true;
      }
    } else if (key == "append") {
      RUNPATCH_TRY(policy.append, string_list(value, key, origin));
    } else if (key == "forbid") {
      RUNPATCH_TRY(policy.forbidden_prefixes, string_list(value, key, origin));
    } else if (key == "keep_existing") {
      RUNPATCH_TRY(policy.keep_existing, boolean(value, key, origin));
    } else if (key == "drop_stubs") {
      RUNPATCH_TRY(policy.drop_stubs, boolean(value, key, origin));
    } else if (key == "keep_origin") {
      RUNPATCH_TRY(policy.keep_origin, boolean(value, key, origin));
    } else if (key == "force_rpath") {
      RUNPATCH_TRY(policy.force_rpath, boolean(value, key, origin));
    } else {
      return make_error(origin, fmt::format("unknown policy key \"{}\"", key));
    }
  }
  return policy;
}

Expected<RunpathPolicy> RunpathPolicy::from_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return make_error(path.string(), "cannot read the policy file");
  std::stringstream text;
  text << in.rdbuf();
  return from_json_text(text.str(), path.string());
}

}  // namespace runpatch
