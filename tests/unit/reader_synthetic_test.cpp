// The reader on in-memory images of every class and byte order.
#include <gtest/gtest.h>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

using test::build_synthetic_elf;
using test::ElfFlavour;
using test::every_elf_flavour;
using test::FlavourTestName;
using test::SyntheticSpec;

class ReaderAllTargets : public ::testing::TestWithParam<ElfFlavour> {
 protected:
  SyntheticSpec spec() const {
    SyntheticSpec s;
    s.is64 = GetParam().is64;
    s.big_endian = GetParam().big;
    return s;
  }
  static ElfInfo read_ok(const std::vector<uint8_t>& bytes) {
    auto info = read_elf_info(bytes, "mem.so");
    EXPECT_TRUE(info) << info.error().message();
    return info ? *info : ElfInfo{};
  }
};

TEST_P(ReaderAllTargets, ReadsDynamicFacts) {
  auto s = spec();
  s.machine = elf::EM_AARCH64;
  s.osabi = 3;
  s.needed = {"libfoo.so.1", "libbar.so"};
  s.runpath = "/run/opengl-driver/lib:$ORIGIN/../lib";
  s.rpath = "/old/rpath";
  s.soname = "libme.so.2";
  s.flags_1 = elf::DF_1_NODEFLIB | elf::DF_1_NOW;
  s.spare_dynamic_slots = 3;
  ElfInfo info = read_ok(build_synthetic_elf(s).bytes);
  EXPECT_EQ(info.identity.elf_class, GetParam().is64 ? ElfClass::Elf64 : ElfClass::Elf32);
  EXPECT_EQ(info.identity.byte_order, GetParam().big ? ByteOrder::Big : ByteOrder::Little);
  EXPECT_EQ(info.identity.machine, elf::EM_AARCH64);
  EXPECT_EQ(info.identity.osabi, 3);
  EXPECT_EQ(info.needed, (std::vector<std::string>{"libfoo.so.1", "libbar.so"}));
  EXPECT_EQ(info.runpath, "/run/opengl-driver/lib:$ORIGIN/../lib");
  EXPECT_EQ(info.rpath, "/old/rpath");
  EXPECT_EQ(info.soname, "libme.so.2");
  EXPECT_TRUE(info.nodeflib());
  EXPECT_EQ(info.spare_dynamic_slots, 3u);
  EXPECT_TRUE(info.is_shared_library());
  EXPECT_EQ(info.kind(), "shared");
  EXPECT_EQ(info.shnum, 4u);
}

TEST_P(ReaderAllTargets, PieExecutableWithoutSectionHeaders) {
  auto s = spec();
  s.interpreter = "/lib/ld-linux.so.2";
  s.needed = {"libc.so.6"};
  s.flags_1 = elf::DF_1_PIE;
  s.with_section_headers = false;
  ElfInfo info = read_ok(build_synthetic_elf(s).bytes);
  EXPECT_EQ(info.interpreter, "/lib/ld-linux.so.2");
  EXPECT_TRUE(info.is_pie());
  EXPECT_FALSE(info.is_shared_library());
  EXPECT_EQ(info.kind(), "pie");
  EXPECT_EQ(info.shnum, 0u);
  EXPECT_FALSE(info.runpath.has_value());
}

TEST_P(ReaderAllTargets, StaticExecutableHasNoDynamic) {
  auto s = spec();
  s.type = elf::ET_EXEC;
  s.with_dynamic = false;
  ElfInfo info = read_ok(build_synthetic_elf(s).bytes);
  EXPECT_TRUE(info.is_static());
  EXPECT_EQ(info.kind(), "static");
  EXPECT_TRUE(info.needed.empty());
}

TEST_P(ReaderAllTargets, EmptyRunpathIsDistinctFromNone) {
  auto s = spec();
  s.runpath = "";
  ElfInfo info = read_ok(build_synthetic_elf(s).bytes);
  ASSERT_TRUE(info.runpath.has_value());
  EXPECT_EQ(*info.runpath, "");
}

INSTANTIATE_TEST_SUITE_P(Targets, ReaderAllTargets, ::testing::ValuesIn(every_elf_flavour()), FlavourTestName());

TEST(Reader, LegacyPieWithoutFlagIsRecognisedByInterpreter) {
  SyntheticSpec s;
  s.interpreter = "/lib64/ld-linux-x86-64.so.2";
  auto info = read_elf_info(build_synthetic_elf(s).bytes, "pie");
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->is_pie());
  s.soname = "libc.so.6";  // libc has an interpreter too, but is a library
  info = read_elf_info(build_synthetic_elf(s).bytes, "libc");
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->is_shared_library());
}

}  // namespace
}  // namespace runpatch
