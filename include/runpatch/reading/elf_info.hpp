// What runpatch knows about one ELF file: identity, interpreter and the
// dynamic-section facts that drive library search.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

enum class ElfClass : uint8_t { Elf32 = 1, Elf64 = 2 };
enum class ByteOrder : uint8_t { Little = 1, Big = 2 };

// The class, byte order, machine and OS ABI that decide whether two objects can load together.
struct ElfIdentity {
  ElfClass elf_class = ElfClass::Elf64;
  ByteOrder byte_order = ByteOrder::Little;
  uint16_t machine = 0;
  uint8_t osabi = 0;
  uint8_t abiversion = 0;
  uint32_t flags = 0;  // e_flags (e.g. ARM float ABI)

  bool operator==(const ElfIdentity&) const = default;
};

// A library the file loads with dlopen, from its .note.dlopen metadata.
struct DlopenDependency {
  std::vector<std::string> sonames;  // any one satisfies it
  std::string feature;
  std::string priority;  // "required", "recommended" or "suggested"

  bool operator==(const DlopenDependency&) const = default;
};

// One pair of a resolution-cache note (runpatch/resolving/resolution_cache.hpp).
struct ResolutionCacheEntry {
  std::string needed;
  std::vector<std::string> locations;  // each "=<path>" or "?<dir>", in runpath order

  bool operator==(const ResolutionCacheEntry&) const = default;
};

// Entries sorted by needed name (byte order), as the loader expects.
using ResolutionCache = std::vector<ResolutionCacheEntry>;

// A .note.nixos.ldcache note found in a PT_NOTE segment.
struct ResolutionCacheNote {
  ResolutionCache entries;
  uint64_t offset = 0;  // of the note header in the file
  uint64_t size = 0;    // header, name and descriptor, padded
  std::string defect;   // why the descriptor is unreadable ("" when it is fine)
};

struct ElfInfo {
  std::string path;
  ElfIdentity identity;
  uint16_t type = 0;  // e_type
  uint64_t file_size = 0;
  uint64_t phnum = 0;
  uint64_t shnum = 0;      // 0 when the file has no section headers
  uint64_t code_size = 0;  // bytes of executable PT_LOAD segments (a stub library has almost none)

  std::optional<std::string> interpreter;   // PT_INTERP
  bool has_dynamic = false;                 // PT_DYNAMIC present, with contents in the file
  bool debug_only = false;                  // PT_DYNAMIC without contents: separate debug info
  std::vector<std::string> needed;          // DT_NEEDED, in order
  std::optional<std::string> runpath;       // DT_RUNPATH (first one; see duplicate_tags)
  std::optional<std::string> rpath;         // DT_RPATH
  std::optional<std::string> soname;        // DT_SONAME
  uint64_t flags = 0;                       // DT_FLAGS
  uint64_t flags_1 = 0;                     // DT_FLAGS_1
  uint64_t spare_dynamic_slots = 0;         // DT_NULL entries beyond the terminator
  std::vector<std::string> duplicate_tags;  // e.g. "DT_RUNPATH" appearing twice
  // Where the tail of an edit killed before its commit begins: bytes past
  // everything the headers reference that start (16-aligned) with a copy of
  // the whole dynamic string table, as every runpatch tail does. Nothing
  // references them; the next edit reclaims them (docs/editing.md §4).
  std::optional<uint64_t> interrupted_edit_tail;
  std::vector<DlopenDependency> dlopen;                 // FDO .note.dlopen entries
  std::vector<std::string> dlopen_note_problems;        // what made a .note.dlopen entry unusable (it is skipped)
  std::optional<ResolutionCacheNote> resolution_cache;  // NixOS .note.nixos.ldcache

  bool is_static() const { return !has_dynamic; }
  bool is_pie() const;
  bool is_static_pie() const;
  bool is_shared_library() const;
  bool is_executable() const;
  bool nodeflib() const;
  // One word for the kind of file: debuginfo, static, static-pie, pie, exec, shared, relocatable, core, other.
  std::string kind() const;
};

// Where the dynamic table is found. The loader reads PT_DYNAMIC only (what
// every reading and check of runpatch models); patchelf's front end also takes
// a `.dynamic` section (SHT_DYNAMIC, inside a PT_LOAD) when no PT_DYNAMIC
// exists, as patchelf does (its test phdr-corruption).
enum class DynamicSource { Segment, SegmentOrSection };

// Parses the ELF file at path. Touches only the pages holding the headers,
// the dynamic section and the strings it names.
Expected<ElfInfo> read_elf_info(const std::filesystem::path& path, DynamicSource source = DynamicSource::Segment);

// Same, for an image already in memory (path is used in messages only).
Expected<ElfInfo> read_elf_info(std::span<const uint8_t> bytes, const std::string& path,
                                DynamicSource source = DynamicSource::Segment);

std::string machine_name(uint16_t machine);
std::string osabi_name(uint8_t osabi);
std::string type_name(uint16_t type);
// Names of the DT_FLAGS_1 bits set in flags_1, e.g. {"NOW", "PIE"}.
std::vector<std::string> flags_1_names(uint64_t flags_1);

}  // namespace runpatch
