// runpatch doctor on fake Jetsons: an aarch64 CUDA-like package inside a fake
// L4T root (/etc/nv_tegra_release, /proc/modules with nvgpu, the device tree),
// the driver's libcuda in an l4t-cuda store path behind /run/opengl-driver/lib
// with libnvrm_mem/libnvrm_gpu, and a cuda_compat libcuda that needs them.
// The programs run under qemu-aarch64 to show what doctor predicts.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "strict_json.hpp"
#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/diagnosing/doctor.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

const std::string kCompatStore = "nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-cuda_compat-12.9.1";
const std::string kL4tCudaStore = "nix/store/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-l4t-cuda-36.4.4";

template <size_t N>
std::string with_nuls(const char (&text)[N]) {  // a device-tree string list, NULs included
  return std::string(text, N - 1);
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  test::write_file(path, std::vector<uint8_t>(text.begin(), text.end()));
}

class DoctorL4t : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& arch : test::fixture_arches())
      if (arch.name == "aarch64") arch_ = arch;
    if (arch_.name.empty()) GTEST_SKIP() << "no aarch64 fixtures (cross compiler missing)";
    root_ = fs::absolute(test::scratch_dir(std::string("doctor-l4t/") +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::copy(arch_.dir / "cuda-pkg", root_ / "pkg", fs::copy_options::recursive);
    // The driver: l4t-cuda's libcuda and libnvrm_*, linked from /run/opengl-driver/lib as on NixOS.
    fs::path driver = root_ / kL4tCudaStore / "lib";
    fs::create_directories(driver);
    fs::copy_file(arch_.dir / "cuda-pkg/driver/libcuda.so.1", driver / "libcuda.so.1");
    for (const char* nvrm : {"libnvrm_mem.so", "libnvrm_gpu.so"})
      fs::copy_file(arch_.dir / "l4t/nvrm" / nvrm, driver / nvrm);
    fs::create_directories(root_ / "run/opengl-driver");
    fs::create_symlink("../../" + kL4tCudaStore + "/lib", root_ / "run/opengl-driver/lib");
    fs::create_directories(root_ / kCompatStore / "compat");
    fs::copy_file(arch_.dir / "l4t/compat/libcuda.so.1", root_ / kCompatStore / "compat/libcuda.so.1");
    cudart_ = root_ / "pkg/lib/libcudart.so.13";
    prog_ = root_ / "pkg/bin/cuda-prog";
    jetson("36", "4.4");
  }

  // An Orin with L4T R<release>.<revision>: nvgpu loaded, device tree, nv_tegra_release.
  void jetson(const std::string& release, const std::string& revision) {
    write_text(root_ / "etc/nv_tegra_release", "# R" + release + " (release), REVISION: " + revision +
                                                   ", GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 "
                                                   "01:49:37 UTC 2025\n# KERNEL_VARIANT: oot\n");
    write_text(root_ / "proc/modules", "nvmap 4096 1 - Live 0x0\nnvgpu 2871296 19 - Live 0x0\n");
    write_text(root_ / "proc/device-tree/compatible",
               with_nuls("nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0"));
  }

  // libcudart's runpath, $ORIGIN-relative so that it means the same under --root and when run here.
  void libcudart_searches(const std::vector<std::string>& dirs) {
    std::string runpath;
    for (const auto& d : dirs) runpath += (runpath.empty() ? "" : ":") + ("$ORIGIN/../../" + d);
    set_runpath(cudart_, runpath);
  }
  void compat_finds_driver() {
    set_runpath(root_ / kCompatStore / "compat/libcuda.so.1", "$ORIGIN/../../../../run/opengl-driver/lib");
  }
  static void set_runpath(const fs::path& file, const std::string& runpath) {
    EditRequest r;
    r.runpath = set_runpath_update(runpath);
    ASSERT_TRUE(edit_elf_file(file, r));
  }

  test::CommandResult doctor(bool json = true) {
    std::vector<std::string> args = {RUNPATCH_CLI,           "doctor",      "--root",
                                     root_.string(),         "--proc-root", root_.string(),
                                     "--ignore-environment", prog_.string()};
    if (json) args.insert(args.begin() + 2, "--json");
    return test::run_command(args);
  }
  // The whole JSON report, and the first libcuda load's verdict object.
  std::pair<nlohmann::json, nlohmann::json> doctor_json(int expected_status) {
    auto r = doctor();
    EXPECT_EQ(r.exit_code, expected_status) << r.output;
    auto json = test::parse_json(r.output);
    if (json.is_discarded() || json["files"].empty() || json["files"][0]["loads"].empty()) {
      ADD_FAILURE() << r.output;
      return {json, nlohmann::json::object()};
    }
    return {json, json["files"][0]["loads"][0]};
  }

  // What the program really loads, under qemu-aarch64.
  std::string run() {
    if (!test::can_run(arch_)) return "(cannot run " + arch_.name + ")";
    auto argv = test::runner(arch_);
    argv.push_back(prog_.string());
    return test::run_command(argv).output;
  }
  bool runs() const { return test::can_run(arch_); }

  test::FixtureArch arch_;
  fs::path root_, cudart_, prog_;
};

TEST_F(DoctorL4t, CompatInsideTheRangeWithItsDriverLibrariesIsOk) {
  libcudart_searches({kCompatStore + "/compat", "run/opengl-driver/lib"});
  compat_finds_driver();
  auto [json, load] = doctor_json(0);
  EXPECT_EQ(json["host_kind"], "l4t");
  EXPECT_EQ(json["driver"]["l4t"]["release"], "36.4.4");
  EXPECT_EQ(json["driver"]["l4t"]["soc"], "tegra234");
  EXPECT_EQ(json["driver"]["l4t"]["nvgpu"], true);
  EXPECT_EQ(json["driver"]["l4t"]["jetpack"]["jetpack"], "6.2.1");
  EXPECT_EQ(json["driver"]["l4t"]["jetpack"]["exact"], true);
  EXPECT_EQ(load["verdict"], "ok") << load.dump(2);
  EXPECT_EQ(load["chosen"]["compat"], true);
  EXPECT_NE(load["explanation"].get<std::string>().find("cuda_compat 12.9"), std::string::npos) << load.dump(2);
  if (runs()) {
    EXPECT_EQ(run(), "libcuda: compat\n");
  }
  // check agrees: the compat libcuda (little code, but it needs libnvrm_*) is no toolkit stub, and it finds its driver.
  auto check = test::run_command({RUNPATCH_CLI, "check", "--root", root_.string(), "--ignore-environment", "--disable",
                                  "unused-entry", prog_.string(), cudart_.string()});
  EXPECT_EQ(check.output.find("runtime-stub"), std::string::npos) << check.output;
  EXPECT_EQ(check.output.find("compat-needs-driver"), std::string::npos) << check.output;
  // The toolkit's stub is one wherever it lies: copied over the compat libcuda, it is reported.
  fs::copy_file(arch_.dir / "cuda-pkg/lib/stubs/libcuda.so", root_ / kCompatStore / "compat/libcuda.so.1",
                fs::copy_options::overwrite_existing);
  auto stub = test::run_command({RUNPATCH_CLI, "check", "--root", root_.string(), "--ignore-environment", "--disable",
                                 "unused-entry", cudart_.string()});
  EXPECT_NE(stub.output.find("runtime-stub"), std::string::npos) << stub.output;
}

TEST_F(DoctorL4t, CompatOutsideTheJetpack5Range) {
  jetson("35", "6.2");  // JetPack 5.1.5: cuda_compat only up to 12.2
  libcudart_searches({kCompatStore + "/compat", "run/opengl-driver/lib"});
  compat_finds_driver();
  auto [json, load] = doctor_json(1);
  EXPECT_EQ(json["driver"]["l4t"]["jetpack"]["jetpack"], "5.1.5");
  EXPECT_EQ(load["verdict"], "compat-outside-range") << load.dump(2);
  EXPECT_NE(load["explanation"].get<std::string>().find("up to 12.2"), std::string::npos) << load.dump(2);
}

TEST_F(DoctorL4t, Jetpack7HasNoCompatRangeAndItsOpenDriverHasAVersion) {
  jetson("38", "2.1");
  fs::remove(root_ / "proc/modules");  // JetPack 7: the open nvidia module, not nvgpu
  write_text(root_ / "proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.00  "
             "Release Build\n");
  libcudart_searches({kCompatStore + "/compat", "run/opengl-driver/lib"});
  compat_finds_driver();
  auto [json, load] = doctor_json(1);
  EXPECT_EQ(json["host_kind"], "l4t");
  EXPECT_EQ(json["driver"]["kernel_version"], "580.00");
  EXPECT_EQ(load["verdict"], "compat-outside-range") << load.dump(2);
  EXPECT_NE(load["fix"].get<std::string>().find("no cuda_compat"), std::string::npos) << load.dump(2);
}

TEST_F(DoctorL4t, CompatWhoseOwnSearchMissesLibnvrmFailsToLoad) {
  // The driver directory is behind compat in libcudart's runpath, but the
  // compat libcuda has no runpath of its own: its libnvrm_* are not found.
  libcudart_searches({kCompatStore + "/compat", "run/opengl-driver/lib"});
  auto [json, load] = doctor_json(1);
  EXPECT_EQ(load["verdict"], "compat-deps-unreachable") << load.dump(2);
  std::string why = load["explanation"];
  EXPECT_NE(why.find("libnvrm_gpu.so, libnvrm_mem.so"), std::string::npos) << why;
  EXPECT_NE(why.find("runpath: none"), std::string::npos) << why;
  if (runs()) {
    EXPECT_EQ(run(), "libcuda: not found\n");  // dlopen fails on the missing libnvrm_*
  }
  // check, run on the application (not on the compat package), sees it too: it follows the tree.
  auto check = test::run_command({RUNPATCH_CLI, "check", "--root", root_.string(), "--ignore-environment", "--disable",
                                  "unused-entry", prog_.string()});
  EXPECT_EQ(check.exit_code, 1) << check.output;
  EXPECT_NE(check.output.find("compat-needs-driver"), std::string::npos) << check.output;
  EXPECT_NE(check.output.find("which needs libnvrm_gpu.so, libnvrm_mem.so from the driver"), std::string::npos)
      << check.output;
  // Once the compat libcuda's own runpath names the driver directory, the finding is gone.
  compat_finds_driver();
  auto fixed = test::run_command({RUNPATCH_CLI, "check", "--root", root_.string(), "--ignore-environment", "--disable",
                                  "unused-entry", prog_.string()});
  EXPECT_EQ(fixed.output.find("compat-needs-driver"), std::string::npos) << fixed.output;
}

TEST_F(DoctorL4t, DriverLibcudaOfTheRunningL4tIsOk) {
  libcudart_searches({"run/opengl-driver/lib"});
  auto [json, load] = doctor_json(0);
  EXPECT_EQ(load["verdict"], "ok") << load.dump(2);
  EXPECT_NE(load["explanation"].get<std::string>().find("L4T 36.4.4"), std::string::npos) << load.dump(2);
  if (runs()) {
    EXPECT_EQ(run(), "libcuda: driver\n");
  }
}

TEST_F(DoctorL4t, DriverLibcudaOfAnotherL4tReleaseMismatches) {
  jetson("36", "4.3");  // the libcuda comes from l4t-cuda-36.4.4
  libcudart_searches({"run/opengl-driver/lib"});
  auto [json, load] = doctor_json(1);
  EXPECT_EQ(json["driver"]["l4t"]["jetpack"]["exact"], false);  // judged by the R36 row
  EXPECT_EQ(load["verdict"], "l4t-library-mismatch") << load.dump(2);
  EXPECT_NE(load["explanation"].get<std::string>().find("L4T 36.4.3"), std::string::npos) << load.dump(2);
}

TEST_F(DoctorL4t, NoGpuModuleOnAnL4tHost) {
  fs::remove(root_ / "proc/modules");
  libcudart_searches({"run/opengl-driver/lib"});
  auto [json, load] = doctor_json(1);
  EXPECT_EQ(json["host_kind"], "l4t");
  EXPECT_EQ(load["verdict"], "no-kernel-driver") << load.dump(2);
  EXPECT_NE(load["explanation"].get<std::string>().find("nvgpu"), std::string::npos);
}

TEST_F(DoctorL4t, NoGpuModuleAndNoLibcudaOnAnL4tHost) {
  fs::remove(root_ / "proc/modules");
  libcudart_searches({"pkg/lib"});  // no libcuda there, nor under the fake root's default directories
  auto [json, load] = doctor_json(1);
  EXPECT_EQ(json["host_kind"], "l4t");
  EXPECT_EQ(load["verdict"], "no-kernel-driver") << load.dump(2);
  EXPECT_TRUE(load["chosen"].is_null());
  auto explanation = load["explanation"].get<std::string>();
  EXPECT_NE(explanation.find("nvgpu"), std::string::npos) << explanation;
  EXPECT_NE(explanation.find("no libcuda.so.1"), std::string::npos) << explanation;
}

TEST_F(DoctorL4t, NoLibcudaWithNvgpuLoadedIsNoLibcuda) {
  libcudart_searches({"pkg/lib"});
  auto [json, load] = doctor_json(1);
  EXPECT_EQ(load["verdict"], "no-libcuda") << load.dump(2);
}

// On the x86 builder an aarch64 program's libcudart may not be resolvable
// (another output, another root): the answer is "unknown", with what is
// missing, and fails; never "not a CUDA program".
TEST_F(DoctorL4t, AnUnresolvedLibraryMakesTheAnswerUnknown) {
  fs::remove(cudart_);
  auto json_run = test::run_command({RUNPATCH_CLI, "doctor", "--json", "--ignore-environment", prog_.string()});
  EXPECT_EQ(json_run.exit_code, 1) << json_run.output;
  auto json = test::parse_json(json_run.output);
  ASSERT_FALSE(json.is_discarded()) << json_run.output;
  const auto& file = json["files"][0];
  EXPECT_EQ(file["uses_cuda"], false);
  EXPECT_EQ(file["unknown"], true);
  EXPECT_EQ(file["ok"], false);
  // libcudart, and this builder has no aarch64 libc either.
  std::set<std::string> unresolved(file["unresolved"].begin(), file["unresolved"].end());
  EXPECT_TRUE(unresolved.count("libcudart.so.13 (needed by " + prog_.string() + ")")) << json_run.output;
  auto text = test::run_command({RUNPATCH_CLI, "doctor", "--ignore-environment", prog_.string()});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.output.find("verdict  unknown"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("not resolved  libcudart.so.13"), std::string::npos) << text.output;
  EXPECT_EQ(text.output.find("not a CUDA program"), std::string::npos) << text.output;
}

// Offline, on the builder: --root R alone takes R's /proc too (its nvgpu
// module, its missing NVIDIA version file), never the builder's.
TEST_F(DoctorL4t, AnOfflineRootIsJudgedByItsOwnProc) {
  libcudart_searches({"run/opengl-driver/lib"});
  auto r = test::run_command(
      {RUNPATCH_CLI, "doctor", "--json", "--root", root_.string(), "--ignore-environment", prog_.string()});
  auto json = test::parse_json(r.output);
  ASSERT_FALSE(json.is_discarded()) << r.output;
  EXPECT_EQ(json["host_kind"], "l4t");
  EXPECT_EQ(json["driver"]["l4t"]["nvgpu"], true) << "R's proc/modules, not this machine's";
  auto text =
      test::run_command({RUNPATCH_CLI, "doctor", "--root", root_.string(), "--ignore-environment", prog_.string()});
  EXPECT_EQ(text.output.find("no /proc/driver"), std::string::npos) << text.output;
}

TEST_F(DoctorL4t, TheHostKindIsOnTheFirstLine) {
  libcudart_searches({"run/opengl-driver/lib"});
  auto l4t = doctor(false);
  EXPECT_EQ(l4t.exit_code, 0) << l4t.output;
  EXPECT_EQ(l4t.output.substr(0, l4t.output.find('\n')),
            "host: L4T R36.4.4 (JetPack 6.2.1: native CUDA 12.6, cuda_compat 12.4-12.9) [nvgpu kernel module, device "
            "tree nvidia,tegra234, /etc/nv_tegra_release]");
  EXPECT_NE(l4t.output.find("kernel driver: nvgpu"), std::string::npos) << l4t.output;
  // Without any L4T sign the same root is a discrete-GPU host (with no driver loaded).
  for (const char* f : {"etc/nv_tegra_release", "proc/modules", "proc/device-tree/compatible"}) fs::remove(root_ / f);
  // No driver and no GPU: the first line says so, and what can still be predicted.
  auto discrete = doctor(false);
  EXPECT_EQ(discrete.output.substr(0, discrete.output.find('\n')),
            "host: no NVIDIA driver loaded and no GPU listed (/proc/driver/nvidia): which libcuda each program would "
            "load is predicted from the files; whether CUDA starts cannot be")
      << discrete.output;
  auto json = test::parse_json(doctor().output);
  EXPECT_EQ(json["host_kind"], "discrete");
  EXPECT_EQ(json["driver"]["driver_loaded"], false);
  EXPECT_TRUE(json["driver"]["l4t"].is_null());
}

TEST(L4tFacts, EachSignAloneSaysL4t) {
  fs::path dir = test::scratch_dir("doctor-l4t-facts");
  EXPECT_FALSE(read_l4t_facts(dir, dir));
  fs::create_directories(dir / "sys/module/nvgpu");  // nvgpu built into the kernel
  auto facts = read_l4t_facts(dir, dir);
  ASSERT_TRUE(facts);
  EXPECT_TRUE(facts->nvgpu);
  EXPECT_FALSE(facts->release);
  EXPECT_NE(facts->release_problem.find("nv_tegra_release is missing"), std::string::npos);
  fs::remove_all(dir / "sys");
  write_text(dir / "sys/firmware/devicetree/base/compatible",
             with_nuls("nvidia,p3768-0000+p3767-0005\0nvidia,tegra234\0"));
  facts = read_l4t_facts(dir, dir);
  ASSERT_TRUE(facts);
  EXPECT_EQ(facts->soc, "tegra234");
  EXPECT_FALSE(facts->nvgpu);
  fs::remove_all(dir / "sys");
  write_text(dir / "etc/nv_tegra_release", "garbage\n");
  facts = read_l4t_facts(dir, dir);
  ASSERT_TRUE(facts);  // the file says L4T even when its release line is unreadable
  EXPECT_FALSE(facts->release);
  EXPECT_NE(facts->release_problem.find("first line"), std::string::npos);
  write_text(dir / "etc/nv_tegra_release", "# R35 (release), REVISION: 6.2, GCID: 1, BOARD: t186ref, EABI: aarch64\n");
  facts = read_l4t_facts(dir, dir);
  ASSERT_TRUE(facts && facts->release);
  EXPECT_EQ(l4t_version_text(*facts->release), "35.6.2");
  EXPECT_EQ(facts->jetpack.release->jetpack, "5.1.5");
  // A discrete GPU's /proc/modules has no nvgpu.
  fs::remove_all(dir / "etc");
  write_text(dir / "proc/modules", "nvidia_uvm 1 0 - Live 0x0\nnvidia 2 1 nvidia_uvm, Live 0x0\n");
  EXPECT_FALSE(read_l4t_facts(dir, dir));
}

}  // namespace
}  // namespace runpatch
