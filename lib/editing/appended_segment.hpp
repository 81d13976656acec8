// Lays an edit out in a segment appended to the file, when it does not fit
// into the existing tables: the pipeline of appended_layout.hpp, from the
// segments of earlier edits to the writes (docs/editing.md, section 3).
#pragma once

#include "editing/plan_inputs.hpp"

namespace runpatch {

// What the appended segment carries. DynamicTables: a read-write segment
// takes the dynamic strings and section (and whatever has to move with
// them); a resolution-cache note then gets a read-only segment of its own
// after it. InterpreterOrNote: one read-only segment takes the note or the
// interpreter (and the program headers or notes that make room for them).
enum class SegmentCarries { DynamicTables, InterpreterOrNote };

template <class E>
Expected<EditPlan> plan_appended_segment(const PlanInputs<E>& in, SegmentCarries carries);

#define RUNPATCH_EXTERN_PLAN_APPENDED(E) \
  extern template Expected<EditPlan> plan_appended_segment(const PlanInputs<E>&, SegmentCarries);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_EXTERN_PLAN_APPENDED)
#undef RUNPATCH_EXTERN_PLAN_APPENDED

}  // namespace runpatch
