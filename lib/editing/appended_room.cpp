// Phases 1 and 2 of an appended segment: the segments of earlier edits given
// up, and room for the new program header entries (docs/editing.md lists the
// ways in order: an earlier edit's segment, PT_NULL entries, a duplicate
// PT_NOTE, evacuating what follows the table, moving it).
#include "editing/appended_layout.hpp"

namespace runpatch {

namespace {

template <class E>
using Phdr = elf::Phdr<E>;

// The resolution-cache segment of an earlier edit: the last PT_LOAD,
// read-only, holding the note alone in its PT_NOTE.
template <class E>
std::optional<size_t> earlier_note_segment(const PlanInputs<E>& in) {
  const NoteChange& note = in.note;
  if (!note.existing || !note.existing->alone) return std::nullopt;
  auto phdrs = in.view.phdrs();
  std::optional<size_t> last;
  size_t loads = 0;
  for (size_t i = 0; i < phdrs.size(); ++i)
    if (phdrs[i].p_type == elf::PT_LOAD) last = i, ++loads;
  if (!last || loads < 2) return std::nullopt;
  const Phdr<E>& ph = phdrs[*last];
  if (ph.p_flags != elf::PF_R || !covers(ph, note.existing->offset, note.existing->size)) return std::nullopt;
  return last;
}

// Tables the loader finds only through the dynamic section: a copy in the
// new segment and a new address in its entry move them. Their sizes come from
// the section headers (none: not movable).
template <class E>
std::vector<CarriedRange> movable_dynamic_tables(const PlanInputs<E>& in) {
  std::vector<CarriedRange> tables;
  for (uint64_t tag : elf::kTablesFoundThroughDynamic) {
    auto vaddr = in.table.find(tag);
    if (!vaddr) continue;
    for (const auto& sh : in.view.shdrs())
      if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && sh.sh_addr == *vaddr && sh.sh_size > 0 &&
          in.view.in_file(sh.sh_offset, sh.sh_size)) {
        uint64_t align = std::clamp<uint64_t>(sh.sh_addralign, 1, 16);
        tables.push_back({uint64_t(sh.sh_offset), uint64_t(sh.sh_size), align, 0, tag});
        break;
      }
  }
  return tables;
}

// Whether a segment another tool appended (patchelf's, for the dynamic
// strings and section it moved) holds nothing but the dynamic strings and
// section, which this edit moves anyway. Left behind empty, strip rewrites it
// as a 0-byte segment whose offset no longer matches its address and the
// loader rejects the file; given up like an earlier runpatch segment, its
// entry becomes the new segment's. One that holds more (notes, hash tables)
// stays: strip keeps it, and carrying its contents would cost their size.
// Needs section headers to tell.
template <class E>
bool holds_only_what_moves(const PlanInputs<E>& in, const Phdr<E>& segment) {
  const auto& view = in.view;
  if (view.shdrs().empty() || segment.p_memsz != segment.p_filesz) return false;
  uint64_t begin = segment.p_vaddr, end = begin + uint64_t(segment.p_memsz);
  auto in_segment = [&](uint64_t vaddr, uint64_t size) { return size > 0 && vaddr < end && begin < vaddr + size; };
  for (const auto& ph : view.phdrs())
    if (&ph != &segment && in_segment(ph.p_vaddr, ph.p_memsz) && ph.p_type != elf::PT_DYNAMIC) return false;
  for (const auto& sh : view.shdrs())
    if ((sh.sh_flags & elf::SHF_ALLOC) && in_segment(sh.sh_addr, sh.sh_size) &&
        sh.sh_offset != in.table.strtab_offset && sh.sh_offset != in.table.offset)
      return false;
  return true;
}

// A segment an earlier runpatch edit appended: the last PT_LOAD (before a
// resolution-cache segment), holding the dynamic strings and section, and
// starting with them or the program headers.
template <class E>
std::optional<size_t> earlier_runpatch_segment(const PlanInputs<E>& in, std::optional<size_t> note_segment) {
  auto phdrs = in.view.phdrs();
  std::optional<size_t> last;
  size_t loads = 0;
  for (size_t i = 0; i < phdrs.size(); ++i)
    if (phdrs[i].p_type == elf::PT_LOAD && i != note_segment) last = i, ++loads;
  if (!last || loads < 2) return std::nullopt;
  const Phdr<E>& ph = phdrs[*last];
  const auto& table = in.table;
  uint64_t begin = ph.p_offset, end = begin + uint64_t(ph.p_filesz);
  if (table.strtab_offset < begin || table.strtab_offset >= end || table.offset < begin || table.offset >= end)
    return std::nullopt;
  bool starts_like_ours = begin == table.strtab_offset || begin == uint64_t(in.view.ehdr().e_phoff);
  if (!starts_like_ours && !holds_only_what_moves(in, ph)) return std::nullopt;
  return last;
}

// The PT_NOTE of a resolution-cache note this edit replaces or drops (it is not carried along).
template <class E>
bool is_replaced_note(const Phdr<E>& ph, std::optional<uint64_t> replaced_note) {
  return replaced_note && ph.p_type == elf::PT_NOTE && ph.p_offset == *replaced_note;
}

template <class E>
void carry(std::vector<CarriedRange>& carried, const Phdr<E>& ph) {
  for (const auto& c : carried)
    if (c.off == ph.p_offset && c.size == ph.p_filesz) return;  // PT_NOTE and PT_GNU_PROPERTY often coincide
  // Notes are 4- or 8-aligned (gABI); any other value is treated as 4 rather than trusted.
  carried.push_back({uint64_t(ph.p_offset), uint64_t(ph.p_filesz), ph.p_align == 8 ? uint64_t(8) : uint64_t(4)});
}

// What an evacuation of the bytes after the program header table moves.
template <class E>
struct Evacuation {
  std::vector<const Phdr<E>*> segments;  // interpreter and notes
  std::vector<CarriedRange> tables;      // tables found through the dynamic section
  uint64_t end = 0;                      // the bytes freed end here
};

// Finds room for new program header entries and decides what moves.
template <class E>
class RoomFinder {
  using Shdr = elf::Shdr<E>;
  using Sym = elf::Sym<E>;

 public:
  RoomFinder(const PlanInputs<E>& in, const EarlierSegments<E>& earlier) : in_(in), view_(in.view), earlier_(earlier) {}

  Expected<Room<E>> choose() const {
    Room<E> room;
    room.phdrs = earlier_.phdrs;
    room.layout = earlier_.layout;
    size_t wanted = 1 + (earlier_.new_note == NewNote::OwnSegment ? 1 : 0) +
                    (earlier_.new_note != NewNote::None ? 1 : 0) + (in_.stack_entry_wanted ? 1 : 0);
    uint64_t phoff = view_.ehdr().e_phoff, table_size = view_.phdrs().size() * sizeof(Phdr<E>);
    bool evacuated_interp = false;
    bool table_in_earlier = (earlier_.earlier_segment && covers(*earlier_.earlier_segment, phoff, table_size)) ||
                            (earlier_.earlier_note && covers(*earlier_.earlier_note, phoff, table_size));
    if (table_in_earlier) {
      room.move_phdrs = true;
      reuse_freed_entries(room, wanted);
    } else {
      evacuated_interp = reuse_or_make_room(room, wanted, phoff + table_size);
    }
    bool interp_in_earlier = carry_from_earlier_segments(room.carried);
    room.move_interp = in_.interp.needs_room || interp_in_earlier || evacuated_interp;
    room.interp_text = in_.interp.changed ? in_.interp.text : in_.info.interpreter.value_or("");
    RUNPATCH_CHECK(insert_new_entries(room));
    return room;
  }

 private:
  // The table moves again with the earlier segment it lies in: the entries
  // of the segments this edit replaces (PT_NULL now) take the new ones, so
  // the table is as long as one edit of the original makes it, not one
  // entry longer per edit.
  void reuse_freed_entries(Room<E>& room, size_t wanted) const {
    for (size_t reused = 0; reused < wanted; ++reused) {
      auto freed = std::find_if(room.phdrs.begin(), room.phdrs.end(),
                                [](const Phdr<E>& ph) { return ph.p_type == elf::PT_NULL; });
      if (freed == room.phdrs.end()) return;
      room.phdrs.erase(freed);
    }
  }

  // Reuses spare entries, then evacuates what follows the table or moves it.
  // Returns whether the interpreter is evacuated.
  bool reuse_or_make_room(Room<E>& room, size_t wanted, uint64_t table_end) const {
    size_t reused = 0;
    std::optional<LayoutStep> slot_step;
    while (reused < wanted) {
      auto slot = find_slot(room.phdrs, slot_step);
      if (!slot) break;
      room.phdrs.erase(room.phdrs.begin() + *slot);
      ++reused;
    }
    if (reused > 0 && room.layout.empty()) room.layout.push_back(*slot_step);
    if (reused == wanted) return false;
    size_t entries = wanted - reused;
    auto evacuation = evacuate_after_table(table_end, entries, room_for_a_later_patchelf());
    room.room_for_patchelf = evacuation.has_value();
    if (!evacuation) evacuation = evacuate_after_table(table_end, entries, 0);
    if (!evacuation) {
      room.move_phdrs = true;
      room.layout.push_back(LayoutStep::MovedProgramHeaders);
      return false;
    }
    room.grow_in_place = true;
    room.layout.push_back(LayoutStep::EvacuatedAfterTable);
    bool interp_moves = false;
    for (const Phdr<E>* ph : evacuation->segments) {
      if (ph->p_type == elf::PT_INTERP)
        interp_moves = true;
      else if (!is_replaced_note<E>(*ph, earlier_.replaced_note))
        carry<E>(room.carried, *ph);
    }
    for (const CarriedRange& t : evacuation->tables)
      if (!t.placed_anyway) room.carried.push_back(t);
    return interp_moves;
  }

  // Whatever lived in an earlier runpatch segment must move again. Returns whether the interpreter did.
  bool carry_from_earlier_segments(std::vector<CarriedRange>& carried) const {
    bool interp_in_earlier = false;
    for (const auto& segment : {earlier_.earlier_segment, earlier_.earlier_note}) {
      if (!segment) continue;
      for (const auto& ph : view_.phdrs()) {
        if (!covers(*segment, ph.p_offset, ph.p_filesz) || is_replaced_note<E>(ph, earlier_.replaced_note)) continue;
        if (ph.p_type == elf::PT_INTERP) interp_in_earlier = true;
        if (ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY) carry<E>(carried, ph);
      }
      for (const auto& t : movable_dynamic_tables(in_))
        if (covers(*segment, t.off, t.size) &&
            std::none_of(carried.begin(), carried.end(), [&](const CarriedRange& c) { return c.off == t.off; }))
          carried.push_back(t);
    }
    return interp_in_earlier;
  }

  // The new PT_LOADs go after the last PT_LOAD (loaders size the mapping from
  // first to last); the new PT_NOTE after the last PT_NOTE.
  Status insert_new_entries(Room<E>& room) const {
    auto& phdrs = room.phdrs;
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_LOAD) room.load_at = i + 1;
    phdrs.insert(phdrs.begin() + room.load_at, earlier_.new_note == NewNote::OwnSegment ? 2 : 1, Phdr<E>{});
    if (earlier_.new_note != NewNote::None) {
      size_t at = phdrs.size();
      for (size_t i = 0; i < phdrs.size(); ++i)
        if (phdrs[i].p_type == elf::PT_NOTE) at = i + 1;
      phdrs.insert(phdrs.begin() + at, Phdr<E>{});
      room.note_at = at;
      // A PT_NOTE listed before the last PT_LOAD (patchelf sorts a non-PIE's
      // table by offset after moving its notes to the front): the new LOAD
      // slots moved down with everything after the note.
      if (at <= room.load_at) ++room.load_at;
    }
    if (in_.stack_entry_wanted) phdrs.push_back(Phdr<E>{});  // PT_NULL: fold_header_fields makes it PT_GNU_STACK
    if (phdrs.size() >= elf::PN_XNUM)
      return view_.error(ErrorCode::TooManyProgramHeaders, "too many program headers to add one");
    return {};
  }

  // A program header entry that can become the new PT_LOAD without loss.
  std::optional<size_t> find_slot(const std::vector<Phdr<E>>& phdrs, std::optional<LayoutStep>& step) const {
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_NULL) {
        step = LayoutStep::ReusedNullEntry;
        return i;
      }
    // x86-64 and aarch64 linkers describe .note.gnu.property twice: PT_NOTE and PT_GNU_PROPERTY.
    const Phdr<E>* property = view_.find_phdr(elf::PT_GNU_PROPERTY);
    if (property)
      for (size_t i = 0; i < phdrs.size(); ++i)
        if (phdrs[i].p_type == elf::PT_NOTE && phdrs[i].p_offset == property->p_offset &&
            phdrs[i].p_filesz == property->p_filesz) {
          step = LayoutStep::ReusedDuplicateNote;
          return i;
        }
    return std::nullopt;
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
    return (uint64_t(notes) + 1) * sizeof(Phdr<E>);
  }

  static bool movable(const Phdr<E>& ph) {
    return ph.p_filesz > 0 &&
           (ph.p_type == elf::PT_INTERP || ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY);
  }

  const Phdr<E>* first_load() const {
    for (const auto& ph : view_.phdrs())
      if (ph.p_type == elf::PT_LOAD) return &ph;
    return nullptr;
  }

  // Frees entries' worth of bytes (and slack) right after the table, when only
  // the interpreter string, notes and tables found through the dynamic section
  // live there: they move into the new segment (PT_INTERP, PT_NOTE and their
  // sections follow), and the table grows where it is, inside the first
  // PT_LOAD, as binutils expects it. nullopt: not possible.
  std::optional<Evacuation<E>> evacuate_after_table(uint64_t table_end, size_t entries, uint64_t slack) const {
    uint64_t need_end = table_end + entries * sizeof(Phdr<E>) + slack;
    const Phdr<E>* load = first_load();
    if (!load || !covers(*load, table_end, need_end - table_end)) return std::nullopt;
    // The dynamic strings move anyway when the dynamic section does; the tables it points at can follow,
    // unless the file is written in place: processes that have it mapped read .gnu.hash on every lookup.
    std::vector<CarriedRange> tables;
    if (earlier_.carries_dynamic() && !in_.options.in_place) {
      tables = movable_dynamic_tables(in_);
      tables.push_back({in_.table.strtab_offset, in_.table.strtab_size, 1, 0, elf::DT_STRTAB, true});
      // The dynamic section too (patchelf 0.14 puts it right after the table of a program it shifted).
      tables.push_back({in_.table.offset, in_.table.slots.size() * sizeof(elf::Dyn<E>), 8, 0, 0, true});
    }
    Evacuation<E> chosen;
    if (!choose_evacuated(chosen, *load, tables, table_end, need_end)) return std::nullopt;
    if (!only_evacuated_after(chosen, table_end)) return std::nullopt;
    return chosen;
  }

  // Walks from the table's end to need_end, taking each movable segment or
  // table in turn; bytes between them must be unreferenced.
  bool choose_evacuated(Evacuation<E>& chosen, const Phdr<E>& load, const std::vector<CarriedRange>& tables,
                        uint64_t cover, uint64_t need_end) const {
    while (cover < need_end) {
      const Phdr<E>* next = nullptr;
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
        if (!unreferenced(load, cover, gap_end)) return false;
        cover = gap_end;
        continue;
      }
      if (next && uint64_t(next->p_offset) == next_at) {
        for (const auto& ph : view_.phdrs())
          if (movable(ph) && ph.p_offset == next->p_offset) chosen.segments.push_back(&ph);
        cover = std::max<uint64_t>(cover, uint64_t(next->p_offset) + uint64_t(next->p_filesz));
      } else {
        chosen.tables.push_back(*next_table);
        cover = std::max<uint64_t>(cover, next_table->off + next_table->size);
      }
    }
    chosen.end = cover;
    return true;
  }

  // Nothing else may live in the freed bytes.
  bool only_evacuated_after(const Evacuation<E>& chosen, uint64_t table_end) const {
    auto moved_range = [&](uint64_t off, uint64_t size) {
      auto inside = [&](uint64_t begin, uint64_t length) { return off >= begin && off + size <= begin + length; };
      return std::any_of(chosen.segments.begin(), chosen.segments.end(),
                         [&](const Phdr<E>* ph) { return inside(ph->p_offset, ph->p_filesz); }) ||
             std::any_of(chosen.tables.begin(), chosen.tables.end(),
                         [&](const CarriedRange& t) { return inside(t.off, t.size); });
    };
    auto freed = [&](uint64_t off, uint64_t size) { return !(off + size <= table_end || off >= chosen.end); };
    for (const auto& sh : view_.shdrs()) {
      uint64_t off = sh.sh_offset, size = sh.sh_size;
      if (!(sh.sh_flags & elf::SHF_ALLOC) || sh.sh_type == elf::SHT_NOBITS || size == 0) continue;
      if (freed(off, size) && !moved_range(off, size)) return false;
    }
    for (const auto& ph : view_.phdrs()) {
      uint64_t off = ph.p_offset, size = ph.p_filesz;
      if (ph.p_type == elf::PT_LOAD || ph.p_type == elf::PT_PHDR || size == 0) continue;
      if (freed(off, size) && !moved_range(off, size)) return false;
    }
    return true;
  }

  // Whether [begin, end) of the first PT_LOAD is free: with section headers to
  // tell, no section, segment, dynamic entry or symbol lies in or points into it.
  bool unreferenced(const Phdr<E>& load, uint64_t begin, uint64_t end) const {
    if (view_.shdrs().empty() || begin >= end) return begin >= end;
    auto overlaps = [&](uint64_t off, uint64_t size) { return size > 0 && off < end && begin < off + size; };
    for (const auto& sh : view_.shdrs())
      if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && overlaps(sh.sh_offset, sh.sh_size))
        return false;
    for (const auto& ph : view_.phdrs())
      if (ph.p_type != elf::PT_LOAD && ph.p_type != elf::PT_PHDR && overlaps(ph.p_offset, ph.p_filesz)) return false;
    uint64_t first = uint64_t(load.p_vaddr) + (begin - uint64_t(load.p_offset));
    uint64_t last = first + (end - begin);
    auto points_in = [&](uint64_t address) { return address >= first && address < last; };
    for (const auto& d : in_.table.entries())
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

  const PlanInputs<E>& in_;
  const MappedElfView<E>& view_;
  const EarlierSegments<E>& earlier_;
};

}  // namespace

template <class E>
EarlierSegments<E> find_earlier_segments(const PlanInputs<E>& in, SegmentCarries carries) {
  const bool carries_dynamic = carries == SegmentCarries::DynamicTables;
  EarlierSegments<E> earlier;
  earlier.carries = carries;
  const NoteChange& note = in.note;
  earlier.phdrs.assign(in.view.phdrs().begin(), in.view.phdrs().end());
  earlier.note_segment = earlier_note_segment(in);
  earlier.note_bytes = note.bytes;
  if (carries_dynamic && earlier.note_segment && note.action == NoteChange::Action::None) {
    // Unchanged, but its segment must stay last: it moves along.
    auto old = in.view.bytes().subspan(note.existing->offset, note.existing->size);
    earlier.note_bytes.assign(old.begin(), old.end());
  }
  if (!earlier.note_bytes.empty()) earlier.new_note = carries_dynamic ? NewNote::OwnSegment : NewNote::InTheSegment;
  if (note.existing && (note.action != NoteChange::Action::None || earlier.new_note != NewNote::None))
    earlier.old_note = note.existing->alone ? OldNote::ReplacedAlone : OldNote::ReplacedShared;
  if (earlier.old_note == OldNote::ReplacedAlone) earlier.replaced_note = note.existing->offset;
  // Entries that this edit frees: they become PT_NULL, reused by the room.
  if (std::optional<size_t> index =
          carries_dynamic ? earlier_runpatch_segment(in, earlier.note_segment) : std::nullopt) {
    earlier.earlier_segment = earlier.phdrs[*index];
    earlier.phdrs[*index].p_type = elf::PT_NULL;
    earlier.layout.push_back(LayoutStep::ReplacedEarlierSegment);
  }
  if (earlier.note_segment && earlier.old_note != OldNote::Kept) {
    earlier.earlier_note = earlier.phdrs[*earlier.note_segment];
    earlier.phdrs[*earlier.note_segment].p_type = elf::PT_NULL;
    // A note-only edit moved the program header table into its note's segment
    // (rule 5): that segment is an earlier edit's, replaced and carried over.
    uint64_t table_size = uint64_t(in.view.phdrs().size()) * sizeof(Phdr<E>);
    if (covers(*earlier.earlier_note, uint64_t(in.view.ehdr().e_phoff), table_size))
      earlier.layout.push_back(LayoutStep::ReplacedEarlierSegment);
  }
  if (earlier.old_note == OldNote::ReplacedAlone) earlier.phdrs[note.existing->segment].p_type = elf::PT_NULL;
  return earlier;
}

template <class E>
Expected<Room<E>> choose_room(const PlanInputs<E>& in, const EarlierSegments<E>& earlier) {
  return RoomFinder<E>(in, earlier).choose();
}

#define RUNPATCH_INSTANTIATE(E)                                                            \
  template EarlierSegments<E> find_earlier_segments(const PlanInputs<E>&, SegmentCarries); \
  template Expected<Room<E>> choose_room(const PlanInputs<E>&, const EarlierSegments<E>&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
