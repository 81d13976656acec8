// The Jetson check rules (docs/check.md): cuda_compat's libcuda needs the L4T
// driver's libraries (libnvrm_mem, libnvrm_gpu) from the driver directory,
// and a package set must be within the target JetPack's CUDA range.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runpatch/checking/check.hpp"
#include "runpatch/cuda/l4t_versions.hpp"
#include "checking/check_nix_rules.hpp"

namespace runpatch::check_rules_jetson {

using check_rules_nix::AddFinding;

// compat-needs-driver, for a consumer: each compat entry of its runpath
// (compat[i]: by name or content) must have a driver directory (driver[i]) behind it.
void compat_entries(const std::vector<std::string>& entries, const std::vector<bool>& compat,
                    const std::vector<bool>& driver, const std::vector<std::string>& driver_dirs,
                    const AddFinding& add);

// compat-needs-driver, for every compat libcuda in the tree (the file itself,
// or the one the program's libcudart dlopens): the L4T driver libraries it
// needs must be reachable through its own runpath.
// loaded_by: "" when tree is the checked file's; else how the checked file
// loads tree[0] (a dlopen's libcuda is no object of its tree: its own tree is
// resolved apart), e.g. "dlopen by libcudart.so.13".
void libcuda_own_search(const DependencyTree& tree, const std::filesystem::path& root,
                        const std::vector<std::string>& driver_dirs, const std::string& loaded_by,
                        const AddFinding& add);

// jetpack-cuda-range: the CUDA release of the tree's package set (a cuda_*
// store path, a cuda-X.Y directory or versioned libcudart file in its real
// path, else libcudart's SONAME major) must run on the JetPack; a major alone
// that the JetPack runs only part of is reported as unknown, never passed.
void jetpack_range(const DependencyTree& tree, const JetpackRelease& jetpack, const std::filesystem::path& root,
                   const AddFinding& add);

}  // namespace runpatch::check_rules_jetson
