// patchelf's behaviour for one process (see patchelf_run.hpp): the checks its
// parser makes, its prints, then one edit request per file, header fields
// included: one plan, one verification, one write.
#include "patchelf_run.hpp"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "patchelf_args.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/header_edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "runpatch/reading/section_audit.hpp"

namespace runpatch::cli {

namespace {

using Arguments = PatchelfArguments;
using elf::ET_DYN, elf::ET_EXEC;
// patchelf says "missing ELF header" for a file shorter than an Elf32_Ehdr.
constexpr uint64_t kSmallestElfHeader = sizeof(elf::Ehdr<elf::Elf32LE>);
const char* const kStaticMessage = "cannot find section '.dynamic'. The input file is most likely statically linked";
const char* const kNoInterpreterMessage =
    "cannot find section '.interp'. The input file is most likely statically linked";

Error fail(ErrorCode code, std::string message) { return make_error(code, "", std::move(message)); }
// patchelf's words for the library's error, which keeps its code.
Error fail(const Error& error) { return make_error(error.code, "", error.message()); }

// patchelf's first words for each section-header defect its parser refuses.
std::string_view patchelf_words(SectionDefect defect, bool grows_dynamic) {
  switch (defect) {
    case SectionDefect::ProgramHeadersOutOfBounds: return "program header table out of bounds";
    case SectionDefect::SectionHeadersOutOfBounds: return "section header table out of bounds";
    case SectionDefect::ProgramHeaderSize: return "program headers have wrong size";
    case SectionDefect::SectionHeaderSize: return "section headers have wrong size";
    case SectionDefect::NameTableIndex: return "string table index out of bounds";
    case SectionDefect::NameTableOffset: return "string table offset out of bounds";
    case SectionDefect::NameTablePastEnd: return "data region extends past file end";
    case SectionDefect::NameTableEmpty: return "string table size is zero";
    case SectionDefect::NameTableUnterminated: return "string table is not zero terminated";
    case SectionDefect::SectionNameOutOfBounds: return "section name offset out of bounds";
    case SectionDefect::SectionPastEnd: return "data offset extends past file end";
    case SectionDefect::DynamicUnaligned: return "section content is not naturally aligned";
    case SectionDefect::StringsUnterminated: return "string table is not NUL-terminated";
    case SectionDefect::StringIndexOutOfBounds: return "string table index out of bounds";
    case SectionDefect::DynamicUnterminated:
      // patchelf's words differ by operation: growing the table overruns it.
      return grows_dynamic ? "setSubstr: write extends past end of section"
                           : ".dynamic section has no DT_NULL terminator";
    case SectionDefect::GnuHashTooSmall: return ".gnu.hash section is too small";
    case SectionDefect::GnuHashHeader: return ".gnu.hash table header out of range";
  }
  return "invalid ELF file";
}

// What patchelf's parser refuses in the section headers (the loader never
// reads them), with its words first and runpatch's detail after; and its
// warning for symbols of unnamed sections, where it rewrites sections.
Status refuse_as_patchelf(const std::string& file, const Arguments& args, const PatchelfStreams& streams) {
  auto audit = audit_section_headers(file);
  if (!audit) return fail(audit.error());
  bool grows_dynamic = args.add_debug_tag || args.no_default_lib || !args.add_needed.empty();
  // patchelf's words alone on the first line (what scripts match), runpatch's detail on the next.
  if (audit->defect)
    return fail(ErrorCode::Malformed, fmt::format("{}\n{}: {}", patchelf_words(audit->defect->defect, grows_dynamic),
                                                  file, audit->defect->detail));
  if (patchelf_request(args).empty()) return {};
  for (size_t index : audit->unnamed_symbol_sections)
    streams.err(fmt::format("warning: symbol table entry refers to an unnamed section (index {})\n", index));
  return {};
}

// The file as patchelf reads it: missing files, short files and other
// formats give patchelf's words; other defects give runpatch's (more precise) ones.
Expected<ElfInfo> read_as_patchelf(const std::string& file, const Arguments& args, const PatchelfStreams& streams) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    return fail(ErrorCode::SystemCall, fmt::format("getting info about '{}': {}", file, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) return fail(ErrorCode::NotRegularFile, fmt::format("reading '{}': Is a directory", file));
  if (S_ISREG(st.st_mode) && uint64_t(st.st_size) < kSmallestElfHeader)
    return fail(ErrorCode::NotElf, "missing ELF header");
  if (S_ISREG(st.st_mode) && !has_elf_magic(file)) return fail(ErrorCode::NotElf, "not an ELF executable");
  if (S_ISREG(st.st_mode)) RUNPATCH_CHECK(refuse_as_patchelf(file, args, streams));
  auto info = read_elf_info(file, DynamicSource::SegmentOrSection);
  if (!info) return fail(info.error());
  if (info->type != ET_EXEC && info->type != ET_DYN) return fail(ErrorCode::Unsupported, "wrong ELF type");
  return std::move(*info);
}

// patchelf opens what it writes with open(2) and says "open: <strerror>": an
// output that is a directory or lies in a missing one, a file it may not write.
// Asked before the edit, so that no edited copy is made for nothing.
Status writable_as_patchelf(const std::string& target, bool is_output) {
  struct stat st {};
  int err = 0;
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      err = EISDIR;
    else if (::access(target.c_str(), W_OK) != 0)
      err = errno;
  } else if (is_output) {
    std::filesystem::path parent = std::filesystem::path(target).parent_path();
    if (::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0) err = errno;
  }
  if (err == 0) return {};
  return fail(ErrorCode::SystemCall, fmt::format("open: {}", std::strerror(err)));
}

char exec_stack_letter(ExecStack state) {
  switch (state) {
    case ExecStack::Executable: return 'X';
    case ExecStack::NotExecutable: return '-';
    case ExecStack::Unknown: break;
  }
  return '?';
}

// patchelf's order: interpreter, OS ABI, soname, rpath, execstack, needed.
Status print_requested(const Arguments& a, const ElfInfo& info, const std::string& file,
                       const PatchelfStreams& streams) {
  // A separate debug file keeps PT_DYNAMIC without its contents: patchelf prints nothing for it.
  bool dynamic_readable = info.has_dynamic;
  if ((a.print_rpath || a.print_needed) && !dynamic_readable && !info.debug_only)
    return fail(ErrorCode::NothingToEdit, kStaticMessage);
  if (a.print_interpreter) {
    if (!info.interpreter && !info.debug_only) return fail(ErrorCode::NothingToEdit, kNoInterpreterMessage);
    streams.out(fmt::format("{}\n", info.interpreter.value_or("")));  // a debug file's PT_INTERP has no contents
  }
  std::optional<HeaderFacts> facts;
  if (a.print_os_abi || a.print_execstack) {
    auto read = read_header_facts(file);
    if (!read) return fail(read.error());
    facts = *read;
  }
  if (a.print_os_abi) streams.out(fmt::format("{}\n", patchelf_osabi_name(facts->osabi)));
  // patchelf prints a soname of libraries only, and nothing when there is none.
  if (a.print_soname && info.type == ET_DYN && info.soname && !info.soname->empty())
    streams.out(fmt::format("{}\n", *info.soname));
  if (a.print_rpath && dynamic_readable) streams.out(fmt::format("{}\n", effective_runpath(info)));
  if (a.print_execstack) streams.out(fmt::format("execstack: {}\n", exec_stack_letter(facts->exec_stack)));
  if (a.print_needed)
    for (const auto& n : info.needed) streams.out(fmt::format("{}\n", n));
  return {};
}

Status edit_file(const Arguments& args, const ElfInfo& info, const std::string& file, const PatchelfStreams& streams) {
  EditRequest request = patchelf_request(args);
  if (info.type != ET_DYN) request.soname.reset();  // patchelf sets a soname on libraries only
  request.headers = patchelf_header_request(args);
  // The interpreter needs PT_INTERP, not a dynamic section (patchelf edits a
  // program whose PT_DYNAMIC is zeroed or gone: its tests contiguous-note-sections, empty-note).
  if (request.touches_dynamic() && info.is_static()) return fail(ErrorCode::NothingToEdit, kStaticMessage);
  if (request.interpreter && !info.interpreter) return fail(ErrorCode::NothingToEdit, kNoInterpreterMessage);
  // patchelf writes --output even when nothing changes.
  if (request.empty() && !args.output) return {};
  RUNPATCH_CHECK(writable_as_patchelf(args.output ? *args.output : file, args.output.has_value()));
  EditOptions options;
  options.output = args.output ? std::optional<std::filesystem::path>(*args.output) : std::nullopt;
  options.page_size = args.page_size;
  options.atomic_copy = args.atomic_copy;
  options.dynamic_source = DynamicSource::SegmentOrSection;
  options.mark_replaced_runpath = true;  // patchelf's X's (its suite's shared-rpath test looks for them)
  auto outcome = edit_elf_file(file, request, options);
  if (!outcome) return fail(outcome.error());
  // patchelf's words: no "patchelf: " before these.
  for (const auto& warning : outcome->warnings) streams.err(fmt::format("warning: {}: {}\n", file, warning.text));
  if (!args.debug) return {};
  streams.err(fmt::format("patching ELF file '{}': {} ({})\n", file, strategy_name(outcome->strategy),
                          outcome->layout_description));
  for (const auto& w : outcome->writes)
    streams.err(fmt::format("patching ELF file '{}': {} at offset {:#x} ({} bytes)\n", file, w.what, w.offset, w.size));
  return {};
}

}  // namespace

std::string patchelf_help(std::string_view program) {
  return fmt::format("syntax: {}\n{}  FILENAME...\n", program, patchelf_options_help());
}

Status run_patchelf(const std::vector<std::string>& words, std::string_view program, const PatchelfStreams& streams) {
  RUNPATCH_TRY(auto args, parse_patchelf_arguments(words));
  // patchelf answers --help and --version as its parser meets them, before any check.
  if (args.help) {
    streams.err(patchelf_help(program));
    return {};
  }
  if (args.version) {
    streams.out(fmt::format("patchelf {} (runpatch {})\n", kPatchelfVersion, RUNPATCH_VERSION));
    return {};
  }
  if (args.files.empty()) return fail(ErrorCode::Usage, "missing filename");
  if (args.output && args.files.size() > 1)
    return fail(ErrorCode::Usage, "--output option only allowed with single input file");
  for (const auto& file : args.files) {
    RUNPATCH_TRY(auto info, read_as_patchelf(file, args, streams));
    RUNPATCH_CHECK(print_requested(args, info, file, streams));
    RUNPATCH_CHECK(edit_file(args, info, file, streams));
  }
  return {};
}

}  // namespace runpatch::cli
