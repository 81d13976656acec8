// The JSON reports the tools print, parsed as a strict consumer would: a
// duplicate key in any object is a test failure (a lossy writer merges two
// names into one key), not a silent last-one-wins.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <istream>
#include <string_view>
#include <vector>

namespace runpatch::test {

// The document (discarded when the text is not JSON); each duplicate key adds
// a test failure naming it.
nlohmann::json parse_json(std::string_view text);
nlohmann::json parse_json(const std::vector<uint8_t>& bytes);
nlohmann::json parse_json(std::istream& in);

}  // namespace runpatch::test
