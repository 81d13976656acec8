// What a file's resolution-cache note must say, found by looking at the
// files its runpath names (the format: runpatch/reading/resolution_cache_format.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/expected.hpp"
#include "runpatch/reading/resolution_cache_format.hpp"
#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

// What the note of a file whose final DT_NEEDED and runpath are these must say.
struct ResolutionCacheInputs {
  std::vector<std::string> needed;
  std::string runpath;   // DT_RUNPATH (or DT_RPATH when the file has no DT_RUNPATH)
  ElfIdentity identity;  // a candidate of another class or machine is skipped by the loader: not recorded
};

// The inputs of a file as it is now: its DT_NEEDED and effective runpath.
ResolutionCacheInputs resolution_cache_inputs(const ElfInfo& info);

// Looks at the files under root (the tree the loader will see as "/"). A
// name with a slash, or one no entry matters for, is left out; an empty
// result means "write no note".
ResolutionCache build_resolution_cache(const ResolutionCacheInputs& inputs, const std::filesystem::path& root = "/");

// Why a cache cannot be written for these inputs ("no runpath", ...), or "" when it can.
std::string resolution_cache_unavailable_reason(const ResolutionCacheInputs& inputs, const ResolutionCache& cache);

// How many files the loader tries to open for a file's direct DT_NEEDED,
// without a resolution cache and with one: the file's own note, or the note
// runpatch would write for it now. A directory found missing is tried once
// per file, as ld.so remembers it (elf/dl-load.c).
struct NeededOpenAttempts {
  std::string name;
  size_t without_note = 0;
  size_t with_note = 0;
};
struct OpenAttemptStats {
  std::vector<NeededOpenAttempts> needed;
  size_t without_note = 0;
  size_t with_note = 0;
  bool note_in_file = false;  // false: counted with the note runpatch would write
  bool note_possible = true;  // false: no note can be written (no runpath, nothing found through it)
};
Expected<OpenAttemptStats> count_open_attempts(const std::filesystem::path& file, const SearchEnvironment& env);

}  // namespace runpatch
