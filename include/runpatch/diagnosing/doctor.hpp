// `runpatch doctor`: on the machine where a CUDA program runs, which
// libcuda.so.1 the loader will give it, from where, what that shadows, and
// whether that libcuda can work with the kernel driver there.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runpatch/reading/expected.hpp"
#include "runpatch/cuda/l4t_versions.hpp"
#include "runpatch/resolving/resolve.hpp"
#include "runpatch/tracing/trace_analysis.hpp"

namespace runpatch {

// What says a host is a Jetson, whose GPU driver is part of L4T (docs/doctor.md, "Jetson").
struct L4tFacts {
  std::vector<std::string> evidence;  // "nvgpu kernel module", "/etc/nv_tegra_release", "device tree nvidia,tegra234"
  std::optional<L4tVersion> release;  // from <root>/etc/nv_tegra_release ("# R36 (release), REVISION: 4.4, ...")
  std::string release_source;         // the file it was read from
  std::string release_problem;        // why the release is unknown, when it is
  std::string soc;                    // "tegra234", from the device tree's compatible strings; "" when unknown
  bool nvgpu = false;                 // the nvgpu kernel module (JetPack 5 and 6) is loaded
  L4tMatch jetpack;                   // the release's row of the JetPack table
};

// Reads <proc_root>/proc/modules, <proc_root>/sys/module/nvgpu, the device
// tree (<proc_root>/proc/device-tree/compatible, else
// <proc_root>/sys/firmware/devicetree/base/compatible) and
// <root>/etc/nv_tegra_release; nullopt when none of them says L4T.
std::optional<L4tFacts> read_l4t_facts(const std::filesystem::path& proc_root, const std::filesystem::path& root);

// "L4T R36.4.4 (JetPack 6.2.1: native CUDA 12.6, cuda_compat 12.4-12.9)".
std::string describe_l4t(const L4tFacts& facts);

enum class HostKind { Discrete, L4t };
std::string host_kind_name(HostKind kind);  // "discrete", "l4t"

// What the running system says about its NVIDIA kernel driver.
struct DriverFacts {
  std::optional<std::string> kernel_version;  // e.g. "580.159.04"; nullopt: no driver loaded
  std::string source;                         // the file it was read from (none loaded: the file looked for)
  std::vector<std::string> gpu_models;        // e.g. "NVIDIA H100 80GB HBM3"
  std::optional<L4tFacts> l4t;                // set on a Jetson (read_l4t_facts)
  HostKind host_kind() const { return l4t ? HostKind::L4t : HostKind::Discrete; }
};

// Reads <proc_root>/proc/driver/nvidia/version (else <proc_root>/sys/module/nvidia/version)
// and the GPU models under <proc_root>/proc/driver/nvidia/gpus/*/information.
DriverFacts read_driver_facts(const std::filesystem::path& proc_root = "/");

struct LibcudaCandidate {
  std::string path;                    // as the loader sees it
  std::string rule;                    // where the search meets it: "runpath of X", "LD_LIBRARY_PATH", ...
  FoundVia via = FoundVia::NotFound;   // that search step, for code
  std::optional<std::string> version;  // from libcuda.so.<version> behind the link, else from inside the file
  bool compat = false;                 // a cuda_compat (forward-compatibility) copy
  bool stub = false;                   // the toolkit's link-time stub
};

enum class DoctorVerdict {
  Ok,
  CompatOlderThanDriver,  // CUDA fails with error 803 (unsupported driver/compat combination)
  CompatUnsupportedGpu,   // forward compatibility refused on this GPU class (error 804)
  DriverLibraryMismatch,  // the user-space libcuda is not the kernel driver's version
  NoLibcuda,              // nothing found: CUDA calls fail with "no CUDA-capable device"/"driver not found"
  StubLibcuda,            // the stub: every call fails
  NoKernelDriver,         // no NVIDIA driver loaded on this machine
  // On an L4T host (Jetson):
  CompatOutsideRange,     // cuda_compat's CUDA release is outside the JetPack's compat range (or it has none)
  CompatDepsUnreachable,  // cuda_compat's libcuda cannot find its own dependencies (libnvrm_mem, libnvrm_gpu)
  L4tLibraryMismatch,     // the driver's libcuda comes from another L4T release than the host runs
};
std::string verdict_name(DoctorVerdict verdict);  // "ok", "compat-older-than-driver", ...

// One object that loads libcuda.so.1 (by DT_NEEDED or dlopen) within a file's tree.
struct LibcudaLoad {
  std::string loader;                      // the object whose search finds it
  std::string how;                         // "DT_NEEDED", "dlopen by libcudart", "dlopen by the static CUDA runtime"
  std::optional<LibcudaCandidate> chosen;  // what the loader picks
  std::vector<LibcudaCandidate> shadowed;  // later candidates the choice hides
  DoctorVerdict verdict = DoctorVerdict::Ok;
  std::string explanation;  // why, in one sentence
  std::string fix;          // what to do, empty when ok
};

struct DoctorReport {
  std::string file;
  bool uses_cuda = false;          // something in its tree loads libcuda.so.1
  std::vector<LibcudaLoad> loads;  // one per loader; usually libcudart's dlopen
  // "libcudart.so.12 (needed by /…/app)": libraries not resolved here, whose
  // own dependencies are therefore unknown (e.g. an aarch64 program on an x86 builder).
  std::vector<std::string> unresolved;
  // Nothing found loads libcuda.so.1, but part of the tree could not be read:
  // whether the program uses CUDA is unknown (not a pass).
  bool unknown() const { return !uses_cuda && !unresolved.empty(); }
  bool ok() const;
};

struct DoctorOptions {
  SearchEnvironment env;  // the loader's environment on this machine
  std::filesystem::path proc_root = "/";
};

// Diagnoses each file with one resolution session and one reading of the driver facts.
class Doctor {
 public:
  explicit Doctor(DoctorOptions options);
  ~Doctor();
  Doctor(const Doctor&) = delete;
  Doctor& operator=(const Doctor&) = delete;
  const DriverFacts& driver() const { return driver_; }
  Expected<DoctorReport> diagnose(const std::filesystem::path& file);

 private:
  DoctorOptions options_;
  DriverFacts driver_;
  ResolutionSession session_;
};

// What a trace of the program (runpatch doctor --run) saw of libcuda.so.1,
// set against the prediction: the loads of it in any traced process.
struct LibcudaObservation {
  long pid = 0;
  std::string requester;                 // the object that asked for it
  std::optional<std::string> path;       // what the loader loaded; none: the load failed
  std::optional<std::string> predicted;  // what the prediction for that requester chose
  bool predicted_load = false;           // the prediction has a load for that requester
  bool agrees() const;                   // predicted and observed are the same file (or both none)
};
// Each load of libcuda.so.1 the trace saw (a program that never loads it has
// none), set against the first of the predictions with a load for its requester.
std::vector<LibcudaObservation> observe_libcuda(const std::vector<const DoctorReport*>& predictions,
                                                const TraceAnalysis& trace);

// doctor --run: the prediction for the program a command runs, one for each
// other object the run saw load libcuda.so.1 (an interpreter's extension
// module, libcudart dlopened by path, libcublasLt's static runtime), each
// made from that object's own search, and what the run really loaded.
struct DoctorRun {
  DoctorReport program;
  std::vector<DoctorReport> requesters;
  std::vector<std::string> problems;  // a requester that could not be diagnosed
  std::vector<LibcudaObservation> observations;
  int exit_code = 0;  // the command's
  bool ok() const;    // every prediction ok, every observation confirmed, every requester diagnosed
};
DoctorRun doctor_traced_run(Doctor& doctor, DoctorReport program, const TraceAnalysis& trace, int exit_code);

// Compares dotted driver versions numerically ("580.95.05" < "580.159.04"); nullopt if unparsable.
std::optional<int> compare_driver_versions(const std::string& a, const std::string& b);

}  // namespace runpatch
