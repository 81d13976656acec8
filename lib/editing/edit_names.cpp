// The text of the editor's kinds: what users read in messages and reports.
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/editing/edit.hpp"

namespace runpatch {

std::string written_as_name(WrittenAs way) {
  switch (way) {
    case WrittenAs::NotWritten: return "";
    case WrittenAs::IntoFile: return "written into the file";
    case WrittenAs::IntoFileStaged: return "written into the file (staged commit)";
    case WrittenAs::Copy: return "an edited copy replaced the file";
    case WrittenAs::Output: return "written to the output";
  }
  return "?";
}

std::string strategy_name(EditStrategy strategy) {
  switch (strategy) {
    case EditStrategy::Unchanged: return "unchanged";
    case EditStrategy::InPlace: return "in place";
    case EditStrategy::Appended: return "appended segment";
  }
  return "?";
}

std::string_view layout_step_name(LayoutStep step) {
  switch (step) {
    case LayoutStep::InterpreterInPlace: return "interpreter rewritten in place";
    case LayoutStep::StringsInUnusedBytes: return "new strings in unused bytes of the string table";
    case LayoutStep::StringsThroughInterimPlace:
      return "staged through an interim place to where one edit would put them";
    case LayoutStep::StringOverOwnBytes: return "string rewritten over its own bytes";
    case LayoutStep::StringTableGrown:
      return "string table grown where it lies (the tables after it moved up, into its segment's last page)";
    case LayoutStep::HeaderFieldsInPlace: return "fixed-size fields rewritten in place";
    case LayoutStep::ResolutionCacheRemoved: return "resolution cache removed";
    case LayoutStep::ResolutionCacheInPlace: return "resolution cache rewritten in place";
    case LayoutStep::ReplacedEarlierSegment: return "replaced the segment of an earlier edit";
    case LayoutStep::ReusedNullEntry: return "reused a PT_NULL program header";
    case LayoutStep::ReusedDuplicateNote: return "reused the PT_NOTE that duplicates PT_GNU_PROPERTY";
    case LayoutStep::EvacuatedAfterTable:
      return "moved what followed the program headers (interpreter, notes, dynamic tables) into the new segment";
    case LayoutStep::MovedProgramHeaders: return "moved the program header table into the new segment";
    case LayoutStep::ResolutionCacheOwnSegment: return "resolution cache in a read-only segment of its own";
    case LayoutStep::ResolutionCacheSegment: return "resolution cache in a read-only segment";
  }
  return "?";
}

std::string_view write_kind_name(WriteKind kind) {
  switch (kind) {
    case WriteKind::Interpreter: return "interpreter";
    case WriteKind::DynamicStrings: return "dynamic strings";
    case WriteKind::DynamicSection: return "dynamic section";
    case WriteKind::ProgramHeader: return "program header";
    case WriteKind::ProgramHeaders: return "program headers";
    case WriteKind::ProgramHeadersInterim: return "program headers (interim copy)";
    case WriteKind::ElfHeader: return "ELF header";
    case WriteKind::ElfHeaderInterim: return "ELF header (interim table)";
    case WriteKind::ElfAndProgramHeaders: return "ELF and program headers";
    case WriteKind::SectionHeader: return "section header";
    case WriteKind::SectionHeaders: return "section headers";
    case WriteKind::AppendedSegment: return "appended segment";
    case WriteKind::MovedTables: return "tables moved within their segment";
    case WriteKind::AppendedSegmentInterim: return "appended segment (interim copy)";
    case WriteKind::ProgramHeadersToInterim: return "program headers (pointing at the interim copy)";
    case WriteKind::ResolutionCacheNote: return "resolution cache";
    case WriteKind::OldResolutionCacheNote: return "old resolution cache";
    case WriteKind::VersionNeedFile: return "version need file";
    case WriteKind::SymbolValue: return "symbol value";
    case WriteKind::DynamicSymbols: return "dynamic symbols";
    case WriteKind::SymbolVersions: return "symbol versions";
    case WriteKind::GnuHash: return "GNU hash table";
    case WriteKind::SysvHash: return "hash table";
    case WriteKind::Relocations: return "relocations";
    case WriteKind::OsAbi: return "EI_OSABI";
    case WriteKind::StackFlags: return "PT_GNU_STACK flags";
    case WriteKind::StackEntry: return "PT_GNU_STACK (in a PT_NULL entry)";
    case WriteKind::SymbolVersion: return "version";
    case WriteKind::Injected: return "injected write";
  }
  return "write";
}

std::string describe_layout(const std::vector<LayoutStep>& layout) {
  std::string text;
  for (LayoutStep step : layout) {
    if (!text.empty()) text += "; ";
    text += layout_step_name(step);
  }
  return text;
}

std::string runpath_after(const EditOutcome& outcome) {
  std::string before = outcome.before.runpath.value_or(outcome.before.rpath.value_or(""));
  if (!outcome.runpath_change) return before;
  switch (outcome.runpath_change->kind) {
    case RunpathChange::Kind::Keep: return before;
    case RunpathChange::Kind::Set: return outcome.runpath_change->value;
    case RunpathChange::Kind::Remove: return "";
  }
  return before;
}

}  // namespace runpatch
