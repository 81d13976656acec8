// Phases 5 and 6 of an appended segment: the new program headers and
// dynamic entries, the segment's bytes, the section headers, and the writes
// that prepare, commit and clean up the edit.
#include "editing/appended_layout.hpp"

namespace runpatch {

namespace {

struct MovedSection {
  size_t index;
  uint64_t old_addr, old_size, new_addr;
};

template <class E>
void describe(elf::Phdr<E>& ph, uint32_t type, uint32_t flags, uint64_t offset, uint64_t vaddr, uint64_t size,
              uint64_t align) {
  ph.p_type = type;
  ph.p_flags = flags;
  ph.p_offset = offset;
  ph.p_vaddr = vaddr;
  ph.p_paddr = vaddr;
  ph.p_filesz = size;
  ph.p_memsz = size;
  ph.p_align = align;
}

template <class E>
class AppendedWriter {
  using Ehdr = elf::Ehdr<E>;
  using Phdr = elf::Phdr<E>;
  using Shdr = elf::Shdr<E>;
  using Dyn = elf::Dyn<E>;
  using Sym = elf::Sym<E>;

 public:
  explicit AppendedWriter(const AppendedLayout<E>& layout)
      : in_(layout.in),
        view_(layout.in.view),
        carries_dynamic_(layout.earlier.carries_dynamic()),
        earlier_(layout.earlier),
        room_(layout.room),
        strings_(layout.strings),
        at_(layout.placement),
        phdrs_(program_headers()),
        dynamic_(rebased_dynamic()),
        rename_writes_(carries_dynamic_ ? in_.renamer.writes(view_, strings_.offsets) : std::vector<PlannedWrite>()) {}

  Expected<EditPlan> plan() const {
    std::vector<uint8_t> tail = segment_bytes();
    EditPlan plan;
    neutralize_shared_note(plan, tail);
    std::vector<uint8_t> header = in_.copy_range(0, sizeof(Ehdr));
    auto* new_eh = struct_at<Ehdr>(header, 0);
    RUNPATCH_TRY(auto moved, update_section_headers(plan, tail, *new_eh));
    if (view_.ehdr().e_phnum == elf::PN_XNUM)
      return view_.error(ErrorCode::TooManyProgramHeaders, "extended program header numbering (PN_XNUM) cannot grow");
    new_eh->e_phnum = static_cast<uint16_t>(phdrs_.size());
    plan.strategy = EditStrategy::Appended;
    plan.fits_later_tools = !room_.move_phdrs && (!room_.grow_in_place || room_.room_for_patchelf);
    plan.layout = room_.layout;
    if (earlier_.new_note != NewNote::None)
      plan.layout.push_back(earlier_.new_note == NewNote::OwnSegment ? LayoutStep::ResolutionCacheOwnSegment
                                                                     : LayoutStep::ResolutionCacheSegment);
    plan.new_size = at_.seg_off + tail.size();
    plan.reclaimed_from = at_.reclaimed_from;
    plan.writes.push_back({WritePhase::Prepare, at_.seg_off, std::move(tail), WriteKind::AppendedSegment});
    add_header_writes(plan, std::move(header));
    // A new interpreter that fits where the old one is, while the segment is appended for other reasons.
    if (in_.interp.changed && !room_.move_interp) plan.writes.push_back(interpreter_write(in_, WritePhase::Commit));
    // Without the dynamic section, the strings stay where the in-place layout put them (and wrote these).
    if (carries_dynamic_) {
      CarriedSpans carried;
      for (const auto& c : at_.carried) carried.emplace_back(c.off, c.size);
      add_version_need_writes(in_, strings_.offsets, plan, carried);
      add_symbol_rename_writes(rename_writes_, plan, carried);
    }
    add_symbol_updates(plan, moved, carries_dynamic_ ? at_.seg_vaddr + at_.rel.dynamic : in_.table.vaddr);
    zero_tables_left_behind(plan);
    plan.warnings = at_.warnings;
    return plan;
  }

 private:
  // ---- Phase 5: program headers and dynamic entries ---------------------------

  std::vector<Phdr> program_headers() const {
    std::vector<Phdr> phdrs = room_.phdrs;
    uint64_t page = in_.page_size();
    size_t load_at = room_.load_at;
    auto note_size = earlier_.note_bytes.size();
    // The loader may write DT_DEBUG and relocate the dynamic table; notes and headers are only read.
    describe<E>(phdrs[load_at], elf::PT_LOAD, carries_dynamic_ ? elf::PF_R | elf::PF_W : elf::PF_R, at_.seg_off,
                at_.seg_vaddr, at_.rel.size, page);
    if (earlier_.new_note == NewNote::OwnSegment)
      describe<E>(phdrs[load_at + 1], elf::PT_LOAD, elf::PF_R, at_.note_off, at_.note_vaddr, note_size, page);
    if (room_.note_at)
      describe<E>(phdrs[*room_.note_at], elf::PT_NOTE, elf::PF_R, at_.note_off, at_.note_vaddr, note_size, 4);
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (i != load_at && i != room_.note_at && !(earlier_.new_note == NewNote::OwnSegment && i == load_at + 1))
        move_segment_entry(phdrs[i], phdrs.size() * sizeof(Phdr));
    return phdrs;
  }

  void point(Phdr& ph, uint64_t rel, std::optional<uint64_t> size = std::nullopt) const {
    ph.p_offset = at_.seg_off + rel;
    ph.p_vaddr = at_.seg_vaddr + rel;
    ph.p_paddr = at_.seg_vaddr + rel;
    if (size) ph.p_filesz = ph.p_memsz = *size;
  }

  // An existing entry whose contents moved into the new segment follows them.
  void move_segment_entry(Phdr& ph, uint64_t table_size) const {
    if (ph.p_type == elf::PT_DYNAMIC && carries_dynamic_) {
      point(ph, at_.rel.dynamic, at_.dyn_slots * sizeof(Dyn));
    } else if (ph.p_type == elf::PT_INTERP && room_.move_interp) {
      point(ph, at_.rel.interp, room_.interp_text.size() + 1);
    } else if (ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY) {
      for (const auto& c : at_.carried)
        if (ph.p_offset == c.off && ph.p_filesz == c.size) point(ph, c.rel);
    } else if (ph.p_type == elf::PT_PHDR && room_.grow_in_place) {
      ph.p_filesz = ph.p_memsz = table_size;
    } else if (ph.p_type == elf::PT_PHDR && room_.move_phdrs) {
      point(ph, at_.rel.phdrs, table_size);
    }
  }

  DynamicModel rebased_dynamic() const {
    DynamicModel model = strings_.model;
    if (!carries_dynamic_) return model;
    for (auto& e : model.entries) {
      for (const auto& c : at_.carried)
        if (c.dynamic_tag != 0 && e.tag == c.dynamic_tag) e.value = at_.seg_vaddr + c.rel;
      if (e.tag == elf::DT_STRTAB) e.value = at_.seg_vaddr + at_.rel.strtab;
      if (e.tag == elf::DT_STRSZ) e.value = strings_.strtab.size();
      if (e.tag == elf::DT_MIPS_RLD_MAP_REL) {
        // Relative to its own entry's address, which moves with the table.
        uint64_t index = &e - model.entries.data();
        uint64_t old_addr = in_.table.vaddr + index * sizeof(Dyn);
        e.value = e.value + old_addr - (at_.seg_vaddr + at_.rel.dynamic + index * sizeof(Dyn));
      }
    }
    return model;
  }

  // ---- Phase 6: the appended bytes and the writes -----------------------------

  // The segments, then a copy of the section headers. The padding before the
  // segment is not written: past the old end it reads as zeros anyway.
  std::vector<uint8_t> segment_bytes() const {
    const auto& rel = at_.rel;
    std::vector<uint8_t> tail(rel.size, 0);
    if (carries_dynamic_) {
      std::memcpy(tail.data() + rel.strtab, strings_.strtab.data(), strings_.strtab.size());
      auto dyn_bytes = serialize_dynamic<E>(dynamic_, at_.dyn_slots);
      std::memcpy(tail.data() + rel.dynamic, dyn_bytes.data(), dyn_bytes.size());
    }
    if (room_.move_interp)
      std::memcpy(tail.data() + rel.interp, room_.interp_text.c_str(), room_.interp_text.size() + 1);
    if (room_.move_phdrs) std::memcpy(tail.data() + rel.phdrs, phdrs_.data(), phdrs_.size() * sizeof(Phdr));
    for (const auto& c : at_.carried) std::memcpy(tail.data() + c.rel, view_.bytes().data() + c.off, c.size);
    if (carries_dynamic_) write_renames_into_copies(tail);
    if (earlier_.new_note != NewNote::None) {
      tail.resize(at_.note_off + earlier_.note_bytes.size() - at_.seg_off, 0);
      std::memcpy(tail.data() + (at_.note_off - at_.seg_off), earlier_.note_bytes.data(), earlier_.note_bytes.size());
    }
    return tail;
  }

  // The string and dynamic tables the edit moved into the segment, zeroed
  // where they were (after the commit: DT_STRTAB and PT_DYNAMIC point at the
  // copies then, as patchelf overwrites the sections it replaces): no dead
  // copy of an old runpath stays, and what an earlier edit wrote there does
  // not show in the bytes. Only the replaced strings where another section
  // shares the table's bytes. Not where a running process may still read the
  // tables (written into the file outside a build), nor where the new
  // segment is written over them, nor over bytes another write of the edit
  // puts there (a table grown over evacuated strings).
  void zero_tables_left_behind(EditPlan& plan) const {
    if (!carries_dynamic_ || in_.options.in_place) return;
    uint64_t table = in_.table.strtab_offset, size = in_.table.strtab_size;
    std::vector<uint8_t> strings = in_.copy_range(table, size);
    if (in_.shares_bytes_with_other_sections(table, size, elf::SHT_STRTAB))
      in_.zero_replaced_strings(strings);
    else
      std::fill(strings.begin(), strings.end(), 0);
    zero_left_behind(plan, table, strings, WriteKind::DynamicStrings);
    uint64_t dynamic_size = in_.table.slots.size() * sizeof(elf::Dyn<E>);
    bool read_by_loaders = std::any_of(view_.phdrs().begin(), view_.phdrs().end(), [&](const auto& ph) {
      return ph.p_type == elf::PT_DYNAMIC && ph.p_offset == in_.table.offset;
    });  // a table found through its section header only stays as patchelf's edit of it left it
    if (read_by_loaders && !in_.shares_bytes_with_other_sections(in_.table.offset, dynamic_size, elf::SHT_DYNAMIC))
      zero_left_behind(plan, in_.table.offset, std::vector<uint8_t>(dynamic_size, 0), WriteKind::DynamicSection);
  }

  // `after` (the bytes at `offset` as they are to be left) as Cleanup writes of
  // the bytes that change, except where the new segment or another write lies.
  void zero_left_behind(EditPlan& plan, uint64_t offset, std::vector<uint8_t> after, WriteKind kind) const {
    uint64_t size = after.size();
    if (at_.reclaimed_from && offset + size > *at_.reclaimed_from) return;
    const std::vector<uint8_t> before = in_.copy_range(offset, size);
    for (const auto& w : plan.writes) {
      uint64_t from = std::max(w.offset, offset), to = std::min(w.offset + w.bytes.size(), offset + size);
      if (from < to)
        std::copy(before.begin() + (from - offset), before.begin() + (to - offset), after.begin() + (from - offset));
    }
    for (auto& w : changed_runs_writes(WritePhase::Cleanup, offset, before, after, kind))
      plan.writes.push_back(std::move(w));
  }

  // A version-need table or renamed symbols' tables that moved take the new
  // names in the copy (add_version_need_writes skips them in the file).
  void write_renames_into_copies(std::vector<uint8_t>& tail) const {
    for (const auto& rename : in_.version_need_renames)
      for (const auto& c : at_.carried)
        if (rename.field_offset >= c.off && rename.field_offset + 4 <= c.off + c.size) {
          auto* field = struct_at<typename E::Word>(tail, c.rel + (rename.field_offset - c.off));
          *field = static_cast<uint32_t>(strings_.offsets.at(rename.text));
        }
    for (const auto& w : rename_writes_)
      for (const auto& c : at_.carried) {
        uint64_t from = std::max(w.offset, c.off), to = std::min(w.offset + w.bytes.size(), c.off + c.size);
        if (from < to) std::memcpy(tail.data() + c.rel + (from - c.off), w.bytes.data() + (from - w.offset), to - from);
      }
  }

  // A note sharing its segment stays where it is, as a note no loader reads (in its copy too).
  void neutralize_shared_note(EditPlan& plan, std::vector<uint8_t>& tail) const {
    if (earlier_.old_note != OldNote::ReplacedShared) return;
    const NoteRef& old = *in_.note.existing;
    auto header = neutralized_note_header(view_, old);
    plan.writes.push_back({WritePhase::Prepare, old.offset, header, WriteKind::OldResolutionCacheNote});
    for (const auto& c : at_.carried)
      if (old.offset >= c.off && old.offset + header.size() <= c.off + c.size)
        std::memcpy(tail.data() + c.rel + (old.offset - c.off), header.data(), header.size());
  }

  // The section headers, updated where they are when their number stays (only
  // tools read them, so they follow after the commit and cost no bytes), or
  // appended after the segment when a section is added or the section names
  // lie there (the ELF header's write then switches e_shoff too).
  Expected<std::vector<MovedSection>> update_section_headers(EditPlan& plan, std::vector<uint8_t>& tail,
                                                             Ehdr& new_eh) const {
    if (view_.shdrs().empty()) return std::vector<MovedSection>();
    std::vector<Shdr> shdrs(view_.shdrs().begin(), view_.shdrs().end());
    auto moved = move_sections(shdrs);
    if (earlier_.old_note != OldNote::Kept)
      RUNPATCH_CHECK(update_note_section(shdrs, new_eh, tail));
    else if (earlier_.new_note != NewNote::None)
      RUNPATCH_CHECK(add_note_section(shdrs, new_eh, tail));
    cover_bytes_the_strings_left(shdrs, new_eh, tail, moved);
    keep_a_section_after_moved(shdrs, tail, moved);
    auto sh_bytes = bytes_of(std::span<const Shdr>(shdrs));
    if (shdrs.size() == view_.shdrs().size() && !table_follows_segment(shdrs)) {
      plan.writes.push_back(
          {WritePhase::Cleanup, uint64_t(view_.ehdr().e_shoff), std::move(sh_bytes), WriteKind::SectionHeaders});
      return moved;
    }
    uint64_t shoff = align_up(at_.seg_off + tail.size(), 8);
    tail.resize(shoff - at_.seg_off, 0);
    tail.insert(tail.end(), sh_bytes.begin(), sh_bytes.end());
    new_eh.e_shoff = shoff;
    return moved;
  }

  // patchelf rewrites an executable (ET_EXEC) by sorting its sections by
  // offset and asserting that one follows the last section it replaces
  // (`lastReplaced + 1 < shdrs.size()`, 0.14 to 0.19): with the dynamic
  // strings and section moved to the end of the file, none would. The section
  // name table (non-allocated, small) is copied after the segment then; and
  // again when its earlier copy lies in the bytes this edit writes over.
  void keep_a_section_after_moved(std::vector<Shdr>& shdrs, std::vector<uint8_t>& tail,
                                  const std::vector<MovedSection>& moved) const {
    uint32_t names = view_.shstrndx();
    if (moved.empty() || names == 0 || names >= shdrs.size()) return;
    Shdr& table = shdrs[names];
    if (table.sh_offset != view_.shdrs()[names].sh_offset)
      return;  // already copied past the segment (a new note's name)
    uint64_t last_moved = 0;
    for (const auto& m : moved) last_moved = std::max<uint64_t>(last_moved, shdrs[m.index].sh_offset);
    bool overwritten = at_.reclaimed_from && uint64_t(table.sh_offset) >= *at_.reclaimed_from;
    bool one_follows = std::any_of(shdrs.begin() + 1, shdrs.end(), [&](const Shdr& sh) {
      return uint64_t(sh.sh_offset) > last_moved && sh.sh_type != elf::SHT_NULL;
    });
    if (!overwritten && (view_.ehdr().e_type != elf::ET_EXEC || one_follows)) return;
    if (!view_.in_file(table.sh_offset, table.sh_size)) return;
    copy_names_past_segment(table, view_.bytes().subspan(table.sh_offset, table.sh_size), tail);
  }

  // With the section names copied past the segment (an executable), the
  // section header table follows them and ends the file, as linkers and
  // patchelf leave it (tools that append to an ELF file expect that). So does
  // a table that lies in the bytes this edit writes over.
  bool table_follows_segment(const std::vector<Shdr>& shdrs) const {
    uint32_t names = view_.shstrndx();
    bool names_past = names != 0 && names < shdrs.size() && uint64_t(shdrs[names].sh_offset) >= at_.seg_off;
    bool overwritten = at_.reclaimed_from && uint64_t(view_.ehdr().e_shoff) >= *at_.reclaimed_from;
    return names_past || overwritten;
  }

  // The section name table's bytes appended to the tail, past the segment, and its header pointed at them.
  void copy_names_past_segment(Shdr& table, std::span<const uint8_t> names, std::vector<uint8_t>& tail) const {
    table.sh_offset = at_.seg_off + tail.size();
    tail.insert(tail.end(), names.begin(), names.end());
  }

  // The sections whose bytes moved into the segment follow them.
  std::vector<MovedSection> move_sections(std::vector<Shdr>& shdrs) const {
    const Phdr* interp = view_.find_phdr(elf::PT_INTERP);
    std::vector<MovedSection> moved;
    auto move = [&](size_t index, uint64_t rel, uint64_t size) {
      Shdr& sh = shdrs[index];
      moved.push_back({index, uint64_t(sh.sh_addr), uint64_t(sh.sh_size), at_.seg_vaddr + rel});
      sh.sh_offset = at_.seg_off + rel;
      sh.sh_addr = at_.seg_vaddr + rel;
      sh.sh_size = size;
    };
    for (size_t i = 0; i < shdrs.size(); ++i) {
      const Shdr& sh = shdrs[i];
      bool allocated = sh.sh_flags & elf::SHF_ALLOC;
      if (carries_dynamic_ && sh.sh_type == elf::SHT_DYNAMIC && sh.sh_offset == in_.table.offset)
        move(i, at_.rel.dynamic, at_.dyn_slots * sizeof(Dyn));
      else if (carries_dynamic_ && sh.sh_type == elf::SHT_STRTAB && allocated &&
               sh.sh_offset == in_.table.strtab_offset)
        move(i, at_.rel.strtab, strings_.strtab.size());
      else if (room_.move_interp && interp && sh.sh_type == elf::SHT_PROGBITS && sh.sh_offset == interp->p_offset &&
               allocated)
        move(i, at_.rel.interp, room_.interp_text.size() + 1);
      else if (allocated && sh.sh_type != elf::SHT_NOBITS && sh.sh_size > 0)
        for (const auto& c : at_.carried)
          if (sh.sh_offset >= c.off && uint64_t(sh.sh_offset) + uint64_t(sh.sh_size) <= c.off + c.size) {
            move(i, c.rel + (uint64_t(sh.sh_offset) - c.off), sh.sh_size);
            break;
          }
    }
    return moved;
  }

  // The old note's section header follows the new note, or retires with it.
  Status update_note_section(std::vector<Shdr>& shdrs, Ehdr& eh, std::vector<uint8_t>& tail) const {
    bool alone = in_.note.existing->alone;
    if (in_.note.existing_section) {
      Shdr& sh = shdrs[*in_.note.existing_section];
      if (earlier_.new_note != NewNote::None && alone) {
        sh.sh_offset = at_.note_off;
        sh.sh_addr = at_.note_vaddr;
        sh.sh_size = earlier_.note_bytes.size();
        return {};
      }
      sh.sh_name = 0;
      if (alone) sh = Shdr{};  // SHT_NULL: every field zero (gABI)
    }
    if (earlier_.new_note != NewNote::None) return add_note_section(shdrs, eh, tail);
    return {};
  }

  // A new .note.nixos.ldcache section header.
  Status add_note_section(std::vector<Shdr>& shdrs, Ehdr& eh, std::vector<uint8_t>& tail) const {
    Shdr sh{};
    sh.sh_type = elf::SHT_NOTE;
    sh.sh_flags = elf::SHF_ALLOC;
    sh.sh_addr = at_.note_vaddr;
    sh.sh_offset = at_.note_off;
    sh.sh_size = earlier_.note_bytes.size();
    sh.sh_addralign = 4;
    add_section(shdrs, eh, tail, kResolutionCacheSection, sh);
    return {};
  }

  // The bytes an executable's dynamic strings left in its first segment keep
  // a section (allocated data, no longer the string table). patchelf 0.14 to
  // 0.18 rewrite an executable by moving every section before the first
  // SHT_PROGBITS to the front: with the strings gone that hole made room, so
  // they wrote .dynamic into the read-only first page without growing it (no
  // shift, the loader's DT_DEBUG write crashed). The section stops them at
  // the hole, as a linker's layout stops them at .gnu.version, and they shift
  // the file as they do for a linker's output.
  void cover_bytes_the_strings_left(std::vector<Shdr>& shdrs, Ehdr& eh, std::vector<uint8_t>& tail,
                                    const std::vector<MovedSection>& moved) const {
    if (view_.ehdr().e_type != elf::ET_EXEC || !carries_dynamic_) return;
    for (const auto& m : moved) {
      const Shdr& old = view_.shdrs()[m.index];
      if (old.sh_type != elf::SHT_STRTAB || old.sh_size == 0 || !in_first_segment(old.sh_offset, old.sh_size)) continue;
      Shdr sh{};
      sh.sh_type = elf::SHT_PROGBITS;
      sh.sh_flags = elf::SHF_ALLOC;
      sh.sh_addr = old.sh_addr;
      sh.sh_offset = old.sh_offset;
      sh.sh_size = old.sh_size;
      sh.sh_addralign = 1;
      add_section(shdrs, eh, tail, kLeftStringsSection, sh);
    }
  }

  // Within the PT_LOAD at file offset 0 (never a segment this edit gives up).
  bool in_first_segment(uint64_t offset, uint64_t size) const {
    for (const auto& ph : view_.phdrs())
      if (ph.p_type == elf::PT_LOAD && ph.p_offset == 0)
        return offset >= sizeof(Ehdr) && size <= ph.p_filesz && offset <= ph.p_filesz - size;
    return false;
  }

  // A new section header; its name goes into a copy of the section name
  // table at the end of the file when the table lacks it. Without a name
  // table, or past the count ELF headers hold, the section is not added
  // (the segment suffices).
  void add_section(std::vector<Shdr>& shdrs, Ehdr& eh, std::vector<uint8_t>& tail, std::string_view name_text,
                   Shdr sh) const {
    uint32_t names = view_.shstrndx();
    bool extended_count = view_.ehdr().e_shnum == 0;
    if (names == 0 || names >= shdrs.size() || shdrs.size() + 1 >= elf::SHN_LORESERVE) return;
    Shdr& table = shdrs[names];
    bool copied = table.sh_offset != view_.shdrs()[names].sh_offset;
    std::span<const uint8_t> current;
    if (copied && uint64_t(table.sh_offset) - at_.seg_off + table.sh_size != tail.size()) return;  // not last
    if (copied)
      current = std::span<const uint8_t>(tail).subspan(table.sh_offset - at_.seg_off, table.sh_size);
    else if (view_.in_file(table.sh_offset, table.sh_size))
      current = view_.bytes().subspan(table.sh_offset, table.sh_size);
    else
      return;
    std::optional<uint64_t> name = find_string_in_table(current, name_text);
    if (!name) {
      name = current.size();
      if (!copied) copy_names_past_segment(table, current, tail);
      tail.insert(tail.end(), name_text.begin(), name_text.end());
      tail.push_back(0);
      table.sh_size = tail.size() - (uint64_t(table.sh_offset) - at_.seg_off);
    }
    sh.sh_name = uint32_t(*name);
    shdrs.push_back(sh);
    if (extended_count)
      shdrs[0].sh_size = shdrs.size();
    else
      eh.e_shnum = static_cast<uint16_t>(shdrs.size());
  }

  // The commit: the ELF header (and the program headers, adjacent in every linker layout).
  void add_header_writes(EditPlan& plan, std::vector<uint8_t> header) const {
    auto* new_eh = struct_at<Ehdr>(header, 0);
    uint64_t phoff = view_.ehdr().e_phoff;
    if (room_.move_phdrs) {
      new_eh->e_phoff = at_.seg_off + at_.rel.phdrs;
      plan.writes.push_back({WritePhase::Commit, 0, std::move(header), WriteKind::ElfHeader});
      return;
    }
    auto table = bytes_of(std::span<const Phdr>(phdrs_));
    if (phoff == sizeof(Ehdr)) {
      // Header and program headers are adjacent: one write switches the file.
      header.insert(header.end(), table.begin(), table.end());
      plan.writes.push_back({WritePhase::Commit, 0, std::move(header), WriteKind::ElfAndProgramHeaders});
    } else {
      plan.writes.push_back({WritePhase::Commit, phoff, std::move(table), WriteKind::ProgramHeaders});
      plan.writes.push_back({WritePhase::Commit, 0, std::move(header), WriteKind::ElfHeader});
    }
  }

  // The value a symbol takes when its section or the dynamic section moved.
  std::optional<uint64_t> moved_value(const Sym& sym, const std::vector<MovedSection>& moved, const Shdr& strtab,
                                      uint64_t new_dynamic) const {
    std::optional<uint64_t> value;
    for (const auto& m : moved)
      if (sym.st_shndx == m.index && sym.st_value >= m.old_addr && sym.st_value <= m.old_addr + m.old_size)
        value = uint64_t(sym.st_value) - m.old_addr + m.new_addr;
    if (!value && sym.st_value == in_.table.vaddr) {
      auto name = view_.string_at(strtab.sh_offset, strtab.sh_size, sym.st_name, "symbol");
      if (name && *name == "_DYNAMIC") value = new_dynamic;
    }
    return value;
  }

  // Symbols defined in a moved section (section symbols, _DYNAMIC) follow it.
  void add_symbol_updates(EditPlan& plan, const std::vector<MovedSection>& moved, uint64_t new_dynamic) const {
    if (moved.empty() && new_dynamic == in_.table.vaddr) return;  // no symbol can change: spare the walk
    // A table whose names are not in the file is left as it is (_DYNAMIC is found by name).
    auto new_value = [&](const Sym& sym, const Shdr* names) -> std::optional<uint64_t> {
      if (!names) return std::nullopt;
      return moved_value(sym, moved, *names, new_dynamic);
    };
    add_symbol_value_writes(in_, new_value, plan);
  }

  const PlanInputs<E>& in_;
  const MappedElfView<E>& view_;
  const bool carries_dynamic_;
  const EarlierSegments<E>& earlier_;
  const Room<E>& room_;
  const PlacedStrings& strings_;
  const Placement& at_;
  const std::vector<Phdr> phdrs_;  // the new program header table
  const DynamicModel dynamic_;     // the new dynamic section
  // The renamed symbols' table writes: into carried copies, the rest into the file (built once, tables are large).
  const std::vector<PlannedWrite> rename_writes_;
};

}  // namespace

template <class E>
Expected<EditPlan> appended_writes(const AppendedLayout<E>& layout) {
  return AppendedWriter<E>(layout).plan();
}

#define RUNPATCH_INSTANTIATE(E) template Expected<EditPlan> appended_writes(const AppendedLayout<E>&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
