// patchelf 0.19's options, parsed into an edit request; shared by
// runpatch-patchelf and `runpatch auto-patchelf --extra-args` (Nixpkgs'
// patchelfFlags). docs/patchelf-compat.md lists each option's semantics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "completion.hpp"
#include "runpatch/editing/edit_request.hpp"
#include "runpatch/editing/header_edit.hpp"

namespace runpatch::cli {

// The patchelf release whose every option runpatch-patchelf accepts.
inline constexpr const char* kPatchelfVersion = "0.19.0";

struct PatchelfArguments {
  std::vector<std::string> files;  // every word that is not an option or an option's value
  std::optional<std::string> set_rpath, add_rpath, output, interpreter, soname, os_abi;
  bool remove_rpath = false, shrink_rpath = false, force_rpath = false, debug = false;
  bool build_resolution_cache = false;
  bool print_rpath = false, print_needed = false, print_interpreter = false, print_soname = false;
  bool print_os_abi = false, print_execstack = false, set_execstack = false, clear_execstack = false;
  bool no_default_lib = false, add_debug_tag = false;
  bool atomic_copy = false;                               // runpatch's own: always replace the file with an edited copy
  bool no_sort = false, no_clobber_old_sections = false;  // accepted: our layout already gives their result
  bool help = false, version = false;
  std::vector<std::string> allowed_prefixes, add_needed, remove_needed, clear_symbol_version;
  std::vector<std::pair<std::string, std::string>> replace_needed;
  std::optional<std::string> rename_map_file;                       // --rename-dynamic-symbols
  std::vector<std::pair<std::string, std::string>> rename_symbols;  // read from it: old -> new
  std::optional<uint64_t> page_size;
};

// Parses patchelf's command line (without argv[0]). Values of the options
// patchelf resolves as `@file` are read from that file, whole, as patchelf
// does. The error is patchelf's message without the "patchelf: " prefix; a
// word that starts with '-' and is no patchelf option is an error too
// ("unrecognized option '--x'"), where patchelf would take it for a file name.
Expected<PatchelfArguments> parse_patchelf_arguments(const std::vector<std::string>& args);

// --help's option lines, one per option, from the same table as the parser.
std::string patchelf_options_help();

// Each option as a shell completes it, from the same table (tools/completions).
std::vector<OptionCompletion> patchelf_option_completions();

// A --rename-dynamic-symbols map file: "OLD NEW" per line, checked as patchelf
// checks it (a missing second name, a name twice, '@' in a name); reading stops
// at the first line without a word. Errors name the file and line.
Expected<std::vector<std::pair<std::string, std::string>>> read_rename_map(const std::string& path);

// The dynamic-section part of the request (runpath, needed, soname, interpreter).
EditRequest patchelf_request(const PatchelfArguments& args);

// The fixed-size header edits (OS ABI, execstack, DF_1_NODEFLIB, DT_DEBUG, symbol versions).
HeaderEditRequest patchelf_header_request(const PatchelfArguments& args);

}  // namespace runpatch::cli
