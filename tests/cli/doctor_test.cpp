// runpatch doctor against fake machines: a fixture CUDA package, driver and
// compat libcuda copies named by version, and a fake /proc. One test per verdict.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "strict_json.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/diagnosing/doctor.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKernel = "580.159.04";

class Doctor : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = test::fixture_arches().at(0);
    root_ = fs::absolute(
        test::scratch_dir(std::string("doctor/") + ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::copy(host_.dir / "cuda-pkg", root_ / "pkg", fs::copy_options::recursive);
    // libcuda.so.1 -> libcuda.so.<version>, as the driver and cuda_compat install it.
    version_library(root_ / "pkg/driver", kKernel);
    version_library(root_ / "pkg/compat", "580.95.05");
    prog_ = root_ / "pkg/bin/cuda-prog";
    cudart_ = root_ / "pkg/lib/libcudart.so.13";
    fake_proc(kKernel, "NVIDIA H100 80GB HBM3");
  }

  static void version_library(const fs::path& dir, const std::string& version) {
    fs::rename(dir / "libcuda.so.1", dir / ("libcuda.so." + version));
    fs::create_symlink("libcuda.so." + version, dir / "libcuda.so.1");
  }

  void fake_proc(const std::optional<std::string>& kernel, const std::string& model) {
    fs::remove_all(root_ / "proc");
    fs::create_directories(root_ / "proc/proc/driver/nvidia/gpus/0000:01:00.0");
    if (kernel) {
      std::string line = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + *kernel + "  Thu Sep 25 2025\n";
      test::write_file(root_ / "proc/proc/driver/nvidia/version", std::vector<uint8_t>(line.begin(), line.end()));
    }
    std::string info = "Model: \t\t " + model + "\nIRQ:   42\n";
    test::write_file(root_ / "proc/proc/driver/nvidia/gpus/0000:01:00.0/information",
                     std::vector<uint8_t>(info.begin(), info.end()));
  }

  void set_runpath(const fs::path& file, const std::string& runpath) {
    EditRequest r;
    r.runpath = set_runpath_update(runpath);
    ASSERT_TRUE(edit_elf_file(file, r));
  }

  // Runs `runpatch doctor --json` on the program; returns the load of libcuda and the exit code.
  std::pair<nlohmann::json, int> doctor(const fs::path& file, std::optional<std::string> ld_library_path = {}) {
    std::vector<std::string> args = {RUNPATCH_CLI, "doctor", "--json", "--proc-root", (root_ / "proc").string(),
                                     file.string()};
    if (ld_library_path)
      args.insert(args.end(), {"--ld-library-path", *ld_library_path});
    else
      args.push_back("--ignore-environment");
    auto r = test::run_command(args);
    auto json = test::parse_json(r.output);
    EXPECT_FALSE(json.is_discarded()) << r.output;
    if (json.is_discarded() || json["files"].empty() || json["files"][0]["loads"].empty()) return {json, r.exit_code};
    return {json["files"][0]["loads"][0], r.exit_code};
  }

  // Runs the program as doctor was asked about it; the fixture libcuda
  // copies print which one they are ("libcuda: driver", "... compat", ...).
  std::string run(const fs::path& file, std::optional<std::string> ld_library_path = {}) {
    std::vector<std::string> argv = {"env"};
    if (ld_library_path)
      argv.push_back("LD_LIBRARY_PATH=" + *ld_library_path);
    else
      argv.insert(argv.end(), {"-u", "LD_LIBRARY_PATH"});
    argv.push_back(file.string());
    return test::run_command(argv).output;
  }

  std::string driver_dir() const { return (root_ / "pkg/driver").string(); }
  std::string compat_dir() const { return (root_ / "pkg/compat").string(); }

  test::FixtureArch host_;
  fs::path root_, prog_, cudart_;
};

TEST_F(Doctor, DriverFirstIsOk) {
  set_runpath(cudart_, driver_dir());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 0) << load.dump(2);
  EXPECT_EQ(load["verdict"], "ok");
  EXPECT_EQ(load["how"], "dlopen by libcudart.so.13");
  EXPECT_EQ(load["chosen"]["path"], driver_dir() + "/libcuda.so.1");
  EXPECT_EQ(load["chosen"]["version"], kKernel);
  EXPECT_EQ(run(prog_), "libcuda: driver\n");  // what the patched program really loads
}

TEST_F(Doctor, OlderCompatAheadOfTheDriverFailsWith803AndShadowsTheDriver) {
  set_runpath(cudart_, compat_dir() + ":" + driver_dir());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(load["verdict"], "compat-older-than-driver");
  EXPECT_EQ(load["chosen"]["compat"], true);
  ASSERT_EQ(load["shadowed"].size(), 1u) << load.dump(2);
  EXPECT_EQ(load["shadowed"][0]["path"], driver_dir() + "/libcuda.so.1");
  EXPECT_NE(load["explanation"].get<std::string>().find("803"), std::string::npos);
  EXPECT_NE(load["fix"].get<std::string>().find("cuda_compat"), std::string::npos);
  EXPECT_EQ(run(prog_), "libcuda: compat\n");
}

TEST_F(Doctor, NewerCompatIsForwardCompatibleOnDatacenterGpus) {
  fake_proc("535.104.05", "NVIDIA A100-SXM4-80GB");
  set_runpath(cudart_, compat_dir() + ":" + driver_dir());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 0) << load.dump(2);
  EXPECT_EQ(load["verdict"], "ok");
  EXPECT_EQ(load["chosen"]["compat"], true);
}

TEST_F(Doctor, CompatOnAGeForceIsRefused) {
  fake_proc("535.104.05", "NVIDIA GeForce RTX 4090");
  set_runpath(cudart_, compat_dir() + ":" + driver_dir());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(load["verdict"], "compat-unsupported-gpu");
}

TEST_F(Doctor, LdLibraryPathOverridesTheRunpath) {
  // The runpath would pick the (older) compat library; LD_LIBRARY_PATH wins, as on that H100 host.
  set_runpath(cudart_, compat_dir() + ":" + driver_dir());
  auto [load, status] = doctor(prog_, driver_dir());
  EXPECT_EQ(status, 0) << load.dump(2);
  EXPECT_EQ(load["chosen"]["rule"], "LD_LIBRARY_PATH");
  ASSERT_FALSE(load["shadowed"].empty());
  EXPECT_EQ(load["shadowed"][0]["compat"], true);
  EXPECT_EQ(run(prog_, driver_dir()), "libcuda: driver\n");
  // ... and the other way round: LD_LIBRARY_PATH names the compat dir.
  set_runpath(cudart_, driver_dir());
  auto [load2, status2] = doctor(prog_, compat_dir());
  EXPECT_EQ(status2, 1);
  EXPECT_EQ(load2["verdict"], "compat-older-than-driver");
  EXPECT_NE(load2["fix"].get<std::string>().find("unset LD_LIBRARY_PATH"), std::string::npos);
  EXPECT_EQ(run(prog_, compat_dir()), "libcuda: compat\n");
}

TEST_F(Doctor, NothingFound) {
  set_runpath(cudart_, (root_ / "pkg/lib").string());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(load["verdict"], "no-libcuda");
  EXPECT_TRUE(load["chosen"].is_null());
  EXPECT_EQ(run(prog_), "libcuda: not found\n");
}

TEST_F(Doctor, StubChosen) {
  fs::create_symlink("libcuda.so", root_ / "pkg/lib/stubs/libcuda.so.1");
  set_runpath(cudart_, (root_ / "pkg/lib/stubs").string() + ":" + driver_dir());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(load["verdict"], "stub-libcuda");
  EXPECT_EQ(load["chosen"]["stub"], true);
  EXPECT_NE(load["fix"].get<std::string>().find("from the runpath"), std::string::npos) << load["fix"];
  EXPECT_EQ(run(prog_), "libcuda: stub\n");
  // The same stub reached through LD_LIBRARY_PATH: the fix names the variable, not the runpath.
  set_runpath(cudart_, driver_dir());
  auto [via_variable, status2] = doctor(prog_, (root_ / "pkg/lib/stubs").string());
  EXPECT_EQ(status2, 1);
  EXPECT_EQ(via_variable["verdict"], "stub-libcuda");
  EXPECT_EQ(via_variable["fix"], "remove the stubs directory from LD_LIBRARY_PATH");
  EXPECT_EQ(run(prog_, (root_ / "pkg/lib/stubs").string()), "libcuda: stub\n");
}

TEST_F(Doctor, NoKernelDriver) {
  fake_proc(std::nullopt, "");
  set_runpath(cudart_, driver_dir());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(load["verdict"], "no-kernel-driver");
}

TEST_F(Doctor, NoKernelDriverAndNoLibcudaBlamesTheDriver) {
  // A machine without the NVIDIA driver has no libcuda either: the missing driver is the cause.
  fake_proc(std::nullopt, "");
  set_runpath(cudart_, (root_ / "pkg/lib").string());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(load["verdict"], "no-kernel-driver") << load.dump(2);
  EXPECT_TRUE(load["chosen"].is_null());
  auto explanation = load["explanation"].get<std::string>();
  EXPECT_NE(explanation.find("no NVIDIA kernel driver"), std::string::npos) << explanation;
  EXPECT_NE(explanation.find("no libcuda.so.1"), std::string::npos) << explanation;
  EXPECT_NE(load["fix"].get<std::string>().find("runpatch driver"), std::string::npos) << load.dump(2);
}

TEST_F(Doctor, UserSpaceDriverOfAnotherVersion) {
  fake_proc("590.10.01", "NVIDIA H100 80GB HBM3");
  set_runpath(cudart_, driver_dir());
  auto [load, status] = doctor(prog_);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(load["verdict"], "driver-library-mismatch");
}

TEST_F(Doctor, StaticCudaRuntimeIsItsOwnLoader) {
  // A program with the CUDA runtime linked in dlopens libcuda.so.1 itself: its own runpath counts.
  fs::path src = root_ / "static_cudart.c";
  std::string code = "#include <dlfcn.h>\nint main(void) { return dlopen(\"libcuda.so.1\", 2) ? 0 : 1; }\n";
  test::write_file(src, std::vector<uint8_t>(code.begin(), code.end()));
  fs::path prog = root_ / "static-cudart-prog";
  auto cc = test::run_command(
      {"cc", "-o", prog.string(), src.string(), "-Wl,--enable-new-dtags,-rpath," + driver_dir()}, true);
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  auto [load, status] = doctor(prog);
  EXPECT_EQ(status, 0) << load.dump(2);
  EXPECT_EQ(load["how"], "dlopen by the static CUDA runtime");
  EXPECT_EQ(load["chosen"]["path"], driver_dir() + "/libcuda.so.1");
  EXPECT_EQ(test::run_command({"env", "-u", "LD_LIBRARY_PATH", prog.string()}).exit_code, 0);  // its dlopen succeeds
}

TEST_F(Doctor, ProgramsWithoutCudaAreSaidSoAndTreesSkipThem) {
  auto r = test::run_command({RUNPATCH_CLI, "doctor", "--proc-root", (root_ / "proc").string(), "--ignore-environment",
                              (host_.dir / "prog-pie").string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("not a CUDA program"), std::string::npos) << r.output;
  set_runpath(cudart_, driver_dir());
  auto tree = test::run_command({RUNPATCH_CLI, "doctor", "--proc-root", (root_ / "proc").string(),
                                 "--ignore-environment", (root_ / "pkg").string()});
  EXPECT_EQ(tree.exit_code, 0) << tree.output;
  EXPECT_NE(tree.output.find("cuda-prog"), std::string::npos) << tree.output;
  EXPECT_EQ(tree.output.find("not a CUDA program"), std::string::npos) << tree.output;
}

TEST(DoctorFacts, VersionsCompareNumerically) {
  EXPECT_EQ(compare_driver_versions("580.95.05", "580.159.04"), -1);
  EXPECT_EQ(compare_driver_versions("580.159.04", "580.159.04"), 0);
  EXPECT_EQ(compare_driver_versions("590.1", "580.159.04"), 1);
  EXPECT_EQ(compare_driver_versions("abc", "580.1"), std::nullopt);
}

TEST(DoctorFacts, SysModuleVersionIsTheFallback) {
  fs::path proc = test::scratch_dir("doctor-facts");
  fs::create_directories(proc / "sys/module/nvidia");
  test::write_file(proc / "sys/module/nvidia/version", {'5', '7', '0', '.', '8', '6', '.', '1', '5', '\n'});
  auto facts = read_driver_facts(proc);
  ASSERT_TRUE(facts.kernel_version);
  EXPECT_EQ(*facts.kernel_version, "570.86.15");
  EXPECT_FALSE(read_driver_facts(proc / "nothing").kernel_version);
}

}  // namespace
}  // namespace runpatch
