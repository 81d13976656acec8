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

TEST(L4tVersions, FindByJetpackExactOrPrefix) {
  ASSERT_NE(find_jetpack("6.2.1"), nullptr);
  EXPECT_EQ(find_jetpack("6.2.1")->l4t, (L4tVersion{36, 4, 4}));
  ASSERT_NE(find_jetpack("6"), nullptr);
  EXPECT_EQ(find_jetpack("6")->jetpack, "6.2.1");
  ASSERT_NE(find_jetpack("5.1"), nullptr);
  EXPECT_EQ(find_jetpack("5.1")->jetpack, "5.1.5");
  ASSERT_NE(find_jetpack("7"), nullptr);
  EXPECT_EQ(find_jetpack("7")->jetpack, "7.0");
  EXPECT_EQ(find_jetpack("6.0"), nullptr);  // not a row
  EXPECT_EQ(find_jetpack("6.2.10"), nullptr);
  EXPECT_EQ(find_jetpack("62"), nullptr);  // a prefix must end at a dot
  EXPECT_EQ(find_jetpack(""), nullptr);
  EXPECT_EQ(find_jetpack("4.6"), nullptr);
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
