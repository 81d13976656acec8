// What one planning pass is asked: the caller's options and what the editor
// chose for this pass (editor.cpp, choose_edit). Callers of the public API
// cannot set the latter: they are how the editor tries its layouts in turn.
#pragma once

#include "runpatch/editing/edit_options.hpp"

namespace runpatch {

struct PlanOptions : EditOptions {
  PlanOptions() = default;
  explicit PlanOptions(const EditOptions& options) : EditOptions(options) {}
  // Only a layout that fits the existing tables and one write commits; an
  // appended segment is an error.
  bool commit_in_elf_header = false;
  // The result is written as a copy (or into a build's outputs), so the
  // segment an earlier edit appended at the end of the file may be written over.
  bool reclaim_earlier_segment = false;
  // Written into a file another process may have mapped: the strings it may
  // still read stay where they are and as they are (new strings go only into
  // bytes nothing references; replaced ones are not zeroed).
  bool old_strings_stay = false;
};

}  // namespace runpatch
