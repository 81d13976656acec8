// JSON text of a report, lossless for names that are bytes: ELF strings and
// paths need not be UTF-8, and two names differing in a byte that is not text
// must stay two names (and two keys) in the document.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace runpatch {

// Every string of the document (values and object keys) as lossless_text
// writes it, indented by two spaces.
std::string json_text(const nlohmann::json& document);

}  // namespace runpatch
