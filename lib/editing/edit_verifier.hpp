// Checks a planned edit before any byte of the file is written: the planned
// result, read back through the same reader, says what was asked and nothing
// else changed. A mismatch is an error naming the file and the field; the
// file stays untouched. It runs for every edit, in every mode.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "editing/planned_write.hpp"
#include "runpatch/editing/edit.hpp"

namespace runpatch {

// original: the file as it is now; before: what the reader found in it.
Status verify_edit_plan(std::span<const uint8_t> original, const std::string& path, const ElfInfo& before,
                        const EditRequest& request, const EditPlan& plan);

// What the file must say after request: computed from before and the request
// alone, independently of how the planner lays it out.
struct ExpectedFacts {
  std::optional<std::string> interpreter, soname, runpath, rpath;
  std::vector<std::string> needed;
  // Each version need's library (vn_file), given those before the edit.
  std::vector<std::string> version_need_files(std::vector<std::string> files) const;
  std::vector<std::pair<std::string, std::string>> replaced;  // old -> new, in request order
  // The header fields (HeaderEditRequest).
  uint8_t osabi = 0;
  uint64_t flags_1 = 0;
  bool debug_entry = false;                   // a DT_DEBUG entry must be there
  std::optional<bool> exec_stack;             // PT_GNU_STACK's PF_X, when asked
  std::vector<std::string> cleared_versions;  // symbols whose .gnu.version entry becomes global
};
Expected<ExpectedFacts> expected_facts(const ElfInfo& before, const EditRequest& request);

}  // namespace runpatch
