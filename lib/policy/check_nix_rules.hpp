// The Nixpkgs-aware check rules (docs/policies.md, "Nixpkgs-aware findings"):
// CUDA package-set leakage, closure bloat, unused entries, LD_LIBRARY_PATH
// shadowing and a stub libcuda reachable at run time.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "runpatch/check.hpp"
#include "runpatch/resolve.hpp"

namespace runpatch::check_rules_nix {

using AddFinding = std::function<void(const char* rule, std::string message)>;

// cuda-version-mix: over the loaded objects of one file's tree.
void version_mix(const DependencyTree& tree, const AddFinding& add);

// closure-bloat: one runpath entry (as written).
void entry_bloat(const std::string& entry, const AddFinding& add);

// runtime-stub: one existing runpath directory (host path) that is not a stubs directory.
void entry_stub(const std::string& entry, const std::filesystem::path& host_dir, const AddFinding& add);

// unused-entry: entries of the file's own runpath no resolution went through.
void unused_entries(const std::filesystem::path& file, const DependencyTree& tree, const CheckOptions& options,
                    const AddFinding& add);

// ld-library-path-shadowing: what the runpath alone would have loaded, compared.
void shadowing(const std::filesystem::path& file, const DependencyTree& tree, const CheckOptions& options,
               const AddFinding& add);

}  // namespace runpatch::check_rules_nix
