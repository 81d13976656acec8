#include "editing/plan_options.hpp"

#include <gtest/gtest.h>

#include <tuple>

namespace runpatch {
namespace {

// What a planning pass of each way is asked, for each thing the editor may
// find about the file: the one table the editor's choices come from.
TEST(OptionsFor, EachWayAsATable) {
  struct Row {
    EditWay way;
    bool mapped_elsewhere, must_write_in_place;
    bool in_place, commit_in_elf_header, reclaim_earlier_segment, old_strings_stay, tables_may_move;
  };
  const Row rows[] = {
      // One write into the file: the old tables stay as they are only while someone may read them.
      {EditWay::OneWrite, true, false, true, true, false, true, false},
      {EditWay::OneWrite, false, false, true, true, false, false, false},
      {EditWay::OneWrite, false, true, true, true, false, false, false},
      // Into the file in phases: tables move, and an earlier segment is rebuilt, only where nobody reads them.
      {EditWay::IntoFile, true, false, true, false, true, true, false},
      {EditWay::IntoFile, false, false, false, false, true, false, false},
      {EditWay::IntoFile, true, true, true, false, false, true, false},
      {EditWay::IntoFile, false, true, false, false, false, false, false},
      // A copy or an output is a new file: nothing reads it yet, and a crash never leaves its tables half moved.
      {EditWay::Copy, true, false, false, false, true, false, true},
      {EditWay::Copy, false, false, false, false, true, false, true},
      {EditWay::Output, true, false, false, false, true, false, true},
  };
  EditOptions given;
  given.in_place = true;  // the caller's --in-place is the editor's to decide per pass
  given.dry_run = true;   // and the rest of the options pass through
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "way " << int(r.way) << ", mapped elsewhere " << r.mapped_elsewhere
                                    << ", must write in place " << r.must_write_in_place);
    PlanOptions p = options_for(r.way, given, {r.mapped_elsewhere, r.must_write_in_place});
    EXPECT_EQ(std::make_tuple(p.in_place, p.commit_in_elf_header, p.reclaim_earlier_segment, p.old_strings_stay,
                              p.tables_may_move),
              std::make_tuple(r.in_place, r.commit_in_elf_header, r.reclaim_earlier_segment, r.old_strings_stay,
                              r.tables_may_move));
    EXPECT_TRUE(p.dry_run);
  }
}

}  // namespace
}  // namespace runpatch
