// A program's dynamic string table grown where it lies: the tables after it
// in its segment move up, into the slack of the segment's last page, and the
// table takes the bytes they leave. No byte is added to the file, where
// patchelf shifts the file by pages before the first segment and an appended
// segment would carry a copy of the whole table (python3.11's 39.6 KB).
#pragma once

#include <optional>

#include "editing/plan_inputs.hpp"

namespace runpatch {

// nullopt: not this file (not ET_EXEC, no section headers to tell what
// follows the table, something there that only its address finds, no slack
// in the page) or not this way of writing (PlanOptions::tables_may_move).
template <class E>
std::optional<EditPlan> plan_grown_string_table(const PlanInputs<E>& in);

#define RUNPATCH_EXTERN_GROWN_TABLE(E) \
  extern template std::optional<EditPlan> plan_grown_string_table(const PlanInputs<E>&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_EXTERN_GROWN_TABLE)
#undef RUNPATCH_EXTERN_GROWN_TABLE

}  // namespace runpatch
