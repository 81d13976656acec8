// The two steps of choosing a loader model: which loader (cheap, from the
// file's headers), then what it reads (files: its cache, its path file, its
// own bytes), which a session does once per loader.
#pragma once

#include <string>

#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

struct LoaderPick {
  LoaderKind kind = LoaderKind::HostGlibc;
  std::string interpreter;  // loader view
  std::string chosen_by;
  std::string key() const { return loader_kind_name(kind) + '\0' + interpreter + '\0' + chosen_by; }
};

LoaderPick pick_loader(const ElfInfo& file, const std::string& file_view, const SearchEnvironment& env);
LoaderModel build_loader_model(const LoaderPick& pick, const SearchEnvironment& env);

}  // namespace runpatch
