// The layout arithmetic of an appended segment, rule by rule, with the
// numbers of real cases: a CUDA library with 2 MiB alignment, a 64 KiB-page
// aarch64 program, an executable with a 256 MiB .bss.
#include <gtest/gtest.h>

#include <algorithm>

#include "editing/layout_math.hpp"

namespace runpatch::layout {
namespace {

constexpr uint64_t k4K = 0x1000, k64K = 0x10000, k2M = 0x200000;

TEST(CongruentAddress, IsCongruentAboveTheFloorAndNeedsNoPadding) {
  // libcudart.so.13: the file ends at 0xabf20 (704,288 bytes), memory at 0x2ad320, p_align 2 MiB:
  // the segment goes right at the end of the file, its address in the next 2 MiB page.
  uint64_t address = congruent_address(0xabf20, 0x2ad320, k2M);
  EXPECT_EQ(address, 0x4abf20u);
  EXPECT_EQ(address % k2M, 0xabf20u % k2M);
}

TEST(CongruentAddress, NeverBelowTheOffset) {
  // A file larger than its memory image (debug sections at the end).
  EXPECT_EQ(congruent_address(0x900000, 0x5000, k4K), 0x900000u);
  EXPECT_EQ(congruent_address(0x900123, 0x5000, k4K), 0x900123u);
}

TEST(CongruentAddress, AFloorOnAPageBoundaryIsUsedAsIs) {
  EXPECT_EQ(congruent_address(0x3010, 0x8000, k4K), 0x8010u);
  EXPECT_EQ(congruent_address(0x3000, 0x8000, k4K), 0x8000u);
}

TEST(MovedTableOffset, SitsEhdrPastABoundaryOfTheToolPage) {
  EXPECT_EQ(moved_table_offset(0x12345, k4K, 64), 0x13040u);
  EXPECT_EQ(moved_table_offset(0x12000, k4K, 64), 0x12040u);  // the boundary itself: 64 bytes after it
  EXPECT_EQ(moved_table_offset(0x12040, k4K, 64), 0x12040u);
  EXPECT_EQ(moved_table_offset(0x12041, k4K, 64), 0x13040u);
  // Less than one tool page of padding, whatever p_align is.
  for (uint64_t size : {0x1u, 0xfffu, 0x10000u, 0x123457u}) EXPECT_LT(moved_table_offset(size, k64K, 64) - size, k64K);
}

TEST(OffsetKeepingDelta, AddsAHoleOnlyWhenTheMemoryImageEndsBeyondTheFile) {
  // A PIE (delta 0) whose memory ends one page past its file: one page of hole.
  EXPECT_EQ(offset_keeping_delta(0x4010, 0x5e80, k4K, 0), 0x6010u);
  // Memory ends before the file does: no hole.
  EXPECT_EQ(offset_keeping_delta(0x9010, 0x5e80, k4K, 0), 0x9010u);
  // Non-PIE at 0x400000 (delta 0x400000): the address follows the offset.
  uint64_t off = offset_keeping_delta(0x4010, 0x405000, k4K, 0x400000);
  EXPECT_EQ(off + 0x400000, congruent_address(off, 0x405000, k4K));
  // A 256 MiB .bss: the whole image, which is why such programs grow the table in place instead.
  EXPECT_GT(offset_keeping_delta(0x5000, 0x10005000, k64K, 0), 0x10000000u);
}

TEST(ExtendedStringTable, KeepsOldOffsetsAddsEachStringOnceAndLeavesSlack) {
  std::vector<uint8_t> old = {0, 'a', 0, 'b', 'c', 0};
  auto table = extended_string_table(old, {"libx.so", "/run/opengl-driver/lib", "libx.so"}, 256);
  ASSERT_GE(table.bytes.size(), old.size());
  EXPECT_TRUE(std::equal(old.begin(), old.end(), table.bytes.begin()));
  EXPECT_EQ(table.offsets.at("libx.so"), 6u);
  EXPECT_EQ(table.offsets.at("/run/opengl-driver/lib"), 14u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(table.bytes.data()) + 14), "/run/opengl-driver/lib");
  uint64_t added = 8 + 23;
  EXPECT_EQ(table.bytes.size(), old.size() + added + 256);  // then the slack asked for
  EXPECT_TRUE(std::all_of(table.bytes.end() - 256, table.bytes.end(), [](uint8_t b) { return b == 0; }));
  auto big = extended_string_table(old, {std::string(1000, 'r')}, 64);
  EXPECT_EQ(big.bytes.size(), old.size() + 1001 + 64);  // the same slack however much was added
}

TEST(LayOutSegment, ProgramHeadersFirstThenStringsDynamicInterpreterCarriedNote) {
  SegmentParts parts;
  parts.phdr_table = 14 * 56;
  parts.has_dynamic = true;
  parts.strtab = 1001;
  parts.dynamic = 40 * 16;
  parts.interp = 28;
  parts.carried = {{36, 4}, {24, 8}};
  parts.note = 60;
  auto at = lay_out_segment(parts);
  EXPECT_EQ(at.phdrs, 0u);
  EXPECT_EQ(at.strtab, 784u);    // 14 * 56, 16-aligned
  EXPECT_EQ(at.dynamic, 1792u);  // 784 + 1001 = 1785, 16-aligned
  EXPECT_EQ(at.interp, 1792u + 640);
  EXPECT_EQ(at.carried[0], 2432u + 28);  // 4-aligned
  EXPECT_EQ(at.carried[1], 2496u);       // 2460 + 36 = 2496, 8-aligned
  EXPECT_EQ(at.note, 2520u);             // 2496 + 24, 4-aligned
  EXPECT_EQ(at.size, 2580u);
}

TEST(LayOutSegment, WithoutMovedTableTheStringsComeFirst) {
  SegmentParts parts;
  parts.has_dynamic = true;
  parts.strtab = 100;
  parts.dynamic = 160;
  auto at = lay_out_segment(parts);
  EXPECT_EQ(at.strtab, 0u);
  EXPECT_EQ(at.dynamic, 112u);
  EXPECT_EQ(at.size, 272u);
}

TEST(LayOutSegment, AnInterpreterAloneStartsTheSegment) {
  SegmentParts parts;
  parts.interp = 40;
  auto at = lay_out_segment(parts);
  EXPECT_EQ(at.interp, 0u);
  EXPECT_EQ(at.size, 40u);
}

}  // namespace
}  // namespace runpatch::layout
