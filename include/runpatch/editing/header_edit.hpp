// Edits of fixed-size fields that never move or grow anything: the OS ABI
// byte, PT_GNU_STACK's PF_X, DF_1_NODEFLIB, DT_DEBUG (in a spare DT_NULL
// slot) and symbol version indexes. Written through the same atomic path as
// every edit (docs/editing.md §4). An edit that would need a new program
// header or dynamic entry is refused with an error that says so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/editing/edit.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

enum class ExecStack {
  Unknown,        // no PT_GNU_STACK: the loader's default for the machine decides
  NotExecutable,  // PT_GNU_STACK without PF_X
  Executable,     // PT_GNU_STACK with PF_X
};

struct HeaderFacts {
  uint8_t osabi = 0;
  ExecStack exec_stack = ExecStack::Unknown;
};

// Reads the facts above from the ELF header and program headers only, so
// files without section headers are fine.
Expected<HeaderFacts> read_header_facts(const std::filesystem::path& path);

// patchelf's name of an EI_OSABI value ("System V", "Linux", ...; "0x%02X" for others).
std::string patchelf_osabi_name(uint8_t osabi);
// The EI_OSABI value for a name patchelf accepts (case-insensitive, surrounding
// blanks ignored, with patchelf's aliases such as "sysv", "gnu", "hurd").
std::optional<uint8_t> osabi_from_name(std::string_view name);
// Every name osabi_from_name accepts that is one word ("sysv", "gnu-hurd",
// "hurd", ...): what a shell completes --set-os-abi with.
std::vector<std::string> osabi_one_word_names();

}  // namespace runpatch
