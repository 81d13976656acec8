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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

inline constexpr uint32_t kResolutionCacheNoteType = 0x63a86cb6;
inline constexpr std::string_view kResolutionCacheNoteName = "NixOS";  // stored with its NUL
inline constexpr std::string_view kResolutionCacheSection = ".note.nixos.ldcache";

// The note's descriptor bytes for cache (pairs, then the closing NUL).
std::vector<uint8_t> encode_resolution_cache(const ResolutionCache& cache);

// Reads a descriptor; an error says what is wrong and at which descriptor offset.
Expected<ResolutionCache> decode_resolution_cache(std::span<const uint8_t> descriptor);

// Locations as the descriptor stores them: ":"-joined.
std::string join_locations(const std::vector<std::string>& locations);

// "name => =path:?dir" lines, for print and messages.
std::string format_resolution_cache_entry(const ResolutionCacheEntry& entry);

}  // namespace runpatch
