// The result of planning an edit: byte writes in three phases, so that the
// file is valid (old or new) between any two writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runpatch/edit.hpp"

namespace runpatch {

enum class WritePhase {
  Prepare,  // bytes nothing references yet: past the old end, unused string bytes
  Commit,   // the one write that switches the file from old to new
  Cleanup,  // zeroing bytes the new file no longer references
};

struct PlannedWrite {
  WritePhase phase;
  uint64_t offset;
  std::vector<uint8_t> bytes;
  std::string what;
};

struct EditPlan {
  EditStrategy strategy = EditStrategy::Unchanged;
  std::string layout_note;
  std::vector<PlannedWrite> writes;
  uint64_t new_size = 0;
  std::vector<std::string> warnings;
};

}  // namespace runpatch
