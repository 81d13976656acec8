// Phases 3 and 4 of an appended segment: its strings, the layout of its
// parts and where it goes in the file and in memory.
#include "editing/appended_layout.hpp"
#include "runpatch/reading/machines.hpp"

namespace runpatch {

namespace {

constexpr uint64_t kMaxHole = uint64_t(1) << 30;

// How much of the dynamic strings the copy keeps: up to the last one that
// anything still references (the runpath the edit replaces, written last by
// linkers and by earlier edits, goes), so that repeated edits do not pile up
// old strings and the copy is the same whichever edits led to it.
template <class E>
uint64_t kept_strings_size(const PlanInputs<E>& in) {
  auto used = in.surviving_string_refs();
  if (!used) return in.table.strtab_size;  // cannot tell what is referenced: keep everything
  uint64_t end = 1;                        // the empty string at offset 0
  for (const auto& r : *used) end = std::max(end, r.end);
  return std::min<uint64_t>(end, in.table.strtab_size);
}

// The page binutils (strip, objcopy) lays segments out by for this machine
// (its ELF_MAXPAGESIZE): a moved program header table must sit sizeof(Ehdr)
// past a boundary of it, not of the largest p_align (2 MiB for many CUDA
// libraries), so the file grows by less than one such page.
template <class E>
uint64_t binutils_page(const MappedElfView<E>& view) {
  const MachineFacts* facts = machine_facts(view.ehdr().e_machine);
  return facts ? facts->binutils_page : kMinPage;
}

// [vaddr, vaddr + size) above every segment and inside the class's address
// space: placing above a segment that ends near the top wraps around.
template <class E>
bool fits_address_space(uint64_t vaddr, uint64_t size, uint64_t above) {
  uint64_t space_end = E::is64 ? UINT64_MAX : UINT32_MAX;
  return vaddr >= above && vaddr <= space_end && size <= space_end - vaddr;
}

// Past the segment, up to the end of the file, only what an earlier edit
// copied there: the section names, then the section header table (an
// executable's); appended_writes copies them again.
template <class E>
bool only_section_tables_past(const MappedElfView<E>& view, uint64_t from, uint64_t end) {
  auto shdrs = view.shdrs();
  uint64_t size = view.bytes().size(), shoff = view.ehdr().e_shoff;
  uint64_t table_end = shoff + uint64_t(shdrs.size()) * sizeof(elf::Shdr<E>);
  bool table_past = !shdrs.empty() && shoff >= end;
  if (!shdrs.empty() && !table_past && table_end > from) return false;
  if (table_past && table_end != size) return false;
  uint64_t names_must_end = table_past ? shoff : size;
  if (end == names_must_end) return true;
  uint32_t names = view.shstrndx();
  if (names == 0 || names >= shdrs.size() || (shdrs[names].sh_flags & elf::SHF_ALLOC)) return false;
  uint64_t names_end = uint64_t(shdrs[names].sh_offset) + shdrs[names].sh_size;
  // The table is 8-byte aligned after the names.
  return shdrs[names].sh_offset >= end && names_end <= names_must_end && names_must_end - names_end < 8;
}

// Bytes the new segment is written over: the tail of an edit killed before
// its commit (the reader recognizes it), or, when the result is a copy, the
// segment of an earlier edit that ends the file with nothing else in it or
// after it — so that N edits cost about one.
template <class E>
std::optional<uint64_t> reclaimable_tail(const PlanInputs<E>& in, const EarlierSegments<E>& earlier) {
  if (!earlier.carries_dynamic()) return std::nullopt;
  if (in.info.interrupted_edit_tail) return in.info.interrupted_edit_tail;
  const auto& segment = earlier.earlier_segment;
  if (!in.options.reclaim_earlier_segment || !segment) return std::nullopt;
  uint64_t from = segment->p_offset, end = from + uint64_t(segment->p_filesz);
  if (end > in.view.bytes().size()) return std::nullopt;
  if (!only_section_tables_past(in.view, from, end)) return std::nullopt;
  const auto& eh = in.view.ehdr();
  if (uint64_t(eh.e_phoff) < from && uint64_t(eh.e_phoff) + uint64_t(eh.e_phnum) * sizeof(elf::Phdr<E>) > from)
    return std::nullopt;
  for (const auto& ph : in.view.phdrs())
    if (ph.p_filesz > 0 && uint64_t(ph.p_offset) + uint64_t(ph.p_filesz) > from &&
        !covers(*segment, ph.p_offset, ph.p_filesz))
      return std::nullopt;
  return from;
}

// The parts of the segment in order, each at its offset in it.
template <class E>
void lay_out_parts(Placement& placement, const EarlierSegments<E>& earlier, const Room<E>& room,
                   const PlacedStrings& strings) {
  const bool carries_dynamic = earlier.carries_dynamic();
  layout::SegmentParts parts;
  parts.phdr_table = room.move_phdrs ? room.phdrs.size() * sizeof(elf::Phdr<E>) : 0;
  parts.has_dynamic = carries_dynamic;
  placement.dyn_slots = carries_dynamic ? strings.model.entries.size() + 1 + kSpareDynamicSlots : 0;
  parts.strtab = strings.strtab.size();
  parts.dynamic = placement.dyn_slots * sizeof(elf::Dyn<E>);
  parts.interp = room.move_interp ? room.interp_text.size() + 1 : 0;
  for (const auto& c : room.carried) parts.carried.push_back({c.size, c.align});
  parts.note = earlier.new_note == NewNote::InTheSegment ? earlier.note_bytes.size() : 0;
  placement.rel = layout::lay_out_segment(parts);
  placement.carried = room.carried;
  for (size_t i = 0; i < placement.carried.size(); ++i) placement.carried[i].rel = placement.rel.carried[i];
}

// The end of the highest PT_LOAD that stays, and the first PT_LOAD.
template <class E>
std::pair<uint64_t, const elf::Phdr<E>*> loads_that_stay(const PlanInputs<E>& in, const EarlierSegments<E>& earlier) {
  uint64_t max_end = 0;
  const elf::Phdr<E>* first_load = nullptr;
  for (const auto& ph : in.view.phdrs()) {
    bool given_up = (earlier.earlier_segment && ph.p_offset == earlier.earlier_segment->p_offset) ||
                    (earlier.earlier_note && ph.p_offset == earlier.earlier_note->p_offset);
    if (ph.p_type == elf::PT_LOAD && !given_up) {
      max_end = std::max<uint64_t>(max_end, uint64_t(ph.p_vaddr) + uint64_t(ph.p_memsz));
      if (!first_load) first_load = &ph;
    }
  }
  return {max_end, first_load};
}

// Executables whose program headers move keep the first PT_LOAD's
// vaddr-offset delta, as older kernels derive AT_PHDR from it.
template <class E>
Status keep_first_load_delta(const PlanInputs<E>& in, Placement& placement, const elf::Phdr<E>& first_load,
                             uint64_t max_end, uint64_t page) {
  uint64_t delta0 = uint64_t(first_load.p_vaddr) - uint64_t(first_load.p_offset);
  if (delta0 % page != 0 || uint64_t(first_load.p_vaddr) < uint64_t(first_load.p_offset))
    return in.view.error(ErrorCode::ProgramHeadersCannotMove,
                         "cannot move the program headers: first PT_LOAD is not page-congruent");
  uint64_t off = layout::offset_keeping_delta(placement.seg_off, max_end, page, delta0);
  if (off - placement.seg_off > page)
    placement.warnings.push_back({EditWarningKind::HoleBeforeSegment,
                                  fmt::format("the file grows by a {} KiB hole: moving the program headers of an "
                                              "executable keeps them where kernels before 5.18 look for them",
                                              (off - placement.seg_off) >> 10)});
  placement.seg_off = off;
  placement.seg_vaddr = off + delta0;
  return {};
}

}  // namespace

template <class E>
PlacedStrings appended_strings(const PlanInputs<E>& in, const EarlierSegments<E>& earlier) {
  if (!earlier.carries_dynamic()) return {in.model, {}, {}};
  uint64_t kept = in.options.mark_replaced_runpath ? in.table.strtab_size : kept_strings_size(in);
  return StringPlacer<E>(in).in_extended_table(kept);
}

// vaddr ≡ offset (mod page), above every segment: no padding in the file.
template <class E>
Expected<Placement> place_segment(const PlanInputs<E>& in, const EarlierSegments<E>& earlier, const Room<E>& room,
                                  const PlacedStrings& strings) {
  Placement placement;
  lay_out_parts(placement, earlier, room, strings);
  placement.reclaimed_from = reclaimable_tail(in, earlier);
  uint64_t page = in.page_size(), old_size = placement.reclaimed_from.value_or(in.view.bytes().size());
  auto [max_end, first_load] = loads_that_stay(in, earlier);
  placement.seg_off = room.move_phdrs ? layout::moved_table_offset(old_size, std::min(page, binutils_page(in.view)),
                                                                   sizeof(elf::Ehdr<E>))
                                      : align_up(old_size, 16);
  placement.seg_vaddr = layout::congruent_address(placement.seg_off, max_end, page);
  bool needs_congruence = room.move_phdrs && (in.view.find_phdr(elf::PT_PHDR) || in.info.is_executable());
  if (needs_congruence && first_load) RUNPATCH_CHECK(keep_first_load_delta(in, placement, *first_load, max_end, page));
  // The hole stays sparse, but copies and archives expand it: bound it (a corrupt address would be unbounded).
  if (placement.seg_off - old_size > kMaxHole)
    return in.view.error(ErrorCode::HoleTooLarge,
                         fmt::format("a new segment would need a {} MiB hole before it (address space ends at {:#x})",
                                     (placement.seg_off - old_size) >> 20, max_end));
  if (!fits_address_space<E>(placement.seg_vaddr, placement.rel.size, max_end))
    return in.view.error(ErrorCode::NoAddressSpace, "no address space left above the last segment");
  // The note's own segment follows in the file without a gap and one page
  // higher in memory: its first file page may be the read-write segment's
  // last, mapped twice, but no page of memory is both.
  placement.note_off = placement.seg_off + placement.rel.note;
  placement.note_vaddr = placement.seg_vaddr + placement.rel.note;
  if (earlier.new_note == NewNote::OwnSegment) {
    placement.note_off = align_up(placement.seg_off + placement.rel.size, 8);
    placement.note_vaddr = placement.note_off + (placement.seg_vaddr - placement.seg_off) + page;
    if (!fits_address_space<E>(placement.note_vaddr, earlier.note_bytes.size(), max_end))
      return in.view.error(ErrorCode::NoAddressSpace, "no address space left above the last segment");
  }
  return placement;
}

#define RUNPATCH_INSTANTIATE(E)                                                                               \
  template PlacedStrings appended_strings(const PlanInputs<E>&, const EarlierSegments<E>&);                   \
  template Expected<Placement> place_segment(const PlanInputs<E>&, const EarlierSegments<E>&, const Room<E>&, \
                                             const PlacedStrings&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
