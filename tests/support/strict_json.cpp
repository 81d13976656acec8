#include "strict_json.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>

namespace runpatch::test {

nlohmann::json parse_json(std::string_view text) {
  std::vector<std::set<std::string>> keys;  // one set per object being read
  std::vector<std::string> duplicates;
  auto watch = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) keys.emplace_back();
    if (event == Event::object_end && !keys.empty()) keys.pop_back();
    if (event == Event::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
      duplicates.push_back(parsed.get<std::string>());
    return true;
  };
  nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), watch, false);
  for (const auto& key : duplicates) ADD_FAILURE() << "duplicate JSON key \"" << key << "\" in: " << text;
  return doc;
}

nlohmann::json parse_json(const std::vector<uint8_t>& bytes) {
  return parse_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

nlohmann::json parse_json(std::istream& in) {
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_json(std::string_view(text));
}

}  // namespace runpatch::test
