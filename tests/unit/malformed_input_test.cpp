// Every malformed image gives one error naming the file and the problem; never a crash.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "malformed_corpus.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

using test::build_synthetic_elf;
using test::poke;
using test::SyntheticElf;
using test::SyntheticSpec;

SyntheticElf base_elf(bool is64 = true, bool big = false) {
  SyntheticSpec s;
  s.is64 = is64;
  s.big_endian = big;
  s.interpreter = "/lib/ld.so";
  s.needed = {"libfoo.so"};
  s.runpath = "/opt/lib";
  return build_synthetic_elf(s);
}

// Offsets of ELF64 header fields.
constexpr uint64_t kPhentsize = 54, kPhnum = 56, kShentsize = 58;

// A case of the generated malformed corpus (tests/support/malformed_corpus.cpp),
// which builds each corruption once for every class and byte order.
std::vector<uint8_t> corpus_case(const std::string& name) {
  static const auto corpus = test::malformed_corpus();
  for (const auto& c : corpus)
    if (c.name == name) return c.bytes;
  ADD_FAILURE() << "no malformed corpus case " << name;
  return {};
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
  auto info = read_elf_info(bytes, "bad.so");
  ASSERT_FALSE(info) << "expected an error containing '" << needle << "'";
  std::string message = info.error().message();
  EXPECT_NE(message.find("bad.so: "), std::string::npos) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  // Bytes in memory: what is wrong is the bytes, never a system call.
  ErrorCode code = info.error().code;
  EXPECT_TRUE(code == ErrorCode::NotElf || code == ErrorCode::Malformed) << error_code_name(code);
}

TEST(Malformed, NotElf) {
  expect_error({'#', '!', '/', 'b', 'i', 'n'}, "not an ELF file");
  expect_error({0x7f, 'E', 'L'}, "not an ELF file");
}

TEST(Malformed, TruncatedHeaders) {
  auto elf = base_elf();
  for (size_t size : {5u, 16u, 40u, 63u}) {
    std::vector<uint8_t> cut(elf.bytes.begin(), elf.bytes.begin() + size);
    auto info = read_elf_info(cut, "bad.so");
    EXPECT_FALSE(info) << "size " << size;
  }
  std::vector<uint8_t> cut(elf.bytes.begin(), elf.bytes.begin() + 40);
  expect_error(cut, "truncated ELF header");
}

TEST(Malformed, TruncatedAnywhereNeverCrashes) {
  auto elf = base_elf();
  for (size_t size = 1; size < elf.bytes.size(); ++size) {
    std::vector<uint8_t> cut(elf.bytes.begin(), elf.bytes.begin() + size);
    auto info = read_elf_info(cut, "bad.so");
    if (info) ADD_FAILURE() << "truncation to " << size << " bytes was accepted";
  }
}

TEST(Malformed, UnknownClassAndByteOrder) {
  expect_error(corpus_case("64le-unknown-class"), "unknown ELF class 3");
  auto elf = base_elf();
  elf.bytes[elf::EI_DATA] = 0;
  expect_error(elf.bytes, "unknown ELF byte order");
}

TEST(Malformed, ProgramHeadersPastEof) { expect_error(corpus_case("64le-phdrs-past-eof"), "program header table"); }

TEST(Malformed, HugeProgramHeaderCount) { expect_error(corpus_case("64le-huge-phnum"), "extends past end of file"); }

TEST(Malformed, OffsetOverflowIsCaught) { expect_error(corpus_case("64le-phoff-overflow"), "program header table"); }

TEST(Malformed, WrongEntrySizes) {
  auto elf = base_elf();
  poke(elf.bytes, kPhentsize, 2, false, 32);
  expect_error(elf.bytes, "program header size is 32 bytes, expected 56");
  elf = base_elf();
  poke(elf.bytes, kShentsize, 2, false, 40);
  expect_error(elf.bytes, "section header size is 40 bytes, expected 64");
}

TEST(Malformed, SectionHeadersPastEof) {
  expect_error(corpus_case("64le-shdrs-past-eof"), "section header table");
  expect_error(corpus_case("64le-huge-shnum"), "section header table");
}

TEST(Malformed, TruncatedSectionHeaderTableNamesItsRealCount) {
  // A 28-section file cut inside its first section header: the message used to say "1 entries".
  for (bool is64 : {true, false}) {
    auto elf = base_elf(is64);
    uint64_t shnum_at = is64 ? 60 : 48, entry = is64 ? 64 : 40;
    poke(elf.bytes, shnum_at, 2, false, 28);
    for (uint64_t cut_at : {elf.layout.shoff + 10, elf.layout.shoff + 3 * entry + 7}) {
      std::vector<uint8_t> cut(elf.bytes.begin(), elf.bytes.begin() + cut_at);
      expect_error(cut, fmt::format("section header table (28 entries of {} bytes, {} bytes at offset {:#x}) extends "
                                    "past end of file (size {})",
                                    entry, 28 * entry, elf.layout.shoff, cut_at));
    }
  }
}

TEST(Malformed, TruncatedExtendedSectionCountNamesSectionZero) {
  auto elf = base_elf();
  poke(elf.bytes, 60, 2, false, 0);  // e_shnum 0: the count is in section header 0
  std::vector<uint8_t> cut(elf.bytes.begin(), elf.bytes.begin() + elf.layout.shoff + 10);
  expect_error(cut, "section header 0 (e_shnum is 0: extended numbering) (1 entry of 64 bytes, 64 bytes at offset");
}

TEST(Malformed, ExtendedProgramHeaderCount) {
  auto elf = base_elf();
  // PN_XNUM: the real count comes from section 0's sh_info (offset 44 in Shdr64).
  poke(elf.bytes, kPhnum, 2, false, elf::PN_XNUM);
  poke(elf.bytes, elf.layout.shoff + 44, 4, false, elf.layout.phnum);
  auto info = read_elf_info(elf.bytes, "xnum.so");
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_EQ(info->phnum, elf.layout.phnum);
  EXPECT_EQ(info->runpath, "/opt/lib");
  // ... and with a bogus count there.
  expect_error(corpus_case("64le-pn-xnum-huge"), "program header table");
  // ... and without section headers at all.
  SyntheticSpec s;
  s.with_section_headers = false;
  auto bare = build_synthetic_elf(s);
  poke(bare.bytes, kPhnum, 2, false, elf::PN_XNUM);
  expect_error(bare.bytes, "PN_XNUM");
}

TEST(Malformed, StringTableOutsideEverySegment) {
  expect_error(corpus_case("64le-strtab-outside-segments"), "dynamic string table at address 0x10000000");
}

TEST(Malformed, StringTableSizePastSegment) {
  expect_error(corpus_case("64le-strsz-past-segment"), "lies in no loadable segment");
}

// DT_STRSZ one short, so the last string (the runpath) loses its NUL.
TEST(Malformed, MissingNulTerminator) { expect_error(corpus_case("64le-missing-nul"), "not NUL-terminated"); }

// The first dynamic entry is DT_NEEDED, pointed far outside the table.
TEST(Malformed, StringIndexOutOfRange) {
  expect_error(corpus_case("64le-needed-index-out-of-range"),
               "DT_NEEDED string index 99999 is outside the string table");
}

TEST(Malformed, DynamicSegmentPastEof) { expect_error(corpus_case("64le-dynamic-past-eof"), "dynamic section"); }

TEST(Malformed, BigEndianHeaderOverLittleEndianData) {
  auto info = read_elf_info(corpus_case("64le-byte-order-mismatch"), "bad.so");
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message().find("bad.so"), std::string::npos);
}

TEST(Malformed, BigEndian32BitCorruptions) {
  auto elf = base_elf(false, true);
  ASSERT_TRUE(read_elf_info(elf.bytes, "ok32"));
  poke(elf.bytes, 28, 4, true, 0xfffffff0);  // e_phoff of Elf32
  expect_error(elf.bytes, "program header table");
}

}  // namespace
}  // namespace runpatch
