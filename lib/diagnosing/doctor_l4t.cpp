// On a Jetson the driver is part of L4T: libcuda must come from the running
// L4T release, and cuda_compat works only inside the JetPack's compat range
// and only when its libcuda finds the driver's libnvrm_* libraries.
#include "diagnosing/doctor_l4t.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "checking/nix_paths.hpp"
#include "runpatch/cuda/cuda.hpp"
#include "runpatch/reading/loader_paths.hpp"

namespace runpatch {

namespace fs = std::filesystem;

namespace {

std::string canonical_host_path(const fs::path& root, const std::string& path) {
  std::error_code ec;
  fs::path real = fs::canonical(under_root(root, path), ec);
  return ec ? under_root(root, path).string() : real.string();
}

// cuda_compat's CUDA release from where it lies: a cuda_compat-12.9.x store
// path, or a toolkit directory /usr/local/cuda-12.6/compat.
std::optional<CudaVersion> compat_cuda_release(const fs::path& root, const std::string& path) {
  for (const std::string& p : {canonical_host_path(root, path), path}) {
    if (auto store = parse_store_path(p))
      if (store->name.find("cuda") != std::string::npos)
        if (auto v = parse_cuda_version(store->version)) return v;
    for (size_t at = p.find("/cuda-"); at != std::string::npos; at = p.find("/cuda-", at + 1)) {
      std::string_view rest = std::string_view(p).substr(at + 6);
      if (auto v = parse_cuda_version(rest.substr(0, rest.find('/')))) return v;
    }
  }
  return std::nullopt;
}

// The L4T release a driver libcuda comes from: its store path (l4t-cuda-36.4.4,
// nvidia-l4t-cuda-36.4.4-...), following the links to it.
std::optional<L4tVersion> library_l4t_release(const fs::path& root, const std::string& path) {
  auto store = parse_store_path(canonical_host_path(root, path));
  if (!store || store->name.find("l4t") == std::string::npos) return std::nullopt;
  return parse_l4t_version(store->version);
}

// The L4T driver libraries cuda_compat's libcuda needs and its own search
// does not find (DT_RUNPATH is not inherited: the runpath that loaded it does not count).
std::vector<std::string> unreachable_driver_libraries(ResolutionSession& session, const fs::path& root,
                                                      const std::string& libcuda) {
  std::vector<std::string> missing;
  auto tree = session.resolve_tree(under_root(root, libcuda));
  if (!tree) return missing;
  for (const auto& edge : tree->edges)
    if (edge.from == 0 && !edge.dlopen && !edge.resolution.path && is_l4t_driver_library(edge.resolution.name))
      missing.push_back(edge.resolution.name);
  std::sort(missing.begin(), missing.end());
  return missing;
}

std::string own_runpath_text(const fs::path& root, const std::string& libcuda) {
  auto info = read_elf_info(under_root(root, libcuda));
  if (!info) return "unreadable";
  std::string runpath = effective_runpath(*info);
  return runpath.empty() ? "none" : "'" + runpath + "'";
}

void judge_compat(const DriverFacts& driver, ResolutionSession& session, const fs::path& root, LibcudaLoad& load) {
  const L4tFacts& l4t = *driver.l4t;
  const LibcudaCandidate& c = *load.chosen;
  auto missing = unreachable_driver_libraries(session, root, c.path);
  if (!missing.empty()) {
    std::string names;
    for (const auto& n : missing) names += (names.empty() ? "" : ", ") + n;
    load.verdict = DoctorVerdict::CompatDepsUnreachable;
    load.explanation = fmt::format(
        "cuda_compat's libcuda {} needs {} from the L4T driver, and its own search (runpath: {}, LD_LIBRARY_PATH, "
        "ld.so.cache, default directories) does not find them: the runpath that loads it does not count for its "
        "dependencies, so loading libcuda fails",
        c.path, names, own_runpath_text(root, c.path));
    load.fix = fmt::format(
        "add the driver directory ({}) to the runpath of cuda_compat's libcuda, after its own directory (runpatch "
        "driver FILE)",
        kDefaultDriverDir);
    return;
  }
  const JetpackRelease* jetpack = l4t.jetpack.release;
  auto release = compat_cuda_release(root, c.path);
  if (!jetpack || !release) {
    load.explanation = fmt::format("cuda_compat libcuda over {}; {} unknown, so its range cannot be judged",
                                   describe_l4t(l4t), !jetpack ? "the JetPack release" : "cuda_compat's CUDA release");
    return;
  }
  if (compat_in_range(*jetpack, *release)) {
    load.explanation = fmt::format("cuda_compat {} ({}) is inside the range of {}", cuda_version_text(*release), c.rule,
                                   describe_l4t(l4t));
    return;
  }
  load.verdict = DoctorVerdict::CompatOutsideRange;
  load.explanation = fmt::format("cuda_compat {} ({}) is outside the range of {}: CUDA calls fail",
                                 cuda_version_text(*release), c.rule, describe_l4t(l4t));
  load.fix = jetpack->compat_to
                 ? fmt::format(
                       "use a CUDA package set whose cuda_compat is within JetPack {}'s range, or drop the "
                       "cuda_compat layer from the runpath",
                       jetpack->jetpack)
                 : fmt::format(
                       "drop the cuda_compat layer from the runpath: JetPack {} has no cuda_compat; build "
                       "against its native CUDA {}",
                       jetpack->jetpack, cuda_version_text(jetpack->native_cuda));
}

void judge_driver_library(const DriverFacts& driver, const fs::path& root, LibcudaLoad& load) {
  const L4tFacts& l4t = *driver.l4t;
  const LibcudaCandidate& c = *load.chosen;
  auto library_release = library_l4t_release(root, c.path);
  if (library_release && l4t.release && !(*library_release == *l4t.release)) {
    load.verdict = DoctorVerdict::L4tLibraryMismatch;
    load.explanation = fmt::format(
        "libcuda {} ({}) comes from L4T {}, the host runs L4T {}: on a Jetson libcuda must match the L4T release "
        "exactly",
        c.path, c.rule, l4t_version_text(*library_release), l4t_version_text(*l4t.release));
    load.fix = fmt::format("load the libcuda of the running L4T release (its {}), or rebuild for L4T {}",
                           kDefaultDriverDir, l4t_version_text(*l4t.release));
    return;
  }
  // JetPack 7's open nvidia module has a driver version, as on a discrete GPU.
  const auto& kernel = driver.kernel_version;
  if (kernel && c.version && compare_driver_versions(*c.version, *kernel) != std::optional<int>(0)) {
    load.verdict = DoctorVerdict::DriverLibraryMismatch;
    load.explanation = fmt::format("libcuda {} ({}) does not match the kernel driver {}", *c.version, c.rule, *kernel);
    load.fix = "put the directory of the running driver's libcuda first (runpatch driver --driver-dir DIR)";
    return;
  }
  load.explanation =
      library_release
          ? fmt::format("the driver's libcuda of L4T {} on {}", l4t_version_text(*library_release), describe_l4t(l4t))
          : fmt::format("the driver's libcuda ({}; its L4T release is not in its path) on {}", c.rule,
                        describe_l4t(l4t));
}

}  // namespace

std::string describe_l4t(const L4tFacts& facts) {
  if (!facts.release) return "L4T (release unknown: " + facts.release_problem + ")";
  std::string text = "L4T R" + l4t_version_text(*facts.release);
  const JetpackRelease* jetpack = facts.jetpack.release;
  if (!jetpack) return text + " (not in the JetPack table)";
  if (facts.jetpack.exact)
    return fmt::format("{} (JetPack {}: {})", text, jetpack->jetpack, describe_cuda_range(*jetpack));
  return fmt::format("{} (judged by the table's R{} row, JetPack {} = R{}: {})", text, jetpack->l4t.major,
                     jetpack->jetpack, l4t_version_text(jetpack->l4t), describe_cuda_range(*jetpack));
}

void judge_l4t(const DriverFacts& driver, ResolutionSession& session, const fs::path& root, LibcudaLoad& load) {
  if (load.chosen->compat)
    judge_compat(driver, session, root, load);
  else
    judge_driver_library(driver, root, load);
}

}  // namespace runpatch
