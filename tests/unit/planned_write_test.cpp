#include "editing/planned_write.hpp"

#include <gtest/gtest.h>

namespace runpatch {
namespace {

using Bytes = std::vector<uint8_t>;

// Where each write goes, as offset and size.
std::vector<std::pair<uint64_t, size_t>> spans(const std::vector<PlannedWrite>& writes) {
  std::vector<std::pair<uint64_t, size_t>> out;
  for (const auto& w : writes) out.emplace_back(w.offset, w.bytes.size());
  return out;
}

Bytes with_changes(const Bytes& before, std::initializer_list<size_t> at) {
  Bytes after = before;
  for (size_t i : at) after[i] ^= 0xff;
  return after;
}

TEST(ChangedRunsWrites, OneWritePerRunOfDifferingBytes) {
  Bytes before(10000, 'a');
  Bytes after = with_changes(before, {3, 4, 5, 9000, 9001});
  auto writes = changed_runs_writes(WritePhase::Cleanup, 100, before, after, WriteKind::DynamicStrings);
  using Spans = std::vector<std::pair<uint64_t, size_t>>;
  EXPECT_EQ(spans(writes), (Spans{{103, 3}, {9100, 2}}));
  EXPECT_EQ(writes[0].bytes, Bytes(after.begin() + 3, after.begin() + 6));
  EXPECT_EQ(writes[1].phase, WritePhase::Cleanup);
}

TEST(ChangedRunsWrites, RunsCloserThanTheGapAreJoinedOthersNot) {
  Bytes before(1000, 'a');
  Bytes after = with_changes(before, {10, 20, 100, 300});
  using Spans = std::vector<std::pair<uint64_t, size_t>>;
  EXPECT_EQ(spans(changed_runs_writes(WritePhase::Cleanup, 0, before, after, WriteKind::DynamicStrings, 80)),
            (Spans{{10, 91}, {300, 1}}));
  EXPECT_EQ(spans(changed_runs_writes(WritePhase::Cleanup, 0, before, after, WriteKind::DynamicStrings, 9)),
            (Spans{{10, 11}, {100, 1}, {300, 1}}));
  EXPECT_EQ(spans(changed_runs_writes(WritePhase::Cleanup, 0, before, after, WriteKind::DynamicStrings)),
            (Spans{{10, 1}, {20, 1}, {100, 1}, {300, 1}}));
}

TEST(ChangedRunsWrites, EqualTablesNeedNoWrite) {
  Bytes table(5000, 'x');
  EXPECT_TRUE(changed_runs_writes(WritePhase::Cleanup, 0, table, table, WriteKind::DynamicStrings).empty());
  Bytes last = with_changes(table, {4999});
  EXPECT_EQ(spans(changed_runs_writes(WritePhase::Cleanup, 0, table, last, WriteKind::DynamicStrings)),
            (std::vector<std::pair<uint64_t, size_t>>{{4999, 1}}));
}

}  // namespace
}  // namespace runpatch
