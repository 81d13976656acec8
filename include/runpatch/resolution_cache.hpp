// The resolution-cache note (.note.nixos.ldcache) read by Nixpkgs' patched
// glibc loader: for each DT_NEEDED, where in the runpath it lies, so that a
// program with a long runpath skips the failed opens at start-up.
//
// Format (byte-compatible with patchelf >= 0.19 --build-resolution-cache):
// an SHT_NOTE section, SHF_ALLOC, in a PT_NOTE segment inside a PT_LOAD;
// note name "NixOS", type 0x63a86cb6; descriptor: `needed\0locations\0`
// pairs sorted by needed name, then one more `\0`. locations is the
// `:`-joined runpath entries in runpath order that matter for that name:
// `=<path>` where the library is, `?<dir>` where the loader must still
// search at run time (see docs/resolution-cache.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/elf_info.hpp"
#include "runpatch/expected.hpp"
#include "runpatch/resolve.hpp"

namespace runpatch {

inline constexpr uint32_t kResolutionCacheNoteType = 0x63a86cb6;
inline constexpr std::string_view kResolutionCacheNoteName = "NixOS";  // stored with its NUL
inline constexpr std::string_view kResolutionCacheSection = ".note.nixos.ldcache";

// The note's descriptor bytes for cache (pairs, then the closing NUL).
std::vector<uint8_t> encode_resolution_cache(const ResolutionCache& cache);

// Reads a descriptor; an error says what is wrong and at which descriptor offset.
Expected<ResolutionCache> decode_resolution_cache(std::span<const uint8_t> descriptor);

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

// Locations as the descriptor stores them: ":"-joined.
std::string join_locations(const std::vector<std::string>& locations);

// "name => =path:?dir" lines, for print and messages.
std::string format_resolution_cache_entry(const ResolutionCacheEntry& entry);

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
