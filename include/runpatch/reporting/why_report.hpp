// Renderings of `runpatch why`'s answer: text for people, JSON for tools.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runpatch/diagnosing/diagnose.hpp"

namespace runpatch {

// file: the path as the user named it.
std::string why_text(const std::string& file, const WhyAnswer& answer);
nlohmann::json why_json(const WhyAnswer& answer);

}  // namespace runpatch
