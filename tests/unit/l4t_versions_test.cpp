// The JetPack table: lookups by JetPack and by L4T release, and the ranges.
// Expected values are the rows of jetpack-nixos' "CUDA Version Mapping" table.
#include <gtest/gtest.h>

#include "runpatch/cuda/l4t_versions.hpp"

namespace runpatch {
namespace {

CudaVersion cuda(std::string_view text) { return parse_cuda_version(text).value(); }

TEST(L4tVersions, TheTableRows) {
  struct Row {
    const char* jetpack;
    const char* l4t;
    const char* native;
    const char* range;
  };
  const Row expected[] = {
      {"5.1.5", "35.6.2", "11.4", "native CUDA 11.4, cuda_compat up to 12.2"},
      {"6.2.1", "36.4.4", "12.6", "native CUDA 12.6, cuda_compat 12.4-12.9"},
      {"7.0", "38.2.1", "13.0", "native CUDA 13.0, no cuda_compat"},
  };
  ASSERT_EQ(jetpack_releases().size(), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    const auto& r = jetpack_releases()[i];
    EXPECT_EQ(r.jetpack, expected[i].jetpack);
    EXPECT_EQ(l4t_version_text(r.l4t), expected[i].l4t);
    EXPECT_EQ(cuda_version_text(r.native_cuda), expected[i].native);
    EXPECT_EQ(describe_cuda_range(r), expected[i].range);
  }
}

// One parser for JetPack and L4T releases; one rule between rows: the row
// of the release's line, not exact unless it is that release (or a bare line).
TEST(L4tVersions, FindAReleaseByItsLine) {
  struct Row {
    const char* asked;
    const char* row;  // nullptr: no line runpatch knows
    bool exact;
  };
  const Row rows[] = {
      {"6.2.1", "6.2.1", true},   {"6", "6.2.1", true},       {"6.2", "6.2.1", false},   {"6.0", "6.2.1", false},
      {"6.2.10", "6.2.1", false}, {"5.1.2", "5.1.5", false},  {"5.1.5", "5.1.5", true},  {"7", "7.0", true},
      {"7.0", "7.0", true},       {"R36.4.4", "6.2.1", true}, {"36.4.4", "6.2.1", true}, {"R36.3.0", "6.2.1", false},
      {"R36", "6.2.1", true},     {"r35.6.2", "5.1.5", true}, {"R38.2.1", "7.0", true},  {"62", nullptr, false},
      {"", nullptr, false},       {"4.6", nullptr, false},    {"6.x", nullptr, false},   {"R32.7.1", nullptr, false},
  };
  for (const auto& r : rows) {
    auto found = find_jetpack_release(r.asked);
    if (!r.row) {
      EXPECT_FALSE(found) << r.asked;
      continue;
    }
    ASSERT_TRUE(found) << r.asked;
    EXPECT_EQ(found->release->jetpack, r.row) << r.asked;
    EXPECT_EQ(found->exact, r.exact) << r.asked;
    EXPECT_EQ(find_jetpack(r.asked), found->release) << r.asked;
  }
}

TEST(L4tVersions, FindByL4tReleaseLine) {
  auto exact = find_l4t(*parse_l4t_version("R36.4.4"));
  ASSERT_NE(exact.release, nullptr);
  EXPECT_EQ(exact.release->jetpack, "6.2.1");
  EXPECT_TRUE(exact.exact);
  auto line = find_l4t(*parse_l4t_version("36.4.3"));
  ASSERT_NE(line.release, nullptr);
  EXPECT_EQ(line.release->jetpack, "6.2.1");
  EXPECT_FALSE(line.exact);
  EXPECT_EQ(find_l4t(*parse_l4t_version("35.6.2")).release->jetpack, "5.1.5");
  EXPECT_EQ(find_l4t(*parse_l4t_version("38.2.1")).release->jetpack, "7.0");
  EXPECT_EQ(find_l4t(*parse_l4t_version("32.7.4")).release, nullptr);  // JetPack 4: not in the table
}

TEST(L4tVersions, Parsing) {
  EXPECT_EQ(parse_l4t_version("36.4"), (L4tVersion{36, 4, 0}));
  EXPECT_EQ(parse_l4t_version("r35.6.2"), (L4tVersion{35, 6, 2}));
  EXPECT_FALSE(parse_l4t_version("36"));
  EXPECT_FALSE(parse_l4t_version("36.4.4.1"));
  EXPECT_FALSE(parse_l4t_version("36..4"));
  EXPECT_FALSE(parse_l4t_version("R36.x"));
  EXPECT_FALSE(parse_l4t_version(""));
  EXPECT_EQ(parse_cuda_version("12.6.85"), (CudaVersion{12, 6}));
  EXPECT_EQ(parse_cuda_version("13"), (CudaVersion{13, std::nullopt}));
  EXPECT_FALSE(parse_cuda_version("12.a"));
  EXPECT_FALSE(parse_cuda_version("123456"));
  EXPECT_FALSE(parse_cuda_version("12."));
}

TEST(L4tVersions, CompatRange) {
  const auto& jp5 = *find_jetpack("5.1.5");
  const auto& jp6 = *find_jetpack("6.2.1");
  const auto& jp7 = *find_jetpack("7.0");
  EXPECT_TRUE(compat_in_range(jp5, cuda("12.2")));
  EXPECT_TRUE(compat_in_range(jp5, cuda("11.8")));
  EXPECT_FALSE(compat_in_range(jp5, cuda("12.4")));
  EXPECT_TRUE(compat_in_range(jp6, cuda("12.4")));
  EXPECT_TRUE(compat_in_range(jp6, cuda("12.9")));
  EXPECT_FALSE(compat_in_range(jp6, cuda("12.2")));
  EXPECT_FALSE(compat_in_range(jp6, cuda("13.0")));
  EXPECT_TRUE(compat_in_range(jp6, cuda("12")));     // major only: within 12.x
  EXPECT_FALSE(compat_in_range(jp7, cuda("13.0")));  // JetPack 7 has no cuda_compat
}

TEST(L4tVersions, PackageSetRange) {
  const auto& jp5 = *find_jetpack("5.1.5");
  const auto& jp6 = *find_jetpack("6.2.1");
  const auto& jp7 = *find_jetpack("7.0");
  EXPECT_TRUE(package_set_runs(jp5, cuda("11.4")));
  EXPECT_TRUE(package_set_runs(jp5, cuda("12")));
  EXPECT_FALSE(package_set_runs(jp5, cuda("12.8")));
  EXPECT_FALSE(package_set_runs(jp5, cuda("13")));
  EXPECT_TRUE(package_set_runs(jp6, cuda("12")));
  EXPECT_TRUE(package_set_runs(jp6, cuda("12.9")));
  EXPECT_FALSE(package_set_runs(jp6, cuda("13")));
  EXPECT_FALSE(package_set_runs(jp6, cuda("11")));
  EXPECT_TRUE(package_set_runs(jp7, cuda("13")));
  EXPECT_FALSE(package_set_runs(jp7, cuda("12")));
}

TEST(L4tVersions, DriverLibrariesOfL4t) {
  EXPECT_TRUE(is_l4t_driver_library("libnvrm_mem.so"));
  EXPECT_TRUE(is_l4t_driver_library("libnvrm_gpu.so"));
  EXPECT_TRUE(is_l4t_driver_library("libnvdla_runtime.so"));
  EXPECT_FALSE(is_l4t_driver_library("libnvrtc.so.12"));  // the toolkit's
  EXPECT_FALSE(is_l4t_driver_library("libc.so.6"));
  EXPECT_FALSE(is_l4t_driver_library("libnvrm"));
}

}  // namespace
}  // namespace runpatch
