#include "editing/plan_inputs.hpp"

namespace runpatch {

namespace {

// The editor maps new addresses through the PT_LOADs and copies segments'
// bytes, so they must be sound (gABI: inside the file; p_filesz <= p_memsz;
// power-of-two alignment; no two PT_LOADs overlapping in memory). The loader
// rejects or crashes on such files anyway; editing one would produce a file
// whose new tables map to the wrong bytes.
template <class E>
Status check_load_segment(const MappedElfView<E>& view, size_t i, uint64_t at) {
  const auto& phdrs = view.phdrs();
  const auto& a = phdrs[i];
  if (a.p_filesz > a.p_memsz)
    return view.malformed(fmt::format("PT_LOAD #{}: file size is larger than memory size", i), at);
  // Alignment decides where a new segment goes: a corrupt one would pad the file without bound.
  if (a.p_align > 1 && ((a.p_align & (a.p_align - 1)) != 0 || a.p_align > kMaxLoadAlign))
    return view.malformed(
        fmt::format("PT_LOAD #{}: alignment {:#x} is not a power of two up to 64 MiB", i, uint64_t(a.p_align)), at);
  if (uint64_t(a.p_vaddr) + uint64_t(a.p_memsz) < uint64_t(a.p_vaddr))
    return view.malformed(fmt::format("PT_LOAD #{}: address range wraps around", i), at);
  for (size_t j = 0; j < i; ++j) {
    const auto& b = phdrs[j];
    if (b.p_type != elf::PT_LOAD || a.p_memsz == 0 || b.p_memsz == 0) continue;
    if (a.p_vaddr < b.p_vaddr + b.p_memsz && b.p_vaddr < a.p_vaddr + a.p_memsz)
      return view.malformed(fmt::format("PT_LOAD #{} and #{} overlap in memory", j, i), at);
  }
  return {};
}

template <class E>
Status check_segments(const MappedElfView<E>& view) {
  const auto& phdrs = view.phdrs();
  uint64_t header_offset = view.ehdr().e_phoff;
  for (size_t i = 0; i < phdrs.size(); ++i) {
    const auto& a = phdrs[i];
    uint64_t at = header_offset + i * sizeof(elf::Phdr<E>);
    // Any segment's bytes may be carried into the new segment (notes, interpreter).
    if (a.p_filesz > 0 && (a.p_offset > view.bytes().size() || a.p_filesz > view.bytes().size() - a.p_offset))
      return view.malformed(
          fmt::format("program header #{} (type {:#x}) extends past the end of the file", i, uint32_t(a.p_type)), at);
    if (a.p_type == elf::PT_LOAD) RUNPATCH_CHECK(check_load_segment(view, i, at));
  }
  return {};
}

// Bytes of the string table no string uses are where new strings go: if
// the table overlaps another structure, those bytes are that structure.
template <class E>
Status check_string_table_alone(const MappedElfView<E>& view, const DynamicTable<E>& table) {
  uint64_t begin = table.strtab_offset, end = begin + table.strtab_size;
  auto overlaps = [&](uint64_t off, uint64_t size) { return size > 0 && off < end && begin < off + size; };
  const auto& eh = view.ehdr();
  std::vector<std::pair<const char*, std::pair<uint64_t, uint64_t>>> others = {
      {"the ELF header", {0, sizeof(elf::Ehdr<E>)}},
      {"the program header table", {uint64_t(eh.e_phoff), view.phdrs().size() * sizeof(elf::Phdr<E>)}},
      {"the dynamic section", {table.offset, table.slots.size() * sizeof(elf::Dyn<E>)}},
      {"the section header table", {uint64_t(eh.e_shoff), view.shdrs().size() * sizeof(elf::Shdr<E>)}},
  };
  for (const auto& [what, range] : others)
    if (overlaps(range.first, range.second))
      return view.malformed(std::string("the dynamic string table overlaps ") + what, begin);
  for (const auto& sh : view.shdrs()) {
    if (!(sh.sh_flags & elf::SHF_ALLOC) || sh.sh_type == elf::SHT_NOBITS) continue;
    bool is_the_table = sh.sh_offset <= begin && uint64_t(sh.sh_offset) + uint64_t(sh.sh_size) >= end;
    if (!is_the_table && overlaps(sh.sh_offset, sh.sh_size))
      return view.malformed("the dynamic string table overlaps another allocated section", begin);
  }
  return {};
}

template <class E>
Expected<DynamicModel> requested_model(const PlanInputs<E>& in, const EditRequest& request) {
  DynamicModel model = in.original;
  if (request.runpath) {
    RUNPATCH_TRY(RunpathChange change, request.runpath(in.info));
    if (change.kind == RunpathChange::Kind::Set)
      model.set_runpath(change.value, request.force_rpath ? elf::DT_RPATH : elf::DT_RUNPATH);
    else if (change.kind == RunpathChange::Kind::Remove)
      model.remove_runpath();
  }
  if (request.soname) model.set_soname(*request.soname);
  for (const auto& [from, to] : request.replace_needed) model.replace_needed(from, to);
  for (const auto& name : request.remove_needed) model.remove_needed(name);
  model.add_needed(request.add_needed, request.add_needed_even_if_present);
  if (request.headers.no_default_lib) model.set_flags_1(elf::DF_1_NODEFLIB);
  // ld.so writes r_debug's address into DT_DEBUG (gdb finds the link map there).
  if (request.headers.add_debug_tag) model.add_once(elf::DT_DEBUG, 0);
  for (const auto& e : model.entries)
    if (e.text && e.text->find('\0') != std::string::npos)
      return in.view.error(ErrorCode::InvalidRequest, "a new string contains a NUL byte");
  return model;
}

// ld.so finds the library a Verneed names by vn_file: a replaced DT_NEEDED
// whose versions stay under the old name aborts the program at start-up
// (dl-version.c: "needed != NULL"). patchelf rewrites vn_file too.
template <class E>
Status plan_version_need_files(PlanInputs<E>& in, const EditRequest& request) {
  if (request.replace_needed.empty() && request.remove_needed.empty()) return {};
  detail::StringRefCollector<E> refs(in.view, in.table);
  RUNPATCH_TRY(auto files, refs.version_need_files());
  for (const auto& file : files) {
    for (const auto& [from, to] : request.replace_needed)
      if (file.library == from && from != to) {
        in.version_need_renames.push_back({file.field_offset, to});
        break;
      }
    // As patchelf, a removed library's version needs stay (docs/editing.md); say what that means.
    const auto& removed = request.remove_needed;
    if (std::find(removed.begin(), removed.end(), file.library) != removed.end())
      in.warnings.push_back({EditWarningKind::VersionNeedsKept,
                             fmt::format("{} still has symbol-version needs (.gnu.version_r): ld.so aborts at start-up "
                                         "unless another object loads it",
                                         file.library)});
  }
  return {};
}

template <class E>
Expected<InterpreterChange<E>> interpreter_change(const MappedElfView<E>& view, const ElfInfo& info,
                                                  const EditRequest& request) {
  InterpreterChange<E> change;
  if (!request.interpreter || request.interpreter == info.interpreter) return change;
  change.phdr = view.find_phdr(elf::PT_INTERP);
  if (!change.phdr) return view.error(ErrorCode::NothingToEdit, "file has no interpreter (PT_INTERP) to replace");
  change.changed = true;
  change.text = *request.interpreter;
  change.needs_room = change.text.size() + 1 > uint64_t(change.phdr->p_filesz);
  return change;
}

}  // namespace

template <class E>
Expected<PlanInputs<E>> resolve_plan_inputs(const MappedElfView<E>& view, const ElfInfo& info,
                                            const PlanOptions& options, const EditRequest& request,
                                            const DynamicTable<E>* table) {
  PlanInputs<E> in{view, info, options};
  RUNPATCH_CHECK(check_segments(view));
  if (!table) {
    RUNPATCH_TRY(in.interp, interpreter_change(view, info, request));
    return in;
  }
  in.table = *table;
  RUNPATCH_CHECK(check_string_table_alone(view, in.table));
  RUNPATCH_TRY(in.original, DynamicModel::load(view, in.table));
  RUNPATCH_TRY(in.model, requested_model(in, request));
  RUNPATCH_TRY(in.renamer, SymbolRenamer<E>::plan(view, in.table, request.rename_symbols));
  RUNPATCH_CHECK(plan_version_need_files(in, request));
  RUNPATCH_TRY(in.interp, interpreter_change(view, info, request));
  in.stack_entry_wanted =
      request.headers.exec_stack && !view.find_phdr(elf::PT_GNU_STACK) && !view.find_phdr(elf::PT_NULL);
  RUNPATCH_TRY(in.note, plan_note_change(view, info, in.original, in.model, request));
  return in;
}

#define RUNPATCH_INSTANTIATE(E)                                                                                     \
  template Expected<PlanInputs<E>> resolve_plan_inputs(const MappedElfView<E>&, const ElfInfo&, const PlanOptions&, \
                                                       const EditRequest&, const DynamicTable<E>*);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
