// Editing ELF files in place: runpath, interpreter, soname and needed entries.
// Edits are planned in memory, then written so that a crash at any moment
// leaves the old or the new file (see docs/editing.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runpatch/elf_info.hpp"
#include "runpatch/expected.hpp"
#include "runpatch/resolution_cache.hpp"

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

// What an edit does to the resolution-cache note (runpatch/resolution_cache.hpp).
enum class ResolutionCacheMode {
  Refresh,  // a note the file has is rebuilt for the edited file: never left stale
  Write,    // written, or refreshed (runpatch --ldcache, patchelf --build-resolution-cache)
  Remove,
};

struct EditRequest {
  RunpathUpdate runpath;       // null: leave the runpath alone
  bool force_rpath = false;    // write DT_RPATH (patchelf --force-rpath); default writes DT_RUNPATH
  std::optional<std::string> interpreter;
  std::optional<std::string> soname;
  std::vector<std::string> add_needed;     // inserted first, in this order
  std::vector<std::string> remove_needed;
  std::vector<std::pair<std::string, std::string>> replace_needed;  // old -> new
  // Dynamic symbols renamed old -> new (patchelf --rename-dynamic-symbols);
  // a name the file does not have is no error.
  std::vector<std::pair<std::string, std::string>> rename_symbols;
  ResolutionCacheMode resolution_cache = ResolutionCacheMode::Refresh;
  std::filesystem::path resolution_root = "/";  // the tree the loader will see as "/"

  bool empty() const {
    return !runpath && !interpreter && !soname && add_needed.empty() && remove_needed.empty() &&
           replace_needed.empty() && rename_symbols.empty() && resolution_cache == ResolutionCacheMode::Refresh;
  }
};

struct EditOptions {
  std::optional<std::filesystem::path> output;  // write here instead of editing in place
  std::optional<uint64_t> page_size;            // alignment of a new segment (default: largest p_align)
  bool dry_run = false;                         // plan and report, write nothing
  // How the file itself is changed. Default (false): atomically — the edit is
  // made on a copy that is renamed over the file, so a crash at any moment
  // leaves the old or the new file, and running programs can be edited; an
  // edit that is one write within one page is done in place (equally atomic).
  // true: writes go into the file in crash-ordered phases (a crash leaves a
  // loadable file, not necessarily byte-identical to old or new); no copy,
  // so a 300 MB library is edited in milliseconds. Files with several hard
  // links are always edited in place, so that every link sees the change.
  bool in_place = false;
  // Always take the copy path (--atomic-copy): also for single-page edits,
  // files with several hard links (this name gets the copy; other links keep
  // the old file) and files whose owner a copy cannot keep (then an error).
  bool atomic_copy = false;
  // Testing only: perform this many of the planned writes, then stop as if killed.
  std::optional<size_t> stop_after_writes;
  // Testing only: a deliberately wrong plan, which verification must catch
  // (the file stays untouched): a write the planner did not make (offset,
  // bytes), and/or the plan's writes named `what` dropped.
  std::optional<std::pair<uint64_t, std::vector<uint8_t>>> inject_write_for_testing;
  std::optional<std::string> drop_writes_for_testing;
};

enum class EditStrategy {
  Unchanged,  // the file already says what was asked
  InPlace,    // strings and entries fit into the existing tables
  Appended,   // new tables in a segment appended to the file
};

struct WrittenRange {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string what;
};

struct EditOutcome {
  EditStrategy strategy = EditStrategy::Unchanged;
  std::string layout_note;  // how room was found (docs/editing.md names each way)
  std::vector<WrittenRange> writes;
  uint64_t old_size = 0;
  uint64_t new_size = 0;
  ElfInfo before;
  std::vector<std::string> warnings;  // e.g. why no resolution cache was written
};

std::string strategy_name(EditStrategy strategy);

Expected<EditOutcome> edit_elf_file(const std::filesystem::path& path, const EditRequest& request,
                                    const EditOptions& options = {});

// Runpath string helpers (":"-separated lists).
std::vector<std::string> split_runpath(const std::string& runpath);
std::string join_runpath(const std::vector<std::string>& entries);

}  // namespace runpatch
