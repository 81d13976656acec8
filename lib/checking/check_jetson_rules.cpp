#include "checking/check_jetson_rules.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "checking/nix_paths.hpp"
#include "runpatch/cuda/cuda.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/policy/policy.hpp"
#include "runpatch/editing/runpath_ops.hpp"

namespace runpatch::check_rules_jetson {

namespace {

bool is_driver_dir(const std::vector<std::string>& driver_dirs, const std::string& entry) {
  return std::find(driver_dirs.begin(), driver_dirs.end(), entry) != driver_dirs.end();
}

}  // namespace

void compat_entries(const std::vector<std::string>& entries, const std::vector<bool>& compat,
                    const std::vector<bool>& driver, const std::vector<std::string>& driver_dirs,
                    const AddFinding& add) {
  bool driver_before = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (driver[i]) driver_before = true;
    if (!compat[i] || driver_before) continue;  // a driver in front: compat-after-driver
    bool driver_behind = std::any_of(driver.begin() + static_cast<long>(i) + 1, driver.end(), [](bool d) { return d; });
    if (!driver_behind)
      add(CheckRule::CompatNeedsDriver,
          fmt::format("cuda_compat directory '{}' has no driver directory ({}) behind it: cuda_compat's libcuda is not "
                      "the whole driver, it needs the driver's libnvrm_mem and libnvrm_gpu",
                      entries[i], driver_dirs.empty() ? "none given" : driver_dirs.front()));
  }
}

namespace {

// One compat libcuda in the tree (the file itself, or what its tree loads:
// libcudart's dlopen through the program's runpath): its libnvrm_* are searched
// with its own runpath only.
void compat_libcuda_deps(const DependencyTree& tree, size_t index, const std::filesystem::path& root,
                         const std::vector<std::string>& driver_dirs, const std::string& loaded_by,
                         const AddFinding& add) {
  const LoadedObject& libcuda = tree.objects[index];
  const ElfInfo& info = *libcuda.info;
  // The driver's own libcuda lies beside its libnvrm_* (L4T's ld.so.conf
  // names that directory): only a libcuda apart from them is a compat layer.
  if (!libcuda_needs_driver_beside(under_root(root, dirname_of(libcuda.path)))) return;
  std::vector<std::string> missing;
  for (const auto& e : tree.edges)
    if (e.from == index && !e.dlopen && !e.resolution.path && is_l4t_driver_library(e.resolution.name))
      missing.push_back(e.resolution.name);
  if (missing.empty()) return;
  auto entries = split_runpath(effective_runpath(info));
  if (std::any_of(entries.begin(), entries.end(), [&](const std::string& e) { return is_driver_dir(driver_dirs, e); }))
    return;  // the driver directory exists on the target machine, not here
  std::sort(missing.begin(), missing.end());
  std::string names;
  for (const auto& n : missing) names += (names.empty() ? "" : ", ") + n;
  std::string who = index == 0 && loaded_by.empty() ? "needs"
                    : index == 0                    ? fmt::format("loads {} ({}), which needs", libcuda.path, loaded_by)
                                                    : fmt::format("loads {}, which needs", libcuda.path);
  add(CheckRule::CompatNeedsDriver,
      fmt::format("{} {} from the driver, but its own runpath ({}) lacks {}: the runpath of whatever loads it does "
                  "not count for its dependencies",
                  who, names, entries.empty() ? "none" : "'" + effective_runpath(info) + "'",
                  driver_dirs.empty() ? "the driver directory" : driver_dirs.front()));
}

}  // namespace

void libcuda_own_search(const DependencyTree& tree, const std::filesystem::path& root,
                        const std::vector<std::string>& driver_dirs, const std::string& loaded_by,
                        const AddFinding& add) {
  for (size_t i = 0; i < tree.objects.size(); ++i) {
    const auto& soname = tree.objects[i].info->soname;
    if (soname && soname->rfind("libcuda.so", 0) == 0) compat_libcuda_deps(tree, i, root, driver_dirs, loaded_by, add);
  }
}

namespace {

struct ReleaseEvidence {
  CudaVersion release;
  std::string where;  // the object whose path or name says it
};

// The CUDA release the tree uses, best evidence first: a store path of the CUDA
// package set, the real path (cuda-12.6/, libcudart.so.12.2.140), and only
// then libcudart's SONAME (which names the major alone).
std::optional<ReleaseEvidence> cuda_release_of_tree(const DependencyTree& tree, const std::filesystem::path& root) {
  for (const auto& o : tree.objects)
    if (auto store = parse_store_path(o.path))
      if (auto r = cuda_release_of(*store))
        if (auto v = parse_cuda_version(*r)) return ReleaseEvidence{*v, o.path};
  for (const auto& o : tree.objects) {
    bool cudart = basename_of(o.path).rfind("libcudart.so", 0) == 0 ||
                  (o.info->soname && o.info->soname->rfind("libcudart.so", 0) == 0);
    if (!cudart) continue;
    std::error_code ec;
    auto real = std::filesystem::canonical(under_root(root, o.path), ec);
    for (const std::string& path : {o.path, ec ? std::string() : real.string()})
      if (auto v = cuda_release_in_path(path)) return ReleaseEvidence{*v, path};
  }
  for (const auto& o : tree.objects)
    if (auto v = cudart_release(o.info->soname ? *o.info->soname : basename_of(o.path)))
      return ReleaseEvidence{*v, o.path};
  return std::nullopt;
}

}  // namespace

void jetpack_range(const DependencyTree& tree, const JetpackRelease& jetpack, const std::filesystem::path& root,
                   const AddFinding& add) {
  auto found = cuda_release_of_tree(tree, root);
  if (!found) return;
  const CudaVersion& release = found->release;
  if (!release.minor) {
    // Only the major is known: a verdict only when every minor of it gets the same one.
    bool lowest = package_set_runs(jetpack, CudaVersion{release.major, 0});
    bool highest = package_set_runs(jetpack, CudaVersion{release.major, 99});
    if (lowest != highest) {
      add(CheckRule::JetpackCudaRange,
          fmt::format("unknown: uses CUDA {}.x ({}: its SONAME names only the major), and JetPack {} runs only part of "
                      "{}.x ({}); give the package's path or its versioned libcudart to tell",
                      release.major, found->where, jetpack.jetpack, release.major, describe_cuda_range(jetpack)));
      return;
    }
    if (lowest) return;
  } else if (package_set_runs(jetpack, release)) {
    return;
  }
  add(CheckRule::JetpackCudaRange,
      fmt::format("uses the CUDA {} package set ({}), which JetPack {} does not run ({})", cuda_version_text(release),
                  found->where, jetpack.jetpack, describe_cuda_range(jetpack)));
}

}  // namespace runpatch::check_rules_jetson
