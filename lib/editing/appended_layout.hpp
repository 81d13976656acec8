// An edit laid out in a segment appended to the file, as a pipeline of
// values (docs/editing.md, section 3): the segments of earlier edits given up
// (EarlierSegments), room for the new program headers and what moves
// (Room, appended_room.cpp), the strings (StringPlacer), where the segment
// goes (Placement, appended_placement.cpp), then the bytes and writes
// (appended_writes.cpp). Each phase takes the earlier ones const.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "editing/appended_segment.hpp"
#include "editing/layout_math.hpp"
#include "editing/plan_inputs.hpp"
#include "editing/string_placer.hpp"

namespace runpatch {

// Bytes copied into the new segment: a note, or a table found through the dynamic section.
struct CarriedRange {
  uint64_t off, size, align;
  uint64_t rel = 0;            // place in the new segment, once laid out
  uint64_t dynamic_tag = 0;    // a table the dynamic section points at (DT_GNU_HASH ...); 0 for notes
  bool placed_anyway = false;  // the dynamic strings or section: the segment holds their new copy already
};

// Where the edit puts a resolution-cache note (docs/resolution-cache.md).
enum class NewNote {
  None,
  InTheSegment,  // in the appended segment itself (an edit that moves no dynamic table)
  OwnSegment,    // in a read-only PT_LOAD of its own, beside the read-write segment
};
// What becomes of the note the file has.
enum class OldNote {
  Kept,            // untouched (or none)
  ReplacedAlone,   // alone in its segment: that segment's entry is freed
  ReplacedShared,  // sharing its segment: neutralized where it is
};

template <class E>
struct EarlierSegments {
  SegmentCarries carries = SegmentCarries::DynamicTables;  // the request every later phase reads
  bool carries_dynamic() const { return carries == SegmentCarries::DynamicTables; }
  // The resolution-cache note to place, and the old one it replaces.
  std::optional<size_t> note_segment;  // an earlier edit's segment holding the note alone
  std::vector<uint8_t> note_bytes;
  NewNote new_note = NewNote::None;
  OldNote old_note = OldNote::Kept;
  std::optional<uint64_t> replaced_note;
  // Segments of earlier edits this one replaces.
  std::optional<elf::Phdr<E>> earlier_segment, earlier_note;
  std::vector<elf::Phdr<E>> phdrs;  // the table with their entries turned PT_NULL
  std::vector<LayoutStep> layout;
};

template <class E>
struct Room {
  std::vector<elf::Phdr<E>> phdrs;  // the new program header table, new entries still empty
  std::vector<LayoutStep> layout;   // how room was found
  bool move_phdrs = false;          // the table moves into the new segment
  bool grow_in_place = false;       // it grows where it is, over what moved out
  bool room_for_patchelf = false;   // with room after it for a later patchelf's
  bool move_interp = false;
  std::vector<CarriedRange> carried;
  std::string interp_text;
  size_t load_at = 0;  // the new PT_LOAD(s)
  std::optional<size_t> note_at;
};

struct Placement {
  layout::SegmentOffsets rel;
  uint64_t dyn_slots = 0;
  std::vector<CarriedRange> carried;  // the room's, each with its place
  uint64_t seg_off = 0, seg_vaddr = 0, note_off = 0, note_vaddr = 0;
  std::optional<uint64_t> reclaimed_from;  // an interrupted edit's tail starts here
  std::vector<EditWarning> warnings;
};

template <class E>
struct AppendedLayout {
  const PlanInputs<E>& in;
  const EarlierSegments<E>& earlier;
  const Room<E>& room;
  const PlacedStrings& strings;
  const Placement& placement;
};

template <class E>
EarlierSegments<E> find_earlier_segments(const PlanInputs<E>& in, SegmentCarries carries);

template <class E>
Expected<Room<E>> choose_room(const PlanInputs<E>& in, const EarlierSegments<E>& earlier);

template <class E>
PlacedStrings appended_strings(const PlanInputs<E>& in, const EarlierSegments<E>& earlier);

template <class E>
Expected<Placement> place_segment(const PlanInputs<E>& in, const EarlierSegments<E>& earlier, const Room<E>& room,
                                  const PlacedStrings& strings);

template <class E>
Expected<EditPlan> appended_writes(const AppendedLayout<E>& layout);

#define RUNPATCH_EXTERN_APPENDED_PHASES(E)                                                                           \
  extern template EarlierSegments<E> find_earlier_segments(const PlanInputs<E>&, SegmentCarries);                    \
  extern template Expected<Room<E>> choose_room(const PlanInputs<E>&, const EarlierSegments<E>&);                    \
  extern template PlacedStrings appended_strings(const PlanInputs<E>&, const EarlierSegments<E>&);                   \
  extern template Expected<Placement> place_segment(const PlanInputs<E>&, const EarlierSegments<E>&, const Room<E>&, \
                                                    const PlacedStrings&);                                           \
  extern template Expected<EditPlan> appended_writes(const AppendedLayout<E>&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_EXTERN_APPENDED_PHASES)
#undef RUNPATCH_EXTERN_APPENDED_PHASES

}  // namespace runpatch
