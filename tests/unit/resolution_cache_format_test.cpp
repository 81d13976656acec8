// The resolution-cache descriptor: byte layout, decoding of bad input, and
// which runpath entries the builder records for each DT_NEEDED.
#include <gtest/gtest.h>

#include <fstream>

#include "elf_image.hpp"
#include "fixtures.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "synthetic_elf.hpp"
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

// On synthetic libraries: an x86-64 libgreet.so, and an aarch64 one of the
// same name as the decoy the loader skips.
class ResolutionCacheBuilder : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::scratch_dir(std::string("unit/resolution-cache-builder/") +
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto read = read_elf_info(host_library_, "libgreet.so");
    ASSERT_TRUE(read) << read.error().message();
    identity_ = read->identity;
  }
  void put(const std::string& dir, const std::vector<uint8_t>& library, const std::string& name = "libgreet.so") {
    test::write_file(root_ / dir.substr(1) / name, library);
  }
  ResolutionCache build(const std::string& runpath, std::vector<std::string> needed = {"libgreet.so"}) {
    return build_resolution_cache({std::move(needed), runpath, identity_}, root_);
  }

  const std::vector<uint8_t> host_library_ =
      test::build_elf_image(test::library_image({true, false}, elf::EM_X86_64, "libgreet.so")).bytes;
  const std::vector<uint8_t> foreign_library_ =
      test::build_elf_image(test::library_image({true, false}, elf::EM_AARCH64, "libgreet.so")).bytes;
  fs::path root_;
  ElfIdentity identity_;
};

TEST_F(ResolutionCacheBuilder, RecordsWhereTheLoaderFindsEachName) {
  put("/a", host_library_);
  put("/b", host_library_);
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
  put("/a", host_library_);
  // Names with a slash are opened as they are; names found nowhere have no entry.
  EXPECT_EQ(build("/a", {"/abs/libx.so", "libnothere.so", "libgreet.so", "libgreet.so"}),
            (ResolutionCache{{"libgreet.so", {"=/a/libgreet.so"}}}));
  // Nothing to say: an empty cache, and the reason no note is written.
  ResolutionCacheInputs none{{"libnothere.so"}, "/a", identity_};
  EXPECT_NE(resolution_cache_unavailable_reason(none, build_resolution_cache(none, root_)), "");
  EXPECT_EQ(resolution_cache_unavailable_reason({{}, "/a", identity_}, {}), "no DT_NEEDED");
  EXPECT_EQ(resolution_cache_unavailable_reason({{"libgreet.so"}, "", identity_}, {}), "no runpath");
  // A library of another machine is skipped by the loader: not recorded.
  put("/decoy", foreign_library_);
  EXPECT_EQ(build("/decoy:/a"), (ResolutionCache{{"libgreet.so", {"=/a/libgreet.so"}}}));
}

TEST_F(ResolutionCacheBuilder, SortsByNameInByteOrder) {
  for (const char* name : {"libz.so", "libB.so", "liba.so"}) put("/m", host_library_, name);
  auto cache = build("/m", {"libz.so", "liba.so", "libB.so"});
  ASSERT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache[0].needed, "libB.so");
  EXPECT_EQ(cache[1].needed, "liba.so");
  EXPECT_EQ(cache[2].needed, "libz.so");
}

}  // namespace
}  // namespace runpatch
