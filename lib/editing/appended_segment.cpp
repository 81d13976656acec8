#include "editing/appended_segment.hpp"

#include "editing/appended_layout.hpp"

namespace runpatch {

template <class E>
Expected<EditPlan> plan_appended_segment(const PlanInputs<E>& in, SegmentCarries carries) {
  // An appended segment grows the program header table where binutils needs it,
  // over bytes the old file references: never committed by one write.
  if (in.options.commit_in_elf_header)
    return in.view.error(ErrorCode::NotOneWrite, "the edit needs an appended segment, which no single write commits");
  const EarlierSegments<E> earlier = find_earlier_segments(in, carries);
  RUNPATCH_TRY(const Room<E> room, choose_room(in, earlier));
  const PlacedStrings strings = appended_strings(in, earlier);
  RUNPATCH_TRY(const Placement placement, place_segment(in, earlier, room, strings));
  return appended_writes(AppendedLayout<E>{in, earlier, room, strings, placement});
}

#define RUNPATCH_INSTANTIATE(E) template Expected<EditPlan> plan_appended_segment(const PlanInputs<E>&, SegmentCarries);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
