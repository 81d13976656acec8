// Planning the fixed-size edits of runpatch/header_edit.hpp: every write
// replaces bytes of the same length, so the plan is a list of Commit writes
// and the file keeps its size and layout.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "editing/planned_write.hpp"
#include "runpatch/expected.hpp"
#include "runpatch/header_edit.hpp"

namespace runpatch {

// The writes that make the image at bytes say what request asks; strategy
// Unchanged (no writes) when it already does.
Expected<EditPlan> plan_header_edits(std::span<const uint8_t> bytes, const std::string& path,
                                     const HeaderEditRequest& request);

// The same facts read_header_facts gives, for an image in memory.
Expected<HeaderFacts> header_facts(std::span<const uint8_t> bytes, const std::string& path);

}  // namespace runpatch
