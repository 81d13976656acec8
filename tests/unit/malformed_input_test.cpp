// Every malformed image gives one error naming the file and the problem; never a crash.
#include <gtest/gtest.h>

#include "runpatch/elf_info.hpp"
#include "runpatch/elf_types.hpp"
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
constexpr uint64_t kPhoff = 32, kShoff = 40, kPhentsize = 54, kPhnum = 56, kShentsize = 58, kShnum = 60;

void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
  auto info = read_elf_info(bytes, "bad.so");
  ASSERT_FALSE(info) << "expected an error containing '" << needle << "'";
  std::string message = info.error().message();
  EXPECT_NE(message.find("bad.so: "), std::string::npos) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
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
  auto elf = base_elf();
  elf.bytes[elf::EI_CLASS] = 3;
  expect_error(elf.bytes, "unknown ELF class 3");
  elf = base_elf();
  elf.bytes[elf::EI_DATA] = 0;
  expect_error(elf.bytes, "unknown ELF byte order");
}

TEST(Malformed, ProgramHeadersPastEof) {
  auto elf = base_elf();
  poke(elf.bytes, kPhoff, 8, false, elf.bytes.size() - 8);
  expect_error(elf.bytes, "program header table");
}

TEST(Malformed, HugeProgramHeaderCount) {
  auto elf = base_elf();
  poke(elf.bytes, kPhnum, 2, false, 0xfffe);
  expect_error(elf.bytes, "extends past end of file");
}

TEST(Malformed, OffsetOverflowIsCaught) {
  auto elf = base_elf();
  poke(elf.bytes, kPhoff, 8, false, ~uint64_t(0) - 10);
  expect_error(elf.bytes, "program header table");
}

TEST(Malformed, WrongEntrySizes) {
  auto elf = base_elf();
  poke(elf.bytes, kPhentsize, 2, false, 32);
  expect_error(elf.bytes, "program header size is 32 bytes, expected 56");
  elf = base_elf();
  poke(elf.bytes, kShentsize, 2, false, 40);
  expect_error(elf.bytes, "section header size is 40 bytes, expected 64");
}

TEST(Malformed, SectionHeadersPastEof) {
  auto elf = base_elf();
  poke(elf.bytes, kShoff, 8, false, elf.bytes.size() + 100);
  expect_error(elf.bytes, "section header table");
  elf = base_elf();
  poke(elf.bytes, kShnum, 2, false, 5000);
  expect_error(elf.bytes, "section header table");
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
  poke(elf.bytes, elf.layout.shoff + 44, 4, false, 0x7fffffff);
  expect_error(elf.bytes, "program header table");
  // ... and without section headers at all.
  SyntheticSpec s;
  s.with_section_headers = false;
  auto bare = build_synthetic_elf(s);
  poke(bare.bytes, kPhnum, 2, false, elf::PN_XNUM);
  expect_error(bare.bytes, "PN_XNUM");
}

TEST(Malformed, StringTableOutsideEverySegment) {
  auto elf = base_elf();
  uint64_t strtab_value = elf.layout.dynamic_offset + elf.layout.strtab_tag_index * 16 + 8;
  poke(elf.bytes, strtab_value, 8, false, 0x10000000);
  expect_error(elf.bytes, "dynamic string table at address 0x10000000");
}

TEST(Malformed, StringTableSizePastSegment) {
  auto elf = base_elf();
  uint64_t strsz_value = elf.layout.dynamic_offset + (elf.layout.strtab_tag_index + 1) * 16 + 8;
  poke(elf.bytes, strsz_value, 8, false, 1u << 30);
  expect_error(elf.bytes, "lies in no loadable segment");
}

TEST(Malformed, MissingNulTerminator) {
  auto elf = base_elf();
  // Shrink DT_STRSZ by one so the last string (the runpath) loses its NUL.
  uint64_t strsz_value = elf.layout.dynamic_offset + (elf.layout.strtab_tag_index + 1) * 16 + 8;
  poke(elf.bytes, strsz_value, 8, false, elf.layout.dynstr_size - 1);
  expect_error(elf.bytes, "not NUL-terminated");
}

TEST(Malformed, StringIndexOutOfRange) {
  auto elf = base_elf();
  // The first dynamic entry is DT_NEEDED; point it far outside the table.
  poke(elf.bytes, elf.layout.dynamic_offset + 8, 8, false, 99999);
  expect_error(elf.bytes, "DT_NEEDED string index 99999 is outside the string table");
}

TEST(Malformed, DynamicSegmentPastEof) {
  auto elf = base_elf();
  // PT_DYNAMIC is the last program header; p_offset at +8 in Phdr64.
  uint64_t dyn_phdr = elf.layout.phoff + (elf.layout.phnum - 1) * 56;
  poke(elf.bytes, dyn_phdr + 8, 8, false, elf.bytes.size() - 4);
  expect_error(elf.bytes, "dynamic section");
}

TEST(Malformed, BigEndianHeaderOverLittleEndianData) {
  auto elf = base_elf();
  elf.bytes[elf::EI_DATA] = elf::ELFDATA2MSB;
  auto info = read_elf_info(elf.bytes, "bad.so");
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
