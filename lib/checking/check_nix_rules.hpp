// The Nixpkgs-aware check rules (docs/policies.md, "Nixpkgs-aware findings"):
// CUDA package-set leakage, closure bloat, unused entries, LD_LIBRARY_PATH
// shadowing and a stub libcuda reachable at run time.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "runpatch/checking/check.hpp"
#include "runpatch/resolving/resolve.hpp"

namespace runpatch::check_rules_nix {

// A finding's text and, for findings about a tree, the libraries it concerns
// (a message converts: most rules concern the file itself).
struct FindingText {
  std::string message;
  std::vector<std::string> libraries;
  FindingText(std::string text, std::vector<std::string> names = {})  // NOLINT: converts from a message
      : message(std::move(text)), libraries(std::move(names)) {}
  FindingText(const char* text) : message(text) {}  // NOLINT: a literal message too
};
using AddFinding = std::function<void(CheckRule rule, FindingText text)>;

// cuda-version-mix: over the loaded objects of one file's tree.
void version_mix(const DependencyTree& tree, const AddFinding& add);

// closure-bloat: one runpath entry (as written).
void entry_bloat(const std::string& entry, const AddFinding& add);

// runtime-stub: one existing runpath directory (host path) that is not a stubs directory.
void entry_stub(const std::string& entry, const std::filesystem::path& host_dir, const AddFinding& add);

// The file's tree as its runpath alone resolves it: nullopt when env has no
// LD_LIBRARY_PATH (the tree already is that) or the file cannot be resolved.
std::optional<DependencyTree> without_ld_library_path(const std::filesystem::path& file, const SearchEnvironment& env);

// unused-entry: entries of the file's own runpath that no resolution in
// by_runpath (the tree without LD_LIBRARY_PATH) went through.
void unused_entries(const DependencyTree& by_runpath, const CheckOptions& options, const AddFinding& add);

// ld-library-path-shadowing: where tree (with LD_LIBRARY_PATH) loads another
// file than by_runpath would have.
void shadowing(const DependencyTree& tree, const DependencyTree& by_runpath, const AddFinding& add);

}  // namespace runpatch::check_rules_nix
