#include "runpatch/reporting/json_text.hpp"

#include "runpatch/reporting/utf8.hpp"

namespace runpatch {

namespace {

nlohmann::json with_lossless_strings(const nlohmann::json& value) {
  if (value.is_string()) return lossless_text(value.get_ref<const std::string&>());
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : value) out.push_back(with_lossless_strings(item));
    return out;
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, item] : value.items()) out[lossless_text(key)] = with_lossless_strings(item);
    return out;
  }
  return value;
}

}  // namespace

std::string json_text(const nlohmann::json& document) {
  // Strict: after lossless_text every string is UTF-8; a stray byte would be a bug here.
  return with_lossless_strings(document).dump(2, ' ', false, nlohmann::json::error_handler_t::strict);
}

}  // namespace runpatch
