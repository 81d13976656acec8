// Where an edit's new strings go — one answer for every layout: into bytes of
// the string table nothing references, over the one string being replaced, or
// into a copy of the table extended at its end (an appended segment).
#pragma once

#include <optional>
#include <vector>

#include "editing/plan_inputs.hpp"

namespace runpatch {

struct PlacedStrings {
  DynamicModel model;           // the requested entries, each string at its offset
  std::vector<uint8_t> strtab;  // the table's bytes with the strings in place
  StringOffsets offsets;        // every new string's offset
};

template <class E>
class StringPlacer {
 public:
  explicit StringPlacer(const PlanInputs<E>& in) : in_(in) {}

  // Every changed string (dynamic entries, vn_file names, renamed symbols) in
  // bytes that nothing in used_now covers; nullopt when they do not fit.
  // `table_size`: the table grown to that many bytes, zeros after its own
  // (grown_string_table.cpp); unset: as large as it is.
  std::optional<PlacedStrings> in_unused_bytes(const std::vector<ByteRange>& used_now,
                                               std::optional<uint64_t> table_size = std::nullopt) const;

  // The one changed entry's string over its own bytes (and free bytes after
  // them, none of `survives`): nullopt unless the edit is exactly that. The
  // rest of a longer old string zeroed, or kept as it was (the string then
  // is one short write: an interim place, edit_planner.cpp; its tag must stay).
  enum class OldTail { Zeroed, Kept };
  std::optional<PlacedStrings> over_own_bytes(const std::vector<ByteRange>& survives,
                                              OldTail old_tail = OldTail::Zeroed) const;

  // A copy of the first kept_size bytes of the table with every changed
  // string appended (runpaths last, so that a later edit can grow them into
  // the slack in place).
  PlacedStrings in_extended_table(uint64_t kept_size) const;

 private:
  std::optional<size_t> single_changed_entry() const;
  bool placed_tag_changes(size_t entry) const;

  const PlanInputs<E>& in_;
};

#define RUNPATCH_EXTERN_STRING_PLACER(E) extern template class StringPlacer<E>;
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_EXTERN_STRING_PLACER)
#undef RUNPATCH_EXTERN_STRING_PLACER

}  // namespace runpatch
