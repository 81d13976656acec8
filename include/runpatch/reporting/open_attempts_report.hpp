// `tree --stats`: what the resolution-cache note saves in open attempts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runpatch/resolving/resolution_cache.hpp"

namespace runpatch {

// `tree --stats`: open attempts per direct DT_NEEDED, without and with the resolution cache.
std::string format_open_attempts(const OpenAttemptStats& stats);
nlohmann::json open_attempts_json(const OpenAttemptStats& stats);

}  // namespace runpatch
