// What an edit asks for (runpatch/editing/edit.hpp edits a file with it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

struct RunpathChange {
  enum class Kind { Keep, Set, Remove };
  Kind kind = Kind::Keep;
  std::string value;  // for Set

  static RunpathChange keep() { return {}; }
  static RunpathChange set(std::string v) { return {Kind::Set, std::move(v)}; }
  static RunpathChange remove() { return {Kind::Remove, {}}; }
};

// Computes the new runpath from what the file holds now (read in the same pass).
using RunpathUpdate = std::function<Expected<RunpathChange>(const ElfInfo& current)>;

// What an edit does to the resolution-cache note (runpatch/resolving/resolution_cache.hpp).
// runpatch keeps a note true to the edited file; patchelf drops it and builds
// a note once (docs/patchelf-compat.md, "Resolution cache").
enum class ResolutionCacheMode {
  Refresh,  // a note the file has is rebuilt for the edited file: never left stale
  Write,    // written, or refreshed (runpatch --ldcache)
  Remove,
  DropOnChange,  // patchelf: a note goes when the edit changes DT_NEEDED or the search path
  WriteOnce,     // patchelf --build-resolution-cache: an earlier note the edit keeps must equal the new one
};

// Whether the mode acts only through the edit's other changes (asks for no edit of its own).
inline bool follows_other_changes(ResolutionCacheMode mode) {
  return mode == ResolutionCacheMode::Refresh || mode == ResolutionCacheMode::DropOnChange;
}

// Fixed-size fields of the headers (patchelf's --set-os-abi, --set/clear-execstack,
// --no-default-lib, --add-debug-tag, --clear-symbol-version).
struct HeaderEditRequest {
  std::optional<uint8_t> osabi;
  std::optional<bool> exec_stack;                 // true: set PF_X, false: clear it
  bool no_default_lib = false;                    // DF_1_NODEFLIB in DT_FLAGS_1
  bool add_debug_tag = false;                     // a DT_DEBUG entry
  std::vector<std::string> clear_symbol_version;  // their .gnu.version entries become VER_NDX_GLOBAL

  // The ELF header's and program headers' fields (no dynamic section needed).
  bool changes_header_fields() const { return osabi || exec_stack; }
  // Dynamic entries the request adds (a file without a dynamic section cannot take them).
  bool adds_dynamic_entries() const { return no_default_lib || add_debug_tag; }
  bool needs_dynamic_section() const { return adds_dynamic_entries() || !clear_symbol_version.empty(); }
  bool empty() const { return !changes_header_fields() && !needs_dynamic_section(); }
};

struct EditRequest {
  RunpathUpdate runpath;     // null: leave the runpath alone
  bool force_rpath = false;  // write DT_RPATH (patchelf --force-rpath); default writes DT_RUNPATH
  std::optional<std::string> interpreter;
  std::optional<std::string> soname;
  std::vector<std::string> add_needed;  // inserted first, in this order
  // patchelf's --add-needed: a name the file already needs gets a second entry
  // anyway, first (the loader then loads it at that earlier place). runpatch
  // set adds none: running it twice changes nothing.
  bool add_needed_even_if_present = false;
  std::vector<std::string> remove_needed;
  std::vector<std::pair<std::string, std::string>> replace_needed;  // old -> new
  // Dynamic symbols renamed old -> new (patchelf --rename-dynamic-symbols);
  // a name the file does not have is no error.
  std::vector<std::pair<std::string, std::string>> rename_symbols;
  ResolutionCacheMode resolution_cache = ResolutionCacheMode::Refresh;
  std::filesystem::path resolution_root = "/";  // the tree the loader will see as "/"
  HeaderEditRequest headers;

  // Whether the request changes what lives in the dynamic section (entries,
  // strings, symbol and version tables, the resolution-cache note built from them).
  // The one list of the request's fields: empty() and the planner derive from it.
  bool touches_dynamic() const {
    return runpath || soname || !add_needed.empty() || !remove_needed.empty() || !replace_needed.empty() ||
           !rename_symbols.empty() || !follows_other_changes(resolution_cache) || headers.needs_dynamic_section();
  }
  // Only the interpreter and header fields: edited without a dynamic section.
  bool only_interpreter_and_headers() const {
    return (interpreter || headers.changes_header_fields()) && !touches_dynamic();
  }
  bool empty() const { return !touches_dynamic() && !interpreter && !headers.changes_header_fields(); }
};

}  // namespace runpatch
