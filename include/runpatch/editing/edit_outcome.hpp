// What an edit did: its layout, writes and warnings (runpatch/editing/edit.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/editing/edit_request.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

enum class EditStrategy {
  Unchanged,  // the file already says what was asked
  InPlace,    // strings and entries fit into the existing tables
  Appended,   // new tables in a segment appended to the file
};

// The ways an edit finds room (docs/editing.md §3 names each); an edit's
// layout is the list of those it took, in order.
enum class LayoutStep {
  InterpreterInPlace,          // interpreter rewritten in place
  StringsInUnusedBytes,        // new strings in unused bytes of the string table
  StringsThroughInterimPlace,  // ... written first elsewhere, then over the bytes of the old ones
  StringOverOwnBytes,          // string rewritten over its own bytes
  StringTableGrown,            // the string table grown where it lies, the tables after it moved up its last page
  HeaderFieldsInPlace,         // fixed-size fields rewritten in place
  ResolutionCacheRemoved,      // resolution cache removed
  ResolutionCacheInPlace,      // resolution cache rewritten in place
  ReplacedEarlierSegment,      // the segment of an earlier edit replaced
  ReusedNullEntry,             // a PT_NULL program header reused
  ReusedDuplicateNote,         // the PT_NOTE that duplicates PT_GNU_PROPERTY reused
  EvacuatedAfterTable,         // what followed the program headers moved into the new segment
  MovedProgramHeaders,         // the program header table moved into the new segment
  ResolutionCacheOwnSegment,   // resolution cache in a read-only segment of its own
  ResolutionCacheSegment,      // resolution cache in the read-only segment
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
  MovedTables,              // the tables after the string table, moved within their segment
  AppendedSegmentInterim,   // a rebuilt segment's copy past the end, used until it is written in its place
  ProgramHeadersToInterim,  // entries pointed at that copy (a rebuild's interim commit)
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
  // The runpath change the edit computed (once, from `before`): what it wrote,
  // or would write in a dry run. Tools print this, never a second computation.
  std::optional<RunpathChange> runpath_change;
};

// The runpath (DT_RUNPATH, else DT_RPATH) the file has after the edit: "" for none.
std::string runpath_after(const EditOutcome& outcome);

std::string strategy_name(EditStrategy strategy);
std::string written_as_name(WrittenAs way);  // "" for NotWritten

}  // namespace runpatch
