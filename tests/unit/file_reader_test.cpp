#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "reading/file_reader.hpp"

namespace runpatch {
namespace {

struct CountingSource {
  std::vector<uint8_t> bytes;
  size_t reads = 0;

  FileReader reader() {
    return FileReader::from_source(
        [this](uint64_t offset, uint64_t length, uint8_t* out) {
          ++reads;
          std::memcpy(out, bytes.data() + offset, length);
          return true;
        },
        bytes.size(), "image");
  }
};

CountingSource patterned(size_t size) {
  CountingSource source;
  source.bytes.resize(size);
  for (size_t i = 0; i < size; ++i) source.bytes[i] = uint8_t(i * 131 + (i >> 9));
  return source;
}

// Verifying an edit reads every symbol name of a big library through one
// reader: each answer must be the file's bytes, earlier answers must stay
// valid, and a walk must not read the same bytes again and again.
TEST(FileReader, ManyScatteredReadsStayCorrectAndValid) {
  CountingSource source = patterned(4 << 20);
  FileReader reader = source.reader();
  std::mt19937_64 random(7);
  std::vector<std::pair<const uint8_t*, uint64_t>> answers;
  for (int i = 0; i < 50000; ++i) {
    uint64_t offset = random() % (source.bytes.size() - 300), length = 1 + random() % 256;
    const uint8_t* p = reader.at(offset, length);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(std::memcmp(p, source.bytes.data() + offset, length), 0) << offset;
    answers.emplace_back(p, offset);
  }
  for (const auto& [p, offset] : answers) ASSERT_EQ(std::memcmp(p, source.bytes.data() + offset, 1), 0) << offset;
  // 64 KiB windows once walking: at most a read per window of the file, plus the first small ones.
  EXPECT_LE(source.reads, (source.bytes.size() >> 16) * 2 + 64) << "reads";
}

// The headers and dynamic tables of a library lie in its first 64 KiB: the
// small windows of the first reads lie there too, before the walk's window
// over the same grid cell. Later reads there must find that window, however
// many small ones sit between its start and the offset (a libGL edit read
// the cell 1,800 times: 120 MB and 0.4 s).
TEST(FileReader, AWalkFindsItsWindowBehindManySmallOnes) {
  CountingSource source = patterned(1 << 20);
  FileReader reader = source.reader();
  for (uint64_t i = 0; i < 24; ++i) ASSERT_NE(reader.at(i * 1024 + 3, 8), nullptr);
  size_t before = source.reads;
  for (uint64_t offset = 30000; offset < 60000; offset += 16) {
    const uint8_t* p = reader.at(offset, 12);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(std::memcmp(p, source.bytes.data() + offset, 12), 0) << offset;
  }
  EXPECT_LE(source.reads - before, 1u) << "one window for the cell";
}

TEST(FileReader, ALongerRangeFromTheSameOffsetKeepsTheShorterAnswer) {
  CountingSource source = patterned(1 << 20);
  FileReader reader = source.reader();
  const uint8_t* shorter = reader.at(4096, 16);
  const uint8_t* longer = reader.at(4096, 200000);
  ASSERT_NE(shorter, nullptr);
  ASSERT_NE(longer, nullptr);
  EXPECT_EQ(std::memcmp(shorter, source.bytes.data() + 4096, 16), 0);
  EXPECT_EQ(std::memcmp(longer, source.bytes.data() + 4096, 200000), 0);
  EXPECT_EQ(reader.at(4096 + 100000, 8), longer + 100000) << "the longer window answers inside it";
  EXPECT_EQ(reader.at(source.bytes.size() - 1, 2), nullptr) << "past the end";
}

// A source that holds some ranges in memory answers them without a copy; the
// others still come through the source.
TEST(FileReader, DirectRangesAreAnsweredInPlace) {
  CountingSource source = patterned(1 << 16);
  FileReader reader = FileReader::from_source(
      [&](uint64_t offset, uint64_t length, uint8_t* out) {
        ++source.reads;
        std::memcpy(out, source.bytes.data() + offset, length);
        return true;
      },
      source.bytes.size(), "image",
      [&](uint64_t offset, uint64_t length) -> const uint8_t* {
        return offset + length <= 4096 ? source.bytes.data() + offset : nullptr;
      });
  EXPECT_EQ(reader.at(100, 50), source.bytes.data() + 100);
  EXPECT_EQ(source.reads, 0u);
  const uint8_t* copied = reader.at(8192, 50);
  ASSERT_NE(copied, nullptr);
  EXPECT_NE(copied, source.bytes.data() + 8192);
  EXPECT_EQ(std::memcmp(copied, source.bytes.data() + 8192, 50), 0);
  EXPECT_EQ(source.reads, 1u);
}

}  // namespace
}  // namespace runpatch
