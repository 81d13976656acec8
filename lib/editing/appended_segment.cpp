#include "editing/appended_segment.hpp"

#include <map>

#include "editing/layout_math.hpp"

namespace runpatch {

namespace {

template <class E>
class SegmentAppender : PlanContext<E> {
  RUNPATCH_USE_PLAN_CONTEXT

  static constexpr uint64_t kMaxHole = uint64_t(1) << 30;

 public:
  SegmentAppender(const Ctx& context, bool with_dynamic)
      : Ctx(context), with_dynamic_(with_dynamic), phdrs_(view_.phdrs().begin(), view_.phdrs().end()) {
    warnings_.clear();  // the planner reports its own; these are the layout's
  }

  Expected<EditPlan> plan() {
    retire_earlier_segments();
    RUNPATCH_CHECK(choose_room());
    build_string_table();
    lay_out_segment();
    RUNPATCH_CHECK(place_segment());
    rewrite_program_headers();
    return assemble_tail();
  }

 private:
  struct CarriedRange {
    uint64_t off, size, align;
    uint64_t rel = 0;          // place in the new segment
    uint64_t dynamic_tag = 0;  // a table the dynamic section points at (DT_GNU_HASH ...); 0 for notes
  };

  struct MovedSection {
    size_t index;
    uint64_t old_addr, old_size, new_addr;
  };
  // ---- Phase 1: the note to place, and segments of earlier edits given up ----

  void retire_earlier_segments() {
    // The resolution-cache note: what to place, and the old note it replaces.
    note_segment_ = earlier_note_segment();
    note_bytes_ = note_.bytes;
    if (with_dynamic_ && note_segment_ && note_.action == NoteChange::Action::None) {
      // Unchanged, but its segment must stay last: it moves along.
      auto old = view_.bytes().subspan(note_.existing->offset, note_.existing->size);
      note_bytes_.assign(old.begin(), old.end());
    }
    place_note_ = !note_bytes_.empty();
    note_load_ = place_note_ && with_dynamic_;
    replace_existing_ = note_.existing && (note_.action != NoteChange::Action::None || place_note_);
    existing_alone_ = replace_existing_ && note_.existing->alone;
    if (existing_alone_) replaced_note_ = note_.existing->offset;

    // Entries that this edit frees: they become PT_NULL, reused below.
    if (std::optional<size_t> earlier = with_dynamic_ ? earlier_runpatch_segment(note_segment_) : std::nullopt) {
      earlier_segment_ = phdrs_[*earlier];
      phdrs_[*earlier].p_type = elf::PT_NULL;
      layout_description_ = "replaced the segment of an earlier edit";
    }
    if (note_segment_ && replace_existing_) {
      earlier_note_ = phdrs_[*note_segment_];
      phdrs_[*note_segment_].p_type = elf::PT_NULL;
    }
    if (existing_alone_) phdrs_[note_.existing->segment].p_type = elf::PT_NULL;
  }

  // ---- Phase 2: room for the new program header entries ----------------------

  // docs/editing.md lists the ways in order: an earlier edit's segment, PT_NULL
  // entries, a duplicate PT_NOTE, evacuating what follows the table, moving it.
  Status choose_room() {
    size_t wanted = 1 + (note_load_ ? 1 : 0) + (place_note_ ? 1 : 0) + (stack_entry_wanted_ ? 1 : 0);
    uint64_t phoff = view_.ehdr().e_phoff, table_size = view_.phdrs().size() * sizeof(Phdr);
    bool evacuated_interp = false;
    bool table_in_earlier = (earlier_segment_ && covers(*earlier_segment_, phoff, table_size)) ||
                            (earlier_note_ && covers(*earlier_note_, phoff, table_size));
    if (table_in_earlier) {
      move_phdrs_ = true;
    } else {
      size_t reused = 0;
      std::string slot_description;
      while (reused < wanted) {
        auto slot = find_slot(phdrs_, slot_description);
        if (!slot) break;
        phdrs_.erase(phdrs_.begin() + *slot);
        ++reused;
      }
      if (reused > 0 && layout_description_.empty()) layout_description_ = slot_description;
      if (reused < wanted) {
        size_t entries = wanted - reused;
        room_for_patchelf_ = evacuate_after_table(phoff + table_size, entries, room_for_a_later_patchelf(),
                                                  replaced_note_, carried_, evacuated_interp, with_dynamic_);
        bool evacuated = room_for_patchelf_ || evacuate_after_table(phoff + table_size, entries, 0, replaced_note_,
                                                                    carried_, evacuated_interp, with_dynamic_);
        if (evacuated) {
          grow_in_place_ = true;
          append_description(
              layout_description_,
              "moved what followed the program headers (interpreter, notes, dynamic tables) into the new segment");
        } else {
          move_phdrs_ = true;
          append_description(layout_description_, "moved the program header table into the new segment");
        }
      }
    }
    bool interp_in_earlier = carry_from_earlier_segments();
    move_interp_ = interp_needs_room_ || interp_in_earlier || evacuated_interp;
    interp_text_ = interp_changed_ ? new_interp_ : info_.interpreter.value_or("");
    return insert_new_entries();
  }

  // Whatever lived in an earlier runpatch segment must move again. Returns whether the interpreter did.
  bool carry_from_earlier_segments() {
    bool interp_in_earlier = false;
    for (const auto& segment : {earlier_segment_, earlier_note_}) {
      if (!segment) continue;
      for (const auto& ph : view_.phdrs()) {
        if (!covers(*segment, ph.p_offset, ph.p_filesz) || is_replaced_note(ph, replaced_note_)) continue;
        if (ph.p_type == elf::PT_INTERP) interp_in_earlier = true;
        if (ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY) carry(carried_, ph);
      }
      for (const auto& t : movable_dynamic_tables())
        if (covers(*segment, t.off, t.size) &&
            std::none_of(carried_.begin(), carried_.end(), [&](const CarriedRange& c) { return c.off == t.off; }))
          carried_.push_back(t);
    }
    return interp_in_earlier;
  }

  // A table found through the dynamic section, copied into the new segment
  // (its fields are then updated in the copy, not where running processes read them).
  void carry_table(uint64_t tag) {
    if (!with_dynamic_) return;
    for (const auto& t : movable_dynamic_tables())
      if (t.dynamic_tag == tag &&
          std::none_of(carried_.begin(), carried_.end(), [&](const CarriedRange& c) { return c.off == t.off; }))
        carried_.push_back(t);
  }

  // The new PT_LOADs go after the last PT_LOAD (loaders size the mapping from
  // first to last); the new PT_NOTE after the last PT_NOTE.
  Status insert_new_entries() {
    for (size_t i = 0; i < phdrs_.size(); ++i)
      if (phdrs_[i].p_type == elf::PT_LOAD) load_at_ = i + 1;
    phdrs_.insert(phdrs_.begin() + load_at_, note_load_ ? 2 : 1, Phdr{});
    if (place_note_) {
      size_t at = phdrs_.size();
      for (size_t i = 0; i < phdrs_.size(); ++i)
        if (phdrs_[i].p_type == elf::PT_NOTE) at = i + 1;
      phdrs_.insert(phdrs_.begin() + at, Phdr{});
      note_at_ = at;
      // A PT_NOTE listed before the last PT_LOAD (patchelf sorts a non-PIE's
      // table by offset after moving its notes to the front): the new LOAD
      // slots moved down with everything after the note.
      if (at <= load_at_) ++load_at_;
    }
    if (stack_entry_wanted_) phdrs_.push_back(Phdr{});  // PT_NULL: fold_header_fields makes it PT_GNU_STACK
    if (phdrs_.size() >= elf::PN_XNUM) return view_.error("too many program headers to add one");
    return {};
  }

  // ---- Phase 3: the string table ----------------------------------------------

  void build_string_table() {
    placed_ = model_;
    if (!with_dynamic_) return;
    // Runpath strings last, so that later edits of them can grow into the slack in place.
    std::vector<std::string> added;
    for (const auto& e : placed_.entries)
      if (e.changed && e.text && !DynamicModel::is_runpath_entry(e)) added.push_back(*e.text);
    for (const auto& update : verneed_updates_) added.push_back(update.text);
    for (const auto& name : renamer_.new_names()) added.push_back(name);
    for (const auto& e : placed_.entries)
      if (e.changed && e.text && DynamicModel::is_runpath_entry(e)) added.push_back(*e.text);
    auto table = layout::extended_string_table(view_.bytes().subspan(table_.strtab_offset, kept_strings_size()), added,
                                               kStringSlack);
    strtab_ = std::move(table.bytes);
    for (auto& e : placed_.entries)
      if (e.changed && e.text) e.value = table.offsets[*e.text];
    for (auto& update : verneed_updates_) update.new_value = table.offsets[update.text];
    for (const auto& name : renamer_.new_names()) symbol_name_offsets_[name] = table.offsets[name];
  }

  // How much of the dynamic strings the copy keeps: all of them, except where
  // an earlier edit's segment is replaced: its strings past the last one that
  // anything still references (the runpaths it wrote) go, so that repeated
  // edits do not pile up old strings.
  uint64_t kept_strings_size() const {
    if (!earlier_segment_) return table_.strtab_size;
    auto used = symbol_string_refs();
    if (!used) return table_.strtab_size;  // cannot tell what is referenced: keep everything
    add_unchanged_entry_refs(*used);
    uint64_t end = 1;  // the empty string at offset 0
    for (const auto& r : *used) end = std::max(end, r.end);
    return std::min<uint64_t>(end, table_.strtab_size);
  }

  // ---- Phase 4: the segment's layout and placement ----------------------------

  void lay_out_segment() {
    layout::SegmentParts parts;
    parts.phdr_table = phdrs_in_segment() ? phdrs_.size() * sizeof(Phdr) : 0;
    parts.has_dynamic = with_dynamic_;
    dyn_slots_ = with_dynamic_ ? placed_.entries.size() + 1 + kSpareDynamicSlots : 0;
    parts.strtab = strtab_.size();
    parts.dynamic = dyn_slots_ * sizeof(Dyn);
    parts.interp = move_interp_ ? interp_text_.size() + 1 : 0;
    for (const auto& c : carried_) parts.carried.push_back({c.size, c.align});
    parts.note = place_note_ && !note_load_ ? note_bytes_.size() : 0;
    rel_ = layout::lay_out_segment(parts);
    for (size_t i = 0; i < carried_.size(); ++i) carried_[i].rel = rel_.carried[i];
  }

  // [vaddr, vaddr + size) above every segment and inside the class's address
  // space: placing above a segment that ends near the top wraps around.
  static bool fits_address_space(uint64_t vaddr, uint64_t size, uint64_t above) {
    uint64_t space_end = E::is64 ? UINT64_MAX : UINT32_MAX;
    return vaddr >= above && vaddr <= space_end && size <= space_end - vaddr;
  }

  // vaddr ≡ offset (mod page), above every segment: no padding in the file.
  // Executables whose program headers move keep the first PT_LOAD's
  // vaddr-offset delta, as older kernels derive AT_PHDR from it.
  Status place_segment() {
    reclaimed_from_ = reclaimable_tail();
    uint64_t page = page_size(), old_size = reclaimed_from_.value_or(view_.bytes().size());
    uint64_t max_end = 0;
    const Phdr* first_load = nullptr;
    for (const auto& ph : view_.phdrs()) {
      bool given_up = (earlier_segment_ && ph.p_offset == earlier_segment_->p_offset) ||
                      (earlier_note_ && ph.p_offset == earlier_note_->p_offset);
      if (ph.p_type == elf::PT_LOAD && !given_up) {
        max_end = std::max<uint64_t>(max_end, uint64_t(ph.p_vaddr) + uint64_t(ph.p_memsz));
        if (!first_load) first_load = &ph;
      }
    }
    seg_off_ = phdrs_in_segment() ? layout::moved_table_offset(old_size, std::min(page, binutils_page()), sizeof(Ehdr))
                                  : align_up(old_size, 16);
    seg_vaddr_ = layout::congruent_address(seg_off_, max_end, page);
    bool needs_congruence = move_phdrs_ && (view_.find_phdr(elf::PT_PHDR) || info_.is_executable());
    if (needs_congruence && first_load) {
      uint64_t delta0 = uint64_t(first_load->p_vaddr) - uint64_t(first_load->p_offset);
      if (delta0 % page != 0 || uint64_t(first_load->p_vaddr) < uint64_t(first_load->p_offset))
        return view_.error("cannot move the program headers: first PT_LOAD is not page-congruent");
      uint64_t off = layout::offset_keeping_delta(seg_off_, max_end, page, delta0);
      if (off - seg_off_ > page)
        warnings_.push_back(
            fmt::format("the file grows by a {} KiB hole: moving the program headers of an "
                        "executable keeps them where kernels before 5.18 look for them",
                        (off - seg_off_) >> 10));
      seg_off_ = off;
      seg_vaddr_ = off + delta0;
    }
    // The hole stays sparse, but copies and archives expand it: bound it (a corrupt address would be unbounded).
    if (seg_off_ - old_size > kMaxHole)
      return view_.error(fmt::format("a new segment would need a {} MiB hole before it (address space ends at {:#x})",
                                     (seg_off_ - old_size) >> 20, max_end));
    if (!fits_address_space(seg_vaddr_, rel_.size, max_end))
      return view_.error("no address space left above the last segment");
    // The note's own segment follows in the file without a gap and one page
    // higher in memory: its first file page may be the read-write segment's
    // last, mapped twice, but no page of memory is both.
    note_off_ = seg_off_ + rel_.note;
    note_vaddr_ = seg_vaddr_ + rel_.note;
    if (note_load_) {
      note_off_ = align_up(seg_off_ + rel_.size, 8);
      note_vaddr_ = note_off_ + (seg_vaddr_ - seg_off_) + page;
      if (!fits_address_space(note_vaddr_, note_bytes_.size(), max_end))
        return view_.error("no address space left above the last segment");
    }
    return {};
  }

  // ---- Phase 5: program headers and dynamic entries ---------------------------

  void rewrite_program_headers() {
    uint64_t page = page_size();
    // The loader may write DT_DEBUG and relocate the dynamic table; notes and headers are only read.
    describe(phdrs_[load_at_], elf::PT_LOAD, with_dynamic_ ? elf::PF_R | elf::PF_W : elf::PF_R, seg_off_, seg_vaddr_,
             rel_.size, page);
    if (note_load_)
      describe(phdrs_[load_at_ + 1], elf::PT_LOAD, elf::PF_R, note_off_, note_vaddr_, note_bytes_.size(), page);
    if (note_at_) describe(phdrs_[*note_at_], elf::PT_NOTE, elf::PF_R, note_off_, note_vaddr_, note_bytes_.size(), 4);
    for (size_t i = 0; i < phdrs_.size(); ++i)
      if (i != load_at_ && i != note_at_ && !(note_load_ && i == load_at_ + 1)) move_segment_entry(phdrs_[i]);
    if (with_dynamic_) rebase_dynamic_entries();
  }

  void point(Phdr& ph, uint64_t rel, std::optional<uint64_t> size = std::nullopt) const {
    ph.p_offset = seg_off_ + rel;
    ph.p_vaddr = seg_vaddr_ + rel;
    ph.p_paddr = seg_vaddr_ + rel;
    if (size) ph.p_filesz = ph.p_memsz = *size;
  }

  // An existing entry whose contents moved into the new segment follows them.
  void move_segment_entry(Phdr& ph) const {
    uint64_t table_size = phdrs_.size() * sizeof(Phdr);
    if (ph.p_type == elf::PT_DYNAMIC && with_dynamic_) {
      point(ph, rel_.dynamic, dyn_slots_ * sizeof(Dyn));
    } else if (ph.p_type == elf::PT_INTERP && move_interp_) {
      point(ph, rel_.interp, interp_text_.size() + 1);
    } else if (ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY) {
      for (const auto& c : carried_)
        if (ph.p_offset == c.off && ph.p_filesz == c.size) point(ph, c.rel);
    } else if (ph.p_type == elf::PT_PHDR && grow_in_place_) {
      ph.p_filesz = ph.p_memsz = table_size;
    } else if (ph.p_type == elf::PT_PHDR && move_phdrs_) {
      point(ph, rel_.phdrs, table_size);
    }
  }

  void rebase_dynamic_entries() {
    for (auto& e : placed_.entries) {
      for (const auto& c : carried_)
        if (c.dynamic_tag != 0 && e.tag == c.dynamic_tag) e.value = seg_vaddr_ + c.rel;
      if (e.tag == elf::DT_STRTAB) e.value = seg_vaddr_ + rel_.strtab;
      if (e.tag == elf::DT_STRSZ) e.value = strtab_.size();
      if (e.tag == elf::DT_MIPS_RLD_MAP_REL) {
        // Relative to its own entry's address, which moves with the table.
        uint64_t index = &e - placed_.entries.data();
        uint64_t old_addr = dynamic_vaddr() + index * sizeof(Dyn);
        e.value = e.value + old_addr - (seg_vaddr_ + rel_.dynamic + index * sizeof(Dyn));
      }
    }
  }

  // ---- Phase 6: the appended bytes and the writes -----------------------------

  // The segments, then a copy of the section headers. The padding before the
  // segment is not written: past the old end it reads as zeros anyway.
  std::vector<uint8_t> segment_bytes() {
    std::vector<uint8_t> tail(rel_.size, 0);
    if (with_dynamic_) {
      std::memcpy(tail.data() + rel_.strtab, strtab_.data(), strtab_.size());
      auto dyn_bytes = serialize_dynamic(placed_, dyn_slots_);
      std::memcpy(tail.data() + rel_.dynamic, dyn_bytes.data(), dyn_bytes.size());
    }
    if (move_interp_) std::memcpy(tail.data() + rel_.interp, interp_text_.c_str(), interp_text_.size() + 1);
    if (phdrs_in_segment()) std::memcpy(tail.data() + rel_.phdrs, phdrs_.data(), phdrs_.size() * sizeof(Phdr));
    for (const auto& c : carried_) std::memcpy(tail.data() + c.rel, view_.bytes().data() + c.off, c.size);
    // A version-need table that moved takes its new library names in the copy.
    for (auto& update : verneed_updates_)
      for (const auto& c : carried_)
        if (update.field_offset >= c.off && update.field_offset + 4 <= c.off + c.size) {
          auto* field = struct_at<typename E::Word>(tail, c.rel + (update.field_offset - c.off));
          *field = static_cast<uint32_t>(update.new_value);
          update.written_in_copy = true;
        }
    // Renamed symbols' tables that moved take the rename in the copy.
    for (const auto& w : renamer_.writes(view_, symbol_name_offsets_))
      for (const auto& c : carried_) {
        uint64_t from = std::max(w.offset, c.off), to = std::min(w.offset + w.bytes.size(), c.off + c.size);
        if (from < to) std::memcpy(tail.data() + c.rel + (from - c.off), w.bytes.data() + (from - w.offset), to - from);
      }
    if (place_note_) {
      tail.resize(note_off_ + note_bytes_.size() - seg_off_, 0);
      std::memcpy(tail.data() + (note_off_ - seg_off_), note_bytes_.data(), note_bytes_.size());
    }
    return tail;
  }

  // A note sharing its segment stays where it is, as a note no loader reads (in its copy too).
  void neutralize_shared_note(EditPlan& plan, std::vector<uint8_t>& tail) const {
    if (!replace_existing_ || existing_alone_) return;
    auto header = neutralized_note_header(view_, *note_.existing);
    plan.writes.push_back({WritePhase::Prepare, note_.existing->offset, header, "old resolution cache"});
    for (const auto& c : carried_)
      if (note_.existing->offset >= c.off && note_.existing->offset + header.size() <= c.off + c.size)
        std::memcpy(tail.data() + c.rel + (note_.existing->offset - c.off), header.data(), header.size());
  }

  // The section headers, updated where they are when their number stays (only
  // tools read them, so they follow after the commit and cost no bytes), or
  // appended after the segment when a section is added or when the ELF
  // header's write alone commits the edit (it then switches e_shoff too).
  Expected<std::vector<MovedSection>> update_section_headers(EditPlan& plan, std::vector<uint8_t>& tail,
                                                             Ehdr& new_eh) const {
    if (view_.shdrs().empty()) return std::vector<MovedSection>();
    std::vector<Shdr> shdrs(view_.shdrs().begin(), view_.shdrs().end());
    auto moved = update_sections(shdrs, seg_off_, seg_vaddr_, rel_.strtab, rel_.dynamic, dyn_slots_, strtab_.size(),
                                 move_interp_, rel_.interp, interp_text_.size() + 1, carried_, with_dynamic_);
    if (replace_existing_)
      RUNPATCH_CHECK(
          update_note_section(shdrs, new_eh, tail, seg_off_, place_note_, note_off_, note_vaddr_, note_bytes_.size()));
    else if (place_note_)
      RUNPATCH_CHECK(add_note_section(shdrs, new_eh, tail, seg_off_, note_off_, note_vaddr_, note_bytes_.size()));
    auto sh_bytes = bytes_of(std::span<const Shdr>(shdrs));
    if (shdrs.size() == view_.shdrs().size()) {
      plan.writes.push_back(
          {WritePhase::Cleanup, uint64_t(view_.ehdr().e_shoff), std::move(sh_bytes), "section headers"});
      return moved;
    }
    uint64_t shoff = align_up(seg_off_ + tail.size(), 8);
    tail.resize(shoff - seg_off_, 0);
    tail.insert(tail.end(), sh_bytes.begin(), sh_bytes.end());
    new_eh.e_shoff = shoff;
    return moved;
  }

  // The commit: the ELF header (and the program headers, adjacent in every linker layout).
  void add_header_writes(EditPlan& plan, std::vector<uint8_t> header) const {
    auto* new_eh = struct_at<Ehdr>(header, 0);
    uint64_t phoff = view_.ehdr().e_phoff;
    if (move_phdrs_) {
      if (phdrs_in_segment()) new_eh->e_phoff = seg_off_ + rel_.phdrs;
      plan.writes.push_back({WritePhase::Commit, 0, std::move(header), "ELF header"});
      return;
    }
    auto table = bytes_of(std::span<const Phdr>(phdrs_));
    if (phoff == sizeof(Ehdr)) {
      // Header and program headers are adjacent: one write switches the file.
      header.insert(header.end(), table.begin(), table.end());
      plan.writes.push_back({WritePhase::Commit, 0, std::move(header), "ELF and program headers"});
    } else {
      plan.writes.push_back({WritePhase::Commit, phoff, std::move(table), "program headers"});
      plan.writes.push_back({WritePhase::Commit, 0, std::move(header), "ELF header"});
    }
  }

  Expected<EditPlan> assemble_tail() {
    std::vector<uint8_t> tail = segment_bytes();
    EditPlan plan;
    neutralize_shared_note(plan, tail);
    std::vector<uint8_t> header = copy_range(0, sizeof(Ehdr));
    auto* new_eh = struct_at<Ehdr>(header, 0);
    RUNPATCH_TRY(auto moved, update_section_headers(plan, tail, *new_eh));
    if (view_.ehdr().e_phnum == elf::PN_XNUM)
      return view_.error("extended program header numbering (PN_XNUM) cannot grow");
    new_eh->e_phnum = static_cast<uint16_t>(phdrs_.size());

    plan.strategy = EditStrategy::Appended;
    plan.fits_later_tools = !move_phdrs_ && (!grow_in_place_ || room_for_patchelf_);
    plan.layout_description = layout_description_;
    if (place_note_)
      append_description(plan.layout_description, note_load_ ? "resolution cache in a read-only segment of its own"
                                                             : "resolution cache in a read-only segment");
    plan.new_size = seg_off_ + tail.size();
    plan.reclaimed_from = reclaimed_from_;
    plan.writes.push_back({WritePhase::Prepare, seg_off_, std::move(tail), "appended segment"});
    add_header_writes(plan, std::move(header));
    // A new interpreter that fits where the old one is, while the segment is appended for other reasons.
    if (interp_changed_ && !move_interp_) add_interp_write(plan, WritePhase::Commit);
    add_version_need_writes(plan);
    std::vector<std::pair<uint64_t, uint64_t>> carried_ranges;
    for (const auto& c : carried_) carried_ranges.emplace_back(c.off, c.size);
    add_symbol_rename_writes(plan, carried_ranges);
    add_symbol_updates(plan, moved, with_dynamic_ ? seg_vaddr_ + rel_.dynamic : dynamic_vaddr());
    plan.warnings = warnings_;
    return plan;
  }

  // ---- Helpers --------------------------------------------------------------

  // The page binutils (strip, objcopy) lays segments out by for this machine
  // (its ELF_MAXPAGESIZE): a moved program header table must sit sizeof(Ehdr)
  // past a boundary of it, not of the largest p_align (2 MiB for many CUDA
  // libraries), so the file grows by less than one such page.
  uint64_t binutils_page() const {
    switch (uint16_t(view_.ehdr().e_machine)) {
      case elf::EM_AARCH64:
      case elf::EM_PPC64:
      case elf::EM_PPC:
      case elf::EM_MIPS:
      case elf::EM_LOONGARCH: return 0x10000;
      case elf::EM_SPARCV9: return 0x100000;
      default: return kMinPage;
    }
  }

  // Bytes the new segment is written over: the tail of an edit killed before
  // its commit (the reader recognizes it), or, when the result is a copy, the
  // segment of an earlier edit that ends the file with nothing else in it or
  // after it — so that N edits cost about one.
  std::optional<uint64_t> reclaimable_tail() const {
    if (!with_dynamic_) return std::nullopt;
    if (info_.interrupted_edit_tail) return info_.interrupted_edit_tail;
    if (!options_.reclaim_earlier_segment || !earlier_segment_) return std::nullopt;
    uint64_t from = earlier_segment_->p_offset, end = from + uint64_t(earlier_segment_->p_filesz);
    if (end != view_.bytes().size()) return std::nullopt;
    const Ehdr& eh = view_.ehdr();
    if (!view_.shdrs().empty() && uint64_t(eh.e_shoff) + uint64_t(eh.e_shnum) * sizeof(Shdr) > from)
      return std::nullopt;
    if (uint64_t(eh.e_phoff) < from && uint64_t(eh.e_phoff) + uint64_t(eh.e_phnum) * sizeof(Phdr) > from)
      return std::nullopt;
    for (const auto& ph : view_.phdrs())
      if (ph.p_filesz > 0 && uint64_t(ph.p_offset) + uint64_t(ph.p_filesz) > from &&
          !covers(*earlier_segment_, ph.p_offset, ph.p_filesz))
        return std::nullopt;
    return from;
  }

  // The resolution-cache segment of an earlier edit: the last PT_LOAD,
  // read-only, holding the note alone in its PT_NOTE.
  std::optional<size_t> earlier_note_segment() const {
    if (!note_.existing || !note_.existing->alone) return std::nullopt;
    auto phdrs = view_.phdrs();
    std::optional<size_t> last;
    size_t loads = 0;
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_LOAD) last = i, ++loads;
    if (!last || loads < 2) return std::nullopt;
    const Phdr& ph = phdrs[*last];
    if (ph.p_flags != elf::PF_R || !covers(ph, note_.existing->offset, note_.existing->size)) return std::nullopt;
    return last;
  }

  // A segment an earlier runpatch edit appended: the last PT_LOAD (before a
  // resolution-cache segment), holding the dynamic strings and section, and
  // starting with them or the program headers.
  std::optional<size_t> earlier_runpatch_segment(std::optional<size_t> note_segment) const {
    auto phdrs = view_.phdrs();
    std::optional<size_t> last;
    size_t loads = 0;
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_LOAD && i != note_segment) last = i, ++loads;
    if (!last || loads < 2) return std::nullopt;
    const Phdr& ph = phdrs[*last];
    uint64_t begin = ph.p_offset, end = begin + uint64_t(ph.p_filesz);
    bool starts_like_ours = begin == table_.strtab_offset || begin == uint64_t(view_.ehdr().e_phoff);
    if (!starts_like_ours || table_.strtab_offset < begin || table_.strtab_offset >= end || table_.offset < begin ||
        table_.offset >= end)
      return std::nullopt;
    return last;
  }

  // The PT_NOTE of a resolution-cache note this edit replaces or drops (it is not carried along).
  static bool is_replaced_note(const Phdr& ph, std::optional<uint64_t> replaced_note) {
    return replaced_note && ph.p_type == elf::PT_NOTE && ph.p_offset == *replaced_note;
  }

  // Tables the loader finds only through the dynamic section: a copy in the
  // new segment and a new address in its entry move them. Their sizes come from
  // the section headers (none: not movable).
  std::vector<CarriedRange> movable_dynamic_tables() const {
    std::vector<CarriedRange> tables;
    for (uint64_t tag : elf::kTablesFoundThroughDynamic) {
      auto vaddr = table_.find(tag);
      if (!vaddr) continue;
      for (const auto& sh : view_.shdrs())
        if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && sh.sh_addr == *vaddr && sh.sh_size > 0 &&
            view_.in_file(sh.sh_offset, sh.sh_size)) {
          uint64_t align = std::clamp<uint64_t>(sh.sh_addralign, 1, 16);
          tables.push_back({uint64_t(sh.sh_offset), uint64_t(sh.sh_size), align, 0, tag});
          break;
        }
    }
    return tables;
  }

  static void carry(std::vector<CarriedRange>& carried, const Phdr& ph) {
    for (const auto& c : carried)
      if (c.off == ph.p_offset && c.size == ph.p_filesz) return;  // PT_NOTE and PT_GNU_PROPERTY often coincide
    // Notes are 4- or 8-aligned (gABI); any other value is treated as 4 rather than trusted.
    carried.push_back({uint64_t(ph.p_offset), uint64_t(ph.p_filesz), ph.p_align == 8 ? uint64_t(8) : uint64_t(4)});
  }

  // patchelf grows the table of a library by moving the sections from index 1
  // on that lie within ELF header + (entries + note sections + 1) program
  // headers. Sections this edit moves away keep their low indices, so patchelf
  // would move nothing and write its larger table over what follows ours:
  // that much more is freed now, so its table lands on unreferenced bytes.
  uint64_t room_for_a_later_patchelf() const {
    if (view_.shdrs().empty()) return 0;
    auto notes = std::count_if(view_.shdrs().begin(), view_.shdrs().end(),
                               [](const Shdr& sh) { return sh.sh_type == elf::SHT_NOTE; });
    return (uint64_t(notes) + 1) * sizeof(Phdr);
  }

  // Frees one program header's worth of bytes right after the table, when only
  // the interpreter string and notes live there: they move into the new
  // segment (PT_INTERP, PT_NOTE and their sections follow), and the table
  // grows where it is, inside the first PT_LOAD, as binutils expects it.
  bool evacuate_after_table(uint64_t table_end, size_t entries, uint64_t slack, std::optional<uint64_t> replaced_note,
                            std::vector<CarriedRange>& carried, bool& interp_moves, bool with_dynamic) const {
    uint64_t need_end = table_end + entries * sizeof(Phdr) + slack;
    const Phdr* first_load = nullptr;
    for (const auto& ph : view_.phdrs())
      if (ph.p_type == elf::PT_LOAD) {
        first_load = &ph;
        break;
      }
    if (!first_load || !covers(*first_load, table_end, need_end - table_end)) return false;
    auto movable = [](const Phdr& ph) {
      return ph.p_filesz > 0 &&
             (ph.p_type == elf::PT_INTERP || ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY);
    };
    // The dynamic strings move anyway when the dynamic section does; the tables it points at can follow,
    // unless the file is written in place: processes that have it mapped read .gnu.hash on every lookup.
    std::vector<CarriedRange> tables;
    if (with_dynamic && !options_.in_place) {
      tables = movable_dynamic_tables();
      tables.push_back({table_.strtab_offset, table_.strtab_size, 1, 0, elf::DT_STRTAB});
    }
    std::vector<const Phdr*> chosen;
    std::vector<const CarriedRange*> chosen_tables;
    uint64_t cover = table_end;
    while (cover < need_end) {
      const Phdr* next = nullptr;
      for (const auto& ph : view_.phdrs())
        if (movable(ph) && ph.p_offset >= cover && (!next || ph.p_offset < next->p_offset)) next = &ph;
      const CarriedRange* next_table = nullptr;
      for (const auto& t : tables)
        if (t.off >= cover && (!next_table || t.off < next_table->off)) next_table = &t;
      uint64_t next_at =
          std::min(next ? uint64_t(next->p_offset) : UINT64_MAX, next_table ? next_table->off : UINT64_MAX);
      if (next_at == UINT64_MAX || next_at > align_up(cover, 16)) {
        // Bytes nothing describes or points at (what an earlier patchelf edit moved away) are free too.
        uint64_t gap_end = std::min(next_at, need_end);
        if (!unreferenced(*first_load, cover, gap_end)) return false;
        cover = gap_end;
        continue;
      }
      if (next && uint64_t(next->p_offset) == next_at) {
        for (const auto& ph : view_.phdrs())
          if (movable(ph) && ph.p_offset == next->p_offset) chosen.push_back(&ph);
        cover = std::max<uint64_t>(cover, uint64_t(next->p_offset) + uint64_t(next->p_filesz));
      } else {
        chosen_tables.push_back(next_table);
        cover = std::max<uint64_t>(cover, next_table->off + next_table->size);
      }
    }
    auto moved_range = [&](uint64_t off, uint64_t size) {
      auto inside = [&](uint64_t begin, uint64_t length) { return off >= begin && off + size <= begin + length; };
      return std::any_of(chosen.begin(), chosen.end(),
                         [&](const Phdr* ph) { return inside(ph->p_offset, ph->p_filesz); }) ||
             std::any_of(chosen_tables.begin(), chosen_tables.end(),
                         [&](const CarriedRange* t) { return inside(t->off, t->size); });
    };
    // Nothing else may live in the freed bytes.
    for (const auto& sh : view_.shdrs()) {
      uint64_t off = sh.sh_offset, size = sh.sh_size;
      if (!(sh.sh_flags & elf::SHF_ALLOC) || sh.sh_type == elf::SHT_NOBITS || size == 0) continue;
      if (off + size <= table_end || off >= cover) continue;
      if (!moved_range(off, size)) return false;
    }
    for (const auto& ph : view_.phdrs()) {
      uint64_t off = ph.p_offset, size = ph.p_filesz;
      if (ph.p_type == elf::PT_LOAD || ph.p_type == elf::PT_PHDR || size == 0) continue;
      if (off + size <= table_end || off >= cover) continue;
      if (!moved_range(off, size)) return false;
    }
    for (const Phdr* ph : chosen) {
      if (ph->p_type == elf::PT_INTERP)
        interp_moves = true;
      else if (!is_replaced_note(*ph, replaced_note))
        carry(carried, *ph);
    }
    for (const CarriedRange* t : chosen_tables)
      if (t->dynamic_tag != elf::DT_STRTAB) carried.push_back(*t);  // the strings are placed anyway
    return true;
  }

  // Whether [begin, end) of the first PT_LOAD is free: with section headers to
  // tell, no section, segment, dynamic entry or symbol lies in or points into it.
  bool unreferenced(const Phdr& first_load, uint64_t begin, uint64_t end) const {
    using Sym = elf::Sym<E>;
    if (view_.shdrs().empty() || begin >= end) return begin >= end;
    auto overlaps = [&](uint64_t off, uint64_t size) { return size > 0 && off < end && begin < off + size; };
    for (const auto& sh : view_.shdrs())
      if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && overlaps(sh.sh_offset, sh.sh_size))
        return false;
    for (const auto& ph : view_.phdrs())
      if (ph.p_type != elf::PT_LOAD && ph.p_type != elf::PT_PHDR && overlaps(ph.p_offset, ph.p_filesz)) return false;
    uint64_t first = uint64_t(first_load.p_vaddr) + (begin - uint64_t(first_load.p_offset));
    uint64_t last = first + (end - begin);
    auto points_in = [&](uint64_t address) { return address >= first && address < last; };
    for (const auto& d : table_.entries())
      if (points_in(d.d_val)) return false;
    for (const auto& sh : view_.shdrs()) {
      if ((sh.sh_type != elf::SHT_SYMTAB && sh.sh_type != elf::SHT_DYNSYM) || sh.sh_entsize != sizeof(Sym)) continue;
      auto symbols = view_.template table_at<Sym>(sh.sh_offset, uint64_t(sh.sh_size) / sizeof(Sym), "symbol table");
      if (!symbols) return false;
      for (const Sym& sym : *symbols)
        if (sym.st_shndx != 0 && points_in(sym.st_value)) return false;
    }
    return true;
  }

  // A program header entry that can become the new PT_LOAD without loss.
  std::optional<size_t> find_slot(const std::vector<Phdr>& phdrs, std::string& note) const {
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_NULL) {
        note = "reused a PT_NULL program header";
        return i;
      }
    // x86-64 and aarch64 linkers describe .note.gnu.property twice: PT_NOTE and PT_GNU_PROPERTY.
    const Phdr* property = view_.find_phdr(elf::PT_GNU_PROPERTY);
    if (property)
      for (size_t i = 0; i < phdrs.size(); ++i)
        if (phdrs[i].p_type == elf::PT_NOTE && phdrs[i].p_offset == property->p_offset &&
            phdrs[i].p_filesz == property->p_filesz) {
          note = "reused the PT_NOTE that duplicates PT_GNU_PROPERTY";
          return i;
        }
    return std::nullopt;
  }

  std::vector<MovedSection> update_sections(std::vector<Shdr>& shdrs, uint64_t seg_off, uint64_t seg_vaddr,
                                            uint64_t strtab_rel, uint64_t dyn_rel, uint64_t dyn_slots, uint64_t strsz,
                                            bool move_interp, uint64_t interp_rel, uint64_t interp_size,
                                            const std::vector<CarriedRange>& carried, bool dynamic_moves = true) const {
    const Phdr* interp = view_.find_phdr(elf::PT_INTERP);
    std::vector<MovedSection> moved;
    auto move = [&](size_t index, uint64_t rel, uint64_t size) {
      Shdr& sh = shdrs[index];
      moved.push_back({index, uint64_t(sh.sh_addr), uint64_t(sh.sh_size), seg_vaddr + rel});
      sh.sh_offset = seg_off + rel;
      sh.sh_addr = seg_vaddr + rel;
      sh.sh_size = size;
    };
    for (size_t i = 0; i < shdrs.size(); ++i) {
      const Shdr& sh = shdrs[i];
      if (dynamic_moves && sh.sh_type == elf::SHT_DYNAMIC && sh.sh_offset == table_.offset)
        move(i, dyn_rel, dyn_slots * sizeof(Dyn));
      else if (dynamic_moves && sh.sh_type == elf::SHT_STRTAB && (sh.sh_flags & elf::SHF_ALLOC) &&
               sh.sh_offset == table_.strtab_offset)
        move(i, strtab_rel, strsz);
      else if (move_interp && interp && sh.sh_type == elf::SHT_PROGBITS && sh.sh_offset == interp->p_offset &&
               (sh.sh_flags & elf::SHF_ALLOC))
        move(i, interp_rel, interp_size);
      else if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && sh.sh_size > 0)
        for (const auto& c : carried)
          if (sh.sh_offset >= c.off && uint64_t(sh.sh_offset) + uint64_t(sh.sh_size) <= c.off + c.size) {
            move(i, c.rel + (uint64_t(sh.sh_offset) - c.off), sh.sh_size);
            break;
          }
    }
    return moved;
  }

  static void describe(Phdr& ph, uint32_t type, uint32_t flags, uint64_t offset, uint64_t vaddr, uint64_t size,
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

  // The old note's section header follows the new note, or retires with it.
  Status update_note_section(std::vector<Shdr>& shdrs, Ehdr& eh, std::vector<uint8_t>& tail, uint64_t seg_off,
                             bool place_note, uint64_t note_off, uint64_t note_vaddr, uint64_t note_size) const {
    bool alone = note_.existing->alone;
    if (note_.existing_section) {
      Shdr& sh = shdrs[*note_.existing_section];
      if (place_note && alone) {
        sh.sh_offset = note_off;
        sh.sh_addr = note_vaddr;
        sh.sh_size = note_size;
        return {};
      }
      sh.sh_name = 0;
      if (alone) sh = Shdr{};  // SHT_NULL: every field zero (gABI)
    }
    if (place_note) return add_note_section(shdrs, eh, tail, seg_off, note_off, note_vaddr, note_size);
    return {};
  }

  // A new .note.nixos.ldcache section header; its name goes into a copy of
  // the section name table at the end of the file when the table lacks it.
  Status add_note_section(std::vector<Shdr>& shdrs, Ehdr& eh, std::vector<uint8_t>& tail, uint64_t seg_off,
                          uint64_t note_off, uint64_t note_vaddr, uint64_t note_size) const {
    uint32_t names = view_.shstrndx();
    bool extended_count = view_.ehdr().e_shnum == 0;
    if (names == 0 || names >= shdrs.size() || shdrs.size() + 1 >= elf::SHN_LORESERVE)
      return {};  // the segment suffices
    Shdr& table = shdrs[names];
    if (!view_.in_file(table.sh_offset, table.sh_size)) return {};
    auto old_names = view_.bytes().subspan(table.sh_offset, table.sh_size);
    std::optional<uint64_t> name = find_string_in_table(old_names, kResolutionCacheSection);
    if (!name) {
      name = old_names.size();
      table.sh_offset = seg_off + tail.size();
      tail.insert(tail.end(), old_names.begin(), old_names.end());
      tail.insert(tail.end(), kResolutionCacheSection.begin(), kResolutionCacheSection.end());
      tail.push_back(0);
      table.sh_size = tail.size() - (uint64_t(table.sh_offset) - seg_off);
    }
    Shdr sh{};
    sh.sh_name = uint32_t(*name);
    sh.sh_type = elf::SHT_NOTE;
    sh.sh_flags = elf::SHF_ALLOC;
    sh.sh_addr = note_vaddr;
    sh.sh_offset = note_off;
    sh.sh_size = note_size;
    sh.sh_addralign = 4;
    shdrs.push_back(sh);
    if (extended_count)
      shdrs[0].sh_size = shdrs.size();
    else
      eh.e_shnum = static_cast<uint16_t>(shdrs.size());
    return {};
  }

  // Symbols defined in a moved section (section symbols, _DYNAMIC) follow it, so
  // that debuggers and eu-elflint agree with the program headers. Only tools read these.
  void add_symbol_updates(EditPlan& plan, const std::vector<MovedSection>& moved, uint64_t new_dynamic) const {
    using Sym = elf::Sym<E>;
    uint64_t old_dynamic = dynamic_vaddr();
    if (moved.empty() && new_dynamic == old_dynamic) return;  // no symbol can change: spare the walk
    auto shdrs = view_.shdrs();
    for (const auto& sh : shdrs) {
      if ((sh.sh_type != elf::SHT_SYMTAB && sh.sh_type != elf::SHT_DYNSYM) || sh.sh_entsize != sizeof(Sym) ||
          sh.sh_link >= shdrs.size())
        continue;
      const auto& strtab = shdrs[sh.sh_link];
      auto symbols = view_.template table_at<Sym>(sh.sh_offset, uint64_t(sh.sh_size) / sizeof(Sym), "symbol table");
      if (!symbols || !view_.in_file(strtab.sh_offset, strtab.sh_size)) continue;
      for (size_t i = 0; i < symbols->size(); ++i) {
        const Sym& sym = (*symbols)[i];
        std::optional<uint64_t> value;
        for (const auto& m : moved)
          if (sym.st_shndx == m.index && sym.st_value >= m.old_addr && sym.st_value <= m.old_addr + m.old_size)
            value = uint64_t(sym.st_value) - m.old_addr + m.new_addr;
        if (!value && sym.st_value == old_dynamic) {
          auto name = view_.string_at(strtab.sh_offset, strtab.sh_size, sym.st_name, "symbol");
          if (name && *name == "_DYNAMIC") value = new_dynamic;
        }
        if (!value) continue;
        Sym updated = sym;
        updated.st_value = *value;
        uint64_t position = sh.sh_type == elf::SHT_DYNSYM ? renamer_.new_position(i) : i;  // a rename may move it
        plan.writes.push_back({WritePhase::Cleanup, uint64_t(sh.sh_offset) + position * sizeof(Sym),
                               bytes_of(std::span<const Sym>(&updated, 1)), "symbol value"});
      }
    }
  }

  const bool with_dynamic_;
  std::vector<Phdr> phdrs_;         // the new program header table
  std::string layout_description_;  // how room was found, for the user
  // The resolution-cache note.
  std::optional<size_t> note_segment_;
  std::vector<uint8_t> note_bytes_;
  bool place_note_ = false, note_load_ = false, replace_existing_ = false, existing_alone_ = false;
  std::optional<uint64_t> replaced_note_;
  // Segments of earlier edits this one replaces.
  std::optional<Phdr> earlier_segment_, earlier_note_;
  // Room and what moves.
  bool move_phdrs_ = false, grow_in_place_ = false, move_interp_ = false;
  std::optional<uint64_t> reclaimed_from_;  // an interrupted edit's tail starts here
  bool phdrs_in_segment() const { return move_phdrs_; }
  bool room_for_patchelf_ = false;  // the table grew with room after it for a later patchelf's
  std::vector<CarriedRange> carried_;
  std::string interp_text_;
  size_t load_at_ = 0;
  std::optional<size_t> note_at_;
  // The new dynamic section and strings.
  DynamicModel placed_;
  std::vector<uint8_t> strtab_;
  uint64_t dyn_slots_ = 0;
  // Where the segment goes.
  layout::SegmentOffsets rel_;
  uint64_t seg_off_ = 0, seg_vaddr_ = 0, note_off_ = 0, note_vaddr_ = 0;
};

}  // namespace

template <class E>
Expected<EditPlan> plan_appended_segment(const PlanContext<E>& context, bool with_dynamic) {
  // An appended segment grows the program header table where binutils needs it,
  // over bytes the old file references: never committed by one write.
  if (context.options_.commit_in_elf_header)
    return context.view_.error("the edit needs an appended segment, which no single write commits");
  return SegmentAppender<E>(context, with_dynamic).plan();
}

#define RUNPATCH_INSTANTIATE(E) template Expected<EditPlan> plan_appended_segment(const PlanContext<E>&, bool);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
