// StringSpace: which bytes of a string table are free for new strings, given
// the ranges that surviving references still cover. Each expectation is the
// exact set of free offsets, written out.
#include "editing/string_space.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace runpatch {
namespace {

using Offsets = std::vector<uint64_t>;

// Every free offset below limit, probed on copies so the space itself is untouched.
Offsets free_offsets(const StringSpace& space, uint64_t limit) {
  Offsets result;
  for (uint64_t at = 0; at < limit; ++at) {
    StringSpace probe = space;
    if (probe.claim(at, 1)) result.push_back(at);
  }
  return result;
}

Offsets range(uint64_t begin, uint64_t end) {
  Offsets r;
  for (uint64_t at = begin; at < end; ++at) r.push_back(at);
  return r;
}

Offsets concat(Offsets a, const Offsets& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(StringSpace, ByteZeroStaysReservedInAnUnusedTable) {
  StringSpace space(8, {});
  EXPECT_EQ(free_offsets(space, 16), range(1, 8));
}

TEST(StringSpace, UsedRangesAreNotFree) {
  // "\0libfoo\0libbar\0....": libfoo at 1..8, the rest free.
  StringSpace space(20, {{1, 8}});
  EXPECT_EQ(free_offsets(space, 24), range(8, 20));
}

TEST(StringSpace, UnsortedDuplicateAndOverlappingRangesMergeIntoOneUsedRun) {
  // A DT_NEEDED and a symbol sharing one string, and a suffix ("foo.so" inside "libfoo.so").
  StringSpace space(30, {{15, 20}, {5, 15}, {5, 15}, {8, 15}, {22, 25}});
  EXPECT_EQ(free_offsets(space, 32), concat(concat(range(1, 5), range(20, 22)), range(25, 30)));
}

TEST(StringSpace, RangesPastTheTableEndLeaveOnlyTheTableFree) {
  StringSpace space(10, {{6, 40}});
  EXPECT_EQ(free_offsets(space, 48), range(1, 6));
  StringSpace beyond(10, {{12, 14}});
  EXPECT_EQ(free_offsets(beyond, 16), range(1, 10));
}

TEST(StringSpace, EmptyTableHasNoRoom) {
  StringSpace space(0, {});
  EXPECT_EQ(space.allocate(1), std::nullopt);
  EXPECT_FALSE(space.claim(0, 1));
  EXPECT_EQ(free_offsets(space, 4), Offsets{});
}

TEST(StringSpace, FullTableRefusesEveryAllocationAndClaim) {
  StringSpace space(12, {{1, 6}, {6, 12}});
  EXPECT_EQ(free_offsets(space, 16), Offsets{});
  EXPECT_EQ(space.allocate(1), std::nullopt);
  EXPECT_FALSE(space.claim(11, 1));
}

TEST(StringSpace, AllocateTakesTheEndOfARunAndShrinksIt) {
  // The end: a runpath a later edit prepends to then ends where it ended (one write).
  StringSpace space(10, {});
  EXPECT_EQ(space.allocate(4), 6u);
  EXPECT_EQ(space.allocate(3), 3u);
  EXPECT_EQ(free_offsets(space, 12), range(1, 3));
}

TEST(StringSpace, ALongerStringInTheSameRunEndsWhereTheShorterOneEnded) {
  // The two placements a chain of edits makes (old runpath, then one prepended to it).
  StringSpace before(40, {{20, 25}}), after(40, {{20, 25}});
  uint64_t old_at = *before.allocate(6), new_at = *after.allocate(13);
  EXPECT_EQ(old_at + 6, new_at + 13);
}

TEST(StringSpace, AllocationsAreNotAligned) {
  // Strings need no alignment: an odd free offset is handed out as it is.
  StringSpace space(16, {{1, 4}});
  EXPECT_EQ(space.allocate(5), 11u);
  EXPECT_EQ(space.allocate(1), 10u);
  EXPECT_EQ(space.allocate(3), 7u);
}

TEST(StringSpace, ExactFitUsesTheWholeRunAndTheNextRequestFails) {
  StringSpace space(10, {});
  EXPECT_EQ(space.allocate(9), 1u);
  EXPECT_EQ(space.allocate(1), std::nullopt);
}

TEST(StringSpace, TooLongForEveryRunFailsWithoutTakingAnything) {
  // Runs of 3 and 4 bytes: 5 fits in neither, even though 7 bytes are free in all.
  StringSpace space(12, {{4, 8}});
  EXPECT_EQ(space.allocate(5), std::nullopt);
  EXPECT_EQ(free_offsets(space, 12), concat(range(1, 4), range(8, 12)));
}

TEST(StringSpace, BestFitLeavesTheLargestRunForLaterStrings) {
  // Free runs: [1,20) of 19 bytes, [25,29) of 4, [30,33) of 3.
  StringSpace space(33, {{20, 25}, {29, 30}});
  EXPECT_EQ(space.allocate(3), 30u);  // the 3-byte run fits exactly
  EXPECT_EQ(space.allocate(3), 26u);  // then the 4-byte run, not the 19-byte one
  EXPECT_EQ(space.allocate(10), 10u);
  EXPECT_EQ(free_offsets(space, 34), concat(range(1, 10), Offsets{25}));
}

TEST(StringSpace, EqualRunsAreTakenInTableOrder) {
  StringSpace twins(11, {{4, 8}});  // [1,4) and [8,11): both 3 bytes
  EXPECT_EQ(twins.allocate(3), 1u);
  EXPECT_EQ(twins.allocate(3), 8u);
  EXPECT_EQ(twins.allocate(1), std::nullopt);
}

TEST(StringSpace, ClaimSplitsARunAroundTheClaimedBytes) {
  StringSpace space(20, {});
  EXPECT_TRUE(space.claim(5, 4));
  EXPECT_EQ(free_offsets(space, 24), concat(range(1, 5), range(9, 20)));
}

TEST(StringSpace, ClaimAtEitherEndOfARunAndOfAWholeRun) {
  StringSpace space(20, {{10, 12}});  // runs [1,10) and [12,20)
  EXPECT_TRUE(space.claim(1, 2));
  EXPECT_TRUE(space.claim(18, 2));
  EXPECT_TRUE(space.claim(12, 6));
  EXPECT_EQ(free_offsets(space, 24), range(3, 10));
}

TEST(StringSpace, ClaimRefusesUsedByteZeroAcrossRunsAndPastTheEnd) {
  StringSpace space(20, {{10, 12}});
  EXPECT_FALSE(space.claim(0, 2));   // byte 0 is the empty string
  EXPECT_FALSE(space.claim(9, 2));   // runs into a used string
  EXPECT_FALSE(space.claim(8, 6));   // spans a used string between two runs
  EXPECT_FALSE(space.claim(18, 3));  // past the table
  EXPECT_FALSE(space.claim(25, 1));
  EXPECT_EQ(free_offsets(space, 24), concat(range(1, 10), range(12, 20)));
}

TEST(StringSpace, ClaimedBytesAreNeitherClaimedAgainNorAllocated) {
  StringSpace space(8, {});
  EXPECT_TRUE(space.claim(1, 7));
  EXPECT_FALSE(space.claim(1, 7));
  EXPECT_FALSE(space.claim(4, 1));
  EXPECT_EQ(space.allocate(1), std::nullopt);
}

TEST(StringSpace, AllocatedBytesCannotBeClaimed) {
  StringSpace space(10, {});
  ASSERT_EQ(space.allocate(4), 6u);
  EXPECT_FALSE(space.claim(7, 1));
  EXPECT_TRUE(space.claim(5, 1));
}

}  // namespace
}  // namespace runpatch
