// The driver and compat policies on the CUDA-like fixture package of every
// arch: same runpath in both orders, compat first, no stubs, idempotent, and
// the program (run natively or under qemu-user) loads the libcuda chosen.
#include <gtest/gtest.h>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "runpatch/policy/policy.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::runpath;

namespace fs = std::filesystem;

class PolicyPackage : public ::testing::TestWithParam<test::FixtureArch> {
 protected:
  void SetUp() override {
    if (!test::can_run(GetParam())) GTEST_SKIP() << GetParam().qemu << " is not installed";
  }
  // pkg/ with bin and lib; the compat copy in a cuda_compat-named store path.
  fs::path stage(const std::string& name) {
    fs::path root = test::scratch_dir("policy/" + GetParam().name + "/" + name);
    fs::copy(GetParam().dir / "cuda-pkg", root / "pkg", fs::copy_options::recursive);
    fs::create_directories(root / "store/aaa-cuda_compat-12.8");
    fs::rename(root / "pkg/compat", compat_dir(root));
    return root;
  }
  static fs::path compat_dir(const fs::path& root) { return root / "store/aaa-cuda_compat-12.8/compat"; }
  static RunpathPolicy driver(const fs::path& root) {
    RunpathPolicy p;
    p.driver = true;
    p.driver_dirs = {(root / "pkg/driver").string()};
    return p;
  }
  static RunpathPolicy compat(const fs::path& root) {
    RunpathPolicy p;
    p.compat_dirs = {compat_dir(root).string()};
    p.driver_dirs = {(root / "pkg/driver").string()};
    return p;
  }
  static void apply(const RunpathPolicy& p, const fs::path& root) {
    auto run = apply_policy_to_paths(p, {root / "pkg/bin", root / "pkg/lib"});
    ASSERT_EQ(run.failed, 0u);
    ASSERT_TRUE(run.problems.empty());
  }
};

TEST_P(PolicyPackage, CompatAheadOfDriverInBothOrdersAndIdempotent) {
  fs::path a = stage("driver-then-compat"), b = stage("compat-then-driver");
  apply(driver(a), a);
  apply(compat(a), a);
  apply(compat(b), b);
  apply(driver(b), b);
  for (const auto& root : {a, b}) {
    SCOPED_TRACE(root.string());
    std::string expected = compat_dir(root).string() + ":" + (root / "pkg/driver").string();
    EXPECT_EQ(runpath(root / "pkg/lib/libcudart.so.13"), expected);
    EXPECT_EQ(runpath(root / "pkg/bin/cuda-prog"), expected + ":$ORIGIN/../lib");
    auto r = test::run_program(GetParam(), root / "pkg/bin/cuda-prog");
    EXPECT_EQ(r.output, "libcuda: compat\n");
    for (const char* file : {"pkg/bin/cuda-prog", "pkg/lib/libcudart.so.13", "pkg/lib/stubs/libcuda.so"})
      EXPECT_EQ(runpath(root / file).find("stubs"), std::string::npos) << file;
    auto again = apply_policy_to_paths(driver(root), {root / "pkg/bin", root / "pkg/lib"});
    EXPECT_EQ(again.edited, 0u);
    EXPECT_EQ(again.unchanged, 3u);
  }
}

TEST_P(PolicyPackage, DriverAloneLoadsTheDriversLibcuda) {
  fs::path root = stage("driver-only");
  auto before = test::run_program(GetParam(), root / "pkg/bin/cuda-prog");
  EXPECT_EQ(before.output, "libcuda: not found\n") << "the stub must never be what loads";
  apply(driver(root), root);
  EXPECT_EQ(test::run_program(GetParam(), root / "pkg/bin/cuda-prog").output, "libcuda: driver\n");
  // Compat in the runpath but gone from disk: the driver's copy is next in line.
  apply(compat(root), root);
  fs::remove_all(compat_dir(root));
  EXPECT_EQ(test::run_program(GetParam(), root / "pkg/bin/cuda-prog").output, "libcuda: driver\n");
}

TEST_P(PolicyPackage, StaticFilesAreSkippedAndCounted) {
  fs::path root = stage("static");
  fs::copy_file(GetParam().dir / "prog-static", root / "pkg/bin/static-tool");
  auto run = apply_policy_to_paths(driver(root), {root / "pkg"});
  EXPECT_EQ(run.skipped_static, 1u);
  EXPECT_EQ(run.failed, 0u);
  EXPECT_EQ(run.edited, 4u);  // program, libcudart, stub, the driver libcuda (compat lives outside pkg/)
}

INSTANTIATE_TEST_SUITE_P(Arches, PolicyPackage, ::testing::ValuesIn(test::fixture_arches()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace runpatch
