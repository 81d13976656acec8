#include "editing/plan_options.hpp"

namespace runpatch {

PlanOptions options_for(EditWay way, const EditOptions& options, const WayContext& context) {
  PlanOptions plan(options);
  switch (way) {
    case EditWay::OneWrite:
      plan.in_place = true;
      plan.commit_in_elf_header = true;
      plan.old_strings_stay = context.mapped_elsewhere;
      break;
    case EditWay::IntoFile:
      plan.in_place = context.mapped_elsewhere;
      plan.old_strings_stay = context.mapped_elsewhere;
      plan.reclaim_earlier_segment = !context.must_write_in_place;
      break;
    case EditWay::Copy:
    case EditWay::Output:
      plan.in_place = false;
      plan.reclaim_earlier_segment = true;
      plan.tables_may_move = true;
      break;
  }
  return plan;
}

}  // namespace runpatch
