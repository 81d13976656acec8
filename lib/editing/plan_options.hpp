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
  // The result is a copy written whole: tables the loader finds through the
  // dynamic section may move within their segment to let the string table
  // grow in place (grown_string_table.cpp); in the file itself a crash there
  // would leave them half moved.
  bool tables_may_move = false;
};

// The ways an edit reaches the disk (docs/editing.md §4), each planned with its own options.
enum class EditWay {
  OneWrite,  // fits the existing tables: one write into the file commits it
  IntoFile,  // an appended segment written into the file in phases (--in-place, a build, hard links)
  Copy,      // an edited copy renamed over the file
  Output,    // an edited copy at --output, the source untouched
};

// What the editor found about the file that the options of a way depend on.
struct WayContext {
  bool mapped_elsewhere = true;      // another process may have it open or mapped
  bool must_write_in_place = false;  // hard links, an owner a copy cannot keep: nothing but the file itself
};

// The planning options of a way: written where another process may read the
// old tables, they stay; a copy or an output may write over an earlier edit's segment.
PlanOptions options_for(EditWay way, const EditOptions& options, const WayContext& context);

}  // namespace runpatch
