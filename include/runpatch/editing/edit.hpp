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

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

class CommitGroup;

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

enum class Durability { Auto, Sync, NoSync };
// Auto resolved: true when the edit syncs.
bool syncs(Durability durability);

struct EditOptions {
  std::optional<std::filesystem::path> output;  // write here instead of editing in place
  std::optional<uint64_t> page_size;            // alignment of a new segment (default: largest p_align)
  bool dry_run = false;                         // plan and report, write nothing
  // How the file itself is changed (docs/editing.md §4). An edit that fits the
  // existing tables is always one write into the file (a dynamic entry or a
  // string, inside one sector). One that appends a segment is, by default
  // (false), made on an edited copy renamed over the file: a process that has
  // it mapped keeps the old inode. true (--in-place, what the Nixpkgs hooks
  // pass; also implied inside a Nix build, $NIX_BUILD_TOP): written into the
  // file in crash-ordered phases, a library's grown program header table
  // committed in two one-sector steps, so a crash leaves the old or the new
  // file. Files with several hard links, whose owner a copy cannot keep, or in
  // a directory the caller cannot write are always written into.
  bool in_place = false;
  // Always take the copy path (--atomic-copy): also for single-page edits,
  // files with several hard links (this name gets the copy; other links keep
  // the old file) and files whose owner a copy cannot keep (then an error).
  bool atomic_copy = false;
  // Whether each edit waits for its bytes to reach the disk (fdatasync/fsync
  // between its phases and of a copy and its directory) — what survives a
  // power cut. The write order alone already survives a killed process (the
  // page cache keeps it). Auto: no syncs inside a Nix build ($NIX_BUILD_TOP
  // set: a build that fails is discarded, and Nix does not sync its outputs
  // either), syncs elsewhere; --sync / --no-sync decide.
  Durability durability = Durability::Auto;
  // Commit as part of this group (commit_group.hpp): the edit's first step is
  // written now, the rest when the group commits, whose errors it reports.
  CommitGroup* group = nullptr;
  // Where the dynamic table is read: patchelf's front end also edits a file
  // without PT_DYNAMIC through its `.dynamic` section (reading/elf_info.hpp).
  DynamicSource dynamic_source = DynamicSource::Segment;
};

enum class EditStrategy {
  Unchanged,  // the file already says what was asked
  InPlace,    // strings and entries fit into the existing tables
  Appended,   // new tables in a segment appended to the file
};

// The ways an edit finds room (docs/editing.md §3 names each); an edit's
// layout is the list of those it took, in order.
enum class LayoutStep {
  InterpreterInPlace,         // interpreter rewritten in place
  StringsInUnusedBytes,       // new strings in unused bytes of the string table
  StringOverOwnBytes,         // string rewritten over its own bytes
  HeaderFieldsInPlace,        // fixed-size fields rewritten in place
  ResolutionCacheRemoved,     // resolution cache removed
  ResolutionCacheInPlace,     // resolution cache rewritten in place
  ReplacedEarlierSegment,     // the segment of an earlier edit replaced
  ReusedNullEntry,            // a PT_NULL program header reused
  ReusedDuplicateNote,        // the PT_NOTE that duplicates PT_GNU_PROPERTY reused
  EvacuatedAfterTable,        // what followed the program headers moved into the new segment
  MovedProgramHeaders,        // the program header table moved into the new segment
  ResolutionCacheOwnSegment,  // resolution cache in a read-only segment of its own
  ResolutionCacheSegment,     // resolution cache in the read-only segment
};

std::string_view layout_step_name(LayoutStep step);
std::string describe_layout(const std::vector<LayoutStep>& layout);  // the names joined by "; "

// What a write changes: callers, tests and the verifier tell writes apart by
// kind; the text users see (WrittenRange::what) is derived from it.
enum class WriteKind {
  Interpreter,
  DynamicStrings,
  DynamicSection,
  ProgramHeader,          // one entry
  ProgramHeaders,         // the whole table
  ProgramHeadersInterim,  // a staged commit's interim copy of the table
  ElfHeader,
  ElfHeaderInterim,      // a staged commit's header pointing at the interim copy
  ElfAndProgramHeaders,  // adjacent, in one write
  SectionHeader,         // one entry
  SectionHeaders,        // the whole table
  AppendedSegment,
  ResolutionCacheNote,
  OldResolutionCacheNote,  // a replaced note cleared or neutralized
  VersionNeedFile,         // vn_file of a Verneed
  SymbolValue,             // st_value of a symbol in a moved section
  DynamicSymbols,          // a symbol rename's tables
  SymbolVersions,
  GnuHash,
  SysvHash,
  Relocations,
  OsAbi,  // header fields (fold_header_fields)
  StackFlags,
  StackEntry,     // PT_GNU_STACK made from a PT_NULL entry
  SymbolVersion,  // one symbol's .gnu.version entry; subject: its name
  Injected,       // edit_testing.hpp's inject_write
};

std::string_view write_kind_name(WriteKind kind);

// What an edit warns of: the file was edited as asked, at a cost the caller
// should know (tests and callers tell them apart by kind; text says it in full).
enum class EditWarningKind {
  ResolutionCacheNotWritten,  // the note could not be built (or --build-resolution-cache had nothing to resolve)
  ResolutionCacheRemoved,     // an existing note could not be rebuilt and was removed
  VersionNeedsKept,           // a removed DT_NEEDED's library still has symbol-version needs
  HoleBeforeSegment,          // moving an executable's program headers leaves a hole in the file
  RpathBecomesRunpath,        // turning DT_RPATH into DT_RUNPATH loses other objects' dependencies
};

struct EditWarning {
  EditWarningKind kind;
  std::string text;
  bool operator==(const EditWarning&) const = default;
};

struct WrittenRange {
  uint64_t offset = 0;
  uint64_t size = 0;
  WriteKind kind = WriteKind::Injected;
  std::string what;  // the kind in words (with the symbol of a SymbolVersion write)
};

// How the edited bytes reached the disk.
enum class WrittenAs {
  NotWritten,      // unchanged, or --dry-run
  IntoFile,        // writes into the file itself, committed by one write
  IntoFileStaged,  // writes into the file, a grown program header table committed in two steps
  Copy,            // an edited copy renamed over the file
  Output,          // a new file at --output
};

struct EditOutcome {
  EditStrategy strategy = EditStrategy::Unchanged;
  WrittenAs written_as = WrittenAs::NotWritten;
  std::vector<LayoutStep> layout;  // how room was found
  std::string layout_description;  // describe_layout(layout)
  std::vector<WrittenRange> writes;
  uint64_t old_size = 0;
  uint64_t new_size = 0;
  ElfInfo before;
  std::vector<EditWarning> warnings;  // e.g. why no resolution cache was written
};

std::string strategy_name(EditStrategy strategy);
std::string written_as_name(WrittenAs way);  // "" for NotWritten

Expected<EditOutcome> edit_elf_file(const std::filesystem::path& path, const EditRequest& request,
                                    const EditOptions& options = {});

}  // namespace runpatch
