// The reader agrees with readelf on every fixture of every arch.
#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "oracle_compare.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {
namespace {

TEST(FixtureOracle, EveryArchWasBuiltOrSkippedWithAReason) {
  for (const auto& reason : test::skipped_arches()) std::cout << "[ SKIPPED arch ] " << reason << "\n";
  ASSERT_FALSE(test::fixture_arches().empty()) << "no fixture arch was built, not even the host";
  EXPECT_EQ(test::fixture_arches()[0].name, "x86_64");
}

TEST(FixtureOracle, ReaderMatchesReadelfOnEveryFixture) {
  int compared = 0;
  for (const auto& arch : test::fixture_arches()) {
    for (const auto& name : test::fixture_names()) {
      auto path = arch.dir / name;
      ASSERT_TRUE(std::filesystem::exists(path)) << path;
      EXPECT_EQ(test::compare_with_readelf(path), "");
      ++compared;
    }
  }
  EXPECT_GE(compared, 10);
}

TEST(FixtureOracle, FixtureKindsAreWhatTheirNamesSay) {
  for (const auto& arch : test::fixture_arches()) {
    SCOPED_TRACE(arch.name);
    auto read = [&](const char* name) {
      auto info = read_elf_info(arch.dir / name);
      EXPECT_TRUE(info) << info.error().message();
      return info ? *info : ElfInfo{};
    };
    EXPECT_EQ(read("prog-static").kind(), "static");
    EXPECT_EQ(read("prog-pie").kind(), "pie");
    EXPECT_EQ(read("prog-nopie").kind(), "exec");
    EXPECT_EQ(read("lib/libgreet.so").kind(), "shared");
    EXPECT_EQ(read("lib/libgreet.so").soname, "libgreet.so");
    EXPECT_FALSE(read("libnosoname.so").soname.has_value());
    EXPECT_EQ(read("prog-rpath").rpath, "$ORIGIN/lib");
    EXPECT_FALSE(read("prog-rpath").runpath.has_value());
    EXPECT_EQ(read("prog-pie").runpath, "$ORIGIN/lib");
    EXPECT_GT(read("prog-longrunpath").runpath->size(), 1000u);
    EXPECT_EQ(read("prog-stripped").shnum, 0u);
    EXPECT_EQ(read("prog-stripped").runpath, "$ORIGIN/lib");
  }
}

}  // namespace
}  // namespace runpatch
