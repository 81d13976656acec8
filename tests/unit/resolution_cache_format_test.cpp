// The resolution-cache descriptor: byte layout, decoding of bad input, and
// which runpath entries the builder records for each DT_NEEDED.
#include <gtest/gtest.h>

#include <fstream>

#include "fixtures.hpp"
#include "runpatch/resolving/resolution_cache.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> bytes_of(std::string_view text) { return {text.begin(), text.end()}; }

TEST(ResolutionCacheFormat, EncodesSortedPairsAndAClosingNul) {
  ResolutionCache cache = {{"liba.so", {"=/x/liba.so", "?"}}, {"libb.so", {"?$ORIGIN/lib"}}};
  using namespace std::string_view_literals;
  EXPECT_EQ(encode_resolution_cache(cache), bytes_of("liba.so\0=/x/liba.so:?\0libb.so\0?$ORIGIN/lib\0\0"sv));
  auto decoded = decode_resolution_cache(encode_resolution_cache(cache));
  ASSERT_TRUE(decoded) << decoded.error().what;
  EXPECT_EQ(*decoded, cache);
}

TEST(ResolutionCacheFormat, EmptyDescriptorIsAnEmptyCache) {
  // The "\0\0" descriptor some linkers' hand-made notes carry.
  using namespace std::string_view_literals;
  auto decoded = decode_resolution_cache(bytes_of("\0\0"sv));
  ASSERT_TRUE(decoded);
  EXPECT_TRUE(decoded->empty());
}

TEST(ResolutionCacheFormat, RejectsMalformedDescriptors) {
  using namespace std::string_view_literals;
  struct Case {
    std::string_view bytes;
    std::string needle;
  };
  for (const auto& c :
       {Case{""sv, "closing NUL"}, Case{"liba.so\0=/a\0"sv, "closing NUL"}, Case{"liba.so"sv, "not NUL-terminated"},
        Case{"liba.so\0=/a"sv, "not NUL-terminated"}, Case{"liba.so\0/a\0\0"sv, "neither '=' nor '?'"},
        Case{"liba.so\0=/a::?\0\0"sv, "neither"}, Case{"libb.so\0?\0liba.so\0?\0\0"sv, "out of order"},
        Case{"liba.so\0?\0liba.so\0?\0\0"sv, "out of order or repeated"}}) {
    auto decoded = decode_resolution_cache(bytes_of(c.bytes));
    ASSERT_FALSE(decoded) << "accepted: " << std::string(c.bytes);
    EXPECT_NE(decoded.error().what.find(c.needle), std::string::npos) << decoded.error().what;
  }
}

class ResolutionCacheBuilder : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::scratch_dir(std::string("unit/resolution-cache-builder/") +
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const auto& arch : test::fixture_arches()) {
      if (arch.qemu == "-")
        host_ = arch;
      else if (!foreign_)
        foreign_ = arch;
    }
    if (!host_) GTEST_SKIP() << "no host fixtures";
    identity_ = read_elf_info(host_->dir / "lib/libgreet.so")->identity;
  }
  void put(const std::string& dir, const fs::path& from, const std::string& name = "libgreet.so") {
    fs::create_directories(root_ / dir.substr(1));
    fs::copy_file(from, root_ / dir.substr(1) / name);
  }
  ResolutionCache build(const std::string& runpath, std::vector<std::string> needed = {"libgreet.so"}) {
    return build_resolution_cache({std::move(needed), runpath, identity_}, root_);
  }

  fs::path root_;
  std::optional<test::FixtureArch> host_, foreign_;
  ElfIdentity identity_;
};

TEST_F(ResolutionCacheBuilder, RecordsWhereTheLoaderFindsEachName) {
  put("/a", host_->dir / "lib/libgreet.so");
  put("/b", host_->dir / "lib/libgreet.so");
  fs::create_directories(root_ / "empty");
  fs::create_directories(root_ / "hw/glibc-hwcaps");
  // Found in two directories: both, in runpath order (the loader goes on when one fails).
  EXPECT_EQ(build("/empty:/a:/b/"), (ResolutionCache{{"libgreet.so", {"=/a/libgreet.so", "=/b/libgreet.so"}}}));
  // Decided at run time: missing, relative, empty, tokens, hwcaps.
  EXPECT_EQ(build("/missing:rel:$ORIGIN/x::/hw:/a"),
            (ResolutionCache{{"libgreet.so", {"?/missing", "?rel", "?$ORIGIN/x", "?", "?/hw", "=/a/libgreet.so"}}}));
  // A trailing empty entry keeps its place.
  EXPECT_EQ(build("/a:"), (ResolutionCache{{"libgreet.so", {"=/a/libgreet.so", "?"}}}));
}

TEST_F(ResolutionCacheBuilder, LeavesOutWhatTheLoaderWouldNotUse) {
  put("/a", host_->dir / "lib/libgreet.so");
  // Names with a slash are opened as they are; names found nowhere have no entry.
  EXPECT_EQ(build("/a", {"/abs/libx.so", "libnothere.so", "libgreet.so", "libgreet.so"}),
            (ResolutionCache{{"libgreet.so", {"=/a/libgreet.so"}}}));
  // Nothing to say: an empty cache, and the reason no note is written.
  ResolutionCacheInputs none{{"libnothere.so"}, "/a", identity_};
  EXPECT_NE(resolution_cache_unavailable_reason(none, build_resolution_cache(none, root_)), "");
  EXPECT_EQ(resolution_cache_unavailable_reason({{}, "/a", identity_}, {}), "no DT_NEEDED");
  EXPECT_EQ(resolution_cache_unavailable_reason({{"libgreet.so"}, "", identity_}, {}), "no runpath");
  if (!foreign_) GTEST_SKIP() << "no cross fixtures: wrong-machine decoy not tested";
  // A library of another machine is skipped by the loader: not recorded.
  put("/decoy", foreign_->dir / "lib/libgreet.so");
  EXPECT_EQ(build("/decoy:/a"), (ResolutionCache{{"libgreet.so", {"=/a/libgreet.so"}}}));
}

TEST_F(ResolutionCacheBuilder, SortsByNameInByteOrder) {
  for (const char* name : {"libz.so", "libB.so", "liba.so"}) put("/m", host_->dir / "lib/libgreet.so", name);
  auto cache = build("/m", {"libz.so", "liba.so", "libB.so"});
  ASSERT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache[0].needed, "libB.so");
  EXPECT_EQ(cache[1].needed, "liba.so");
  EXPECT_EQ(cache[2].needed, "libz.so");
}

}  // namespace
}  // namespace runpatch
