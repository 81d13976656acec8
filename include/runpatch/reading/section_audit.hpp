// What a parser that trusts the section headers (patchelf 0.19) checks before
// it does anything with a file. The loader never reads section headers, and
// runpatch's reader needs few of them, so it accepts files these checks
// refuse; runpatch-patchelf refuses them as patchelf does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

// In the order patchelf meets them.
enum class SectionDefect {
  ProgramHeadersOutOfBounds,
  SectionHeadersOutOfBounds,
  ProgramHeaderSize,
  SectionHeaderSize,
  NameTableIndex,    // e_shstrndx is no section
  NameTableOffset,   // the name table starts past the end
  NameTablePastEnd,  // ... or ends past it
  NameTableEmpty,
  NameTableUnterminated,
  SectionNameOutOfBounds,  // an sh_name past the name table
  SectionPastEnd,          // .dynamic or .dynstr past the end
  DynamicUnaligned,
  StringsUnterminated,     // .dynstr does not end with NUL
  StringIndexOutOfBounds,  // a dynamic or version-need string past .dynstr
  DynamicUnterminated,     // no DT_NULL within .dynamic
  GnuHashTooSmall,
  GnuHashHeader,
};

struct SectionAuditFinding {
  SectionDefect defect;
  std::string detail;  // what is wrong, and where, in runpatch's words
};

struct SectionAudit {
  std::optional<SectionAuditFinding> defect;  // the first one
  // Sections without a name that symbol table entries refer to (patchelf
  // warns of each when it rewrites the sections).
  std::vector<size_t> unnamed_symbol_sections;
};

// The audit of a file with section headers; a file without any (or too short
// for an ELF header) gives an empty audit: other checks speak for those.
Expected<SectionAudit> audit_section_headers(const std::filesystem::path& path);
SectionAudit audit_section_headers(std::span<const uint8_t> bytes);

}  // namespace runpatch
