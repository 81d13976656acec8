#include "policy/check_jetson_rules.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "policy/nix_paths.hpp"
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
                    const std::vector<std::string>& driver_dirs, const AddFinding& add) {
  bool driver_before = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (is_driver_dir(driver_dirs, entries[i])) driver_before = true;
    if (!compat[i] || driver_before) continue;  // a driver in front: compat-after-driver
    bool driver_behind = std::any_of(entries.begin() + static_cast<long>(i) + 1, entries.end(),
                                     [&](const std::string& e) { return is_driver_dir(driver_dirs, e); });
    if (!driver_behind)
      add(CheckRule::CompatNeedsDriver,
          fmt::format("cuda_compat directory '{}' has no driver directory ({}) behind it: cuda_compat's libcuda is not "
                      "the whole driver, it needs the driver's libnvrm_mem and libnvrm_gpu",
                      entries[i], driver_dirs.empty() ? "none given" : driver_dirs.front()));
  }
}

void libcuda_own_search(const DependencyTree& tree, const std::filesystem::path& root,
                        const std::vector<std::string>& driver_dirs, const AddFinding& add) {
  if (tree.objects.empty()) return;
  const ElfInfo& self = *tree.objects[0].info;
  if (!self.soname || self.soname->rfind("libcuda.so", 0) != 0) return;
  // The driver's own libcuda lies beside its libnvrm_* (L4T's ld.so.conf
  // names that directory): only a libcuda apart from them is a compat layer.
  if (!libcuda_needs_driver_beside(under_root(root, dirname_of(tree.objects[0].path)))) return;
  std::vector<std::string> missing;
  for (const auto& e : tree.edges)
    if (e.from == 0 && !e.dlopen && !e.resolution.path && is_l4t_driver_library(e.resolution.name))
      missing.push_back(e.resolution.name);
  if (missing.empty()) return;
  auto entries = split_runpath(effective_runpath(self));
  if (std::any_of(entries.begin(), entries.end(), [&](const std::string& e) { return is_driver_dir(driver_dirs, e); }))
    return;  // the driver directory exists on the target machine, not here
  std::sort(missing.begin(), missing.end());
  std::string names;
  for (const auto& n : missing) names += (names.empty() ? "" : ", ") + n;
  add(CheckRule::CompatNeedsDriver,
      fmt::format("needs {} from the driver, but its own runpath ({}) lacks {}: the runpath of whatever loads it does "
                  "not count for its dependencies",
                  names, entries.empty() ? "none" : "'" + effective_runpath(self) + "'",
                  driver_dirs.empty() ? "the driver directory" : driver_dirs.front()));
}

void jetpack_range(const DependencyTree& tree, const JetpackRelease& jetpack, const AddFinding& add) {
  std::optional<CudaVersion> release;
  std::string evidence;
  for (const auto& o : tree.objects) {  // a store path says the release; libcudart's SONAME only the major
    if (auto store = parse_store_path(o.path))
      if (auto r = cuda_release_of(*store))
        if ((release = parse_cuda_version(*r))) {
          evidence = o.path;
          break;
        }
  }
  for (size_t i = 0; !release && i < tree.objects.size(); ++i) {
    const auto& o = tree.objects[i];
    if ((release = cudart_release(o.info->soname ? *o.info->soname : basename_of(o.path)))) evidence = o.path;
  }
  if (!release || package_set_runs(jetpack, *release)) return;
  add(CheckRule::JetpackCudaRange,
      fmt::format("uses the CUDA {} package set ({}), which JetPack {} does not run ({})", cuda_version_text(*release),
                  evidence, jetpack.jetpack, describe_cuda_range(jetpack)));
}

}  // namespace runpatch::check_rules_jetson
