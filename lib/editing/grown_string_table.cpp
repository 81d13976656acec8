#include "editing/grown_string_table.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "editing/string_placer.hpp"

namespace runpatch {

namespace {

// The free bytes a grown table gets at least: a Nix output's runpath (its
// dependencies' store paths, the driver and a cuda_compat directory) fits.
constexpr uint64_t kGrownTableRoom = 512;

// The bytes [begin, end) of the string table's segment after the table move
// by `shift` (one shift for all: tables the linker laid out adjacent stay
// so, as DT_RELA may cover DT_JMPREL's); the table grows up to their new start.
struct Growth {
  size_t segment = 0;
  size_t strtab_section = 0;
  uint64_t begin = 0, end = 0;  // file offsets of the moved bytes; begin == end: nothing follows the table
  uint64_t shift = 0;
  uint64_t align = 1;        // the moved tables' largest alignment: the shift is a multiple
  uint64_t vaddr_delta = 0;  // the segment's address - offset
  std::vector<size_t> moved_sections;

  uint64_t grown_size(uint64_t strtab_offset) const { return begin + shift - strtab_offset; }
  bool moves(uint64_t offset) const { return offset >= begin && offset < end; }
  bool moves_address(uint64_t vaddr) const { return vaddr >= begin + vaddr_delta && vaddr < end + vaddr_delta; }
};

template <class E>
class StringTableGrower {
  using Phdr = elf::Phdr<E>;
  using Shdr = elf::Shdr<E>;
  using Sym = elf::Sym<E>;

 public:
  explicit StringTableGrower(const PlanInputs<E>& in) : in_(in), view_(in.view) {}

  std::optional<EditPlan> plan() const {
    if (!in_.options.tables_may_move || in_.options.commit_in_elf_header) return std::nullopt;
    if (view_.ehdr().e_type != elf::ET_EXEC || view_.shdrs().empty()) return std::nullopt;
    // Only the dynamic section the loader reads (not one patchelf finds through a section header alone).
    const auto* dynamic = view_.find_phdr(elf::PT_DYNAMIC);
    if (!dynamic || uint64_t(dynamic->p_offset) != in_.table.offset) return std::nullopt;
    // Renamed symbols' checks read the relocation tables where they were: those stay.
    if (!in_.renamer.empty() || in_.model.entries.size() + 1 > in_.table.slots.size()) return std::nullopt;
    auto growth = find_growth();
    if (!growth) return std::nullopt;
    auto survives = in_.surviving_string_refs();
    if (!survives) return std::nullopt;  // cannot prove bytes free
    grow_only_as_needed(*growth, *survives);
    auto placed = StringPlacer<E>(in_).in_unused_bytes(*survives, growth->grown_size(in_.table.strtab_offset));
    if (!placed) return std::nullopt;
    return writes(*growth, std::move(*placed), std::move(*survives));
  }

 private:
  // Where the table can grow: the segment holding it, what follows it there
  // (movable tables only), and how far they can move inside the last page.
  std::optional<Growth> find_growth() const {
    const uint64_t str_begin = in_.table.strtab_offset, str_end = str_begin + in_.table.strtab_size;
    auto phdrs = view_.phdrs();
    Growth g;
    auto load = std::find_if(phdrs.begin(), phdrs.end(), [&](const Phdr& ph) {
      return ph.p_type == elf::PT_LOAD && covers(ph, str_begin, in_.table.strtab_size);
    });
    if (load == phdrs.end() || load->p_filesz != load->p_memsz) return std::nullopt;
    if ((uint64_t(load->p_vaddr) - uint64_t(load->p_offset)) % kMinPage != 0) return std::nullopt;
    g.segment = size_t(load - phdrs.begin());
    g.vaddr_delta = uint64_t(load->p_vaddr) - uint64_t(load->p_offset);
    g.end = uint64_t(load->p_offset) + uint64_t(load->p_filesz);
    const uint64_t limit = align_up(g.end, kMinPage);  // the segment's last page: mapped already
    g.begin = g.end;
    if (!sections_after(str_begin, str_end, limit, g)) return std::nullopt;
    g.shift = (limit - g.end) / g.align * g.align;
    if (g.shift == 0 || !only_table_entries_point_into(str_end, limit, g)) return std::nullopt;
    if (!nothing_else_in(g, str_end, limit)) return std::nullopt;
    return g;
  }

  // The table's own section, and the sections between it and the page's end:
  // each inside the segment and a table a movable dynamic entry names.
  bool sections_after(uint64_t str_begin, uint64_t str_end, uint64_t limit, Growth& g) const {
    auto shdrs = view_.shdrs();
    bool own = false;
    for (size_t i = 0; i < shdrs.size(); ++i) {
      const Shdr& sh = shdrs[i];
      uint64_t off = sh.sh_offset, size = sh.sh_type == elf::SHT_NOBITS ? 0 : uint64_t(sh.sh_size);
      if (sh.sh_type == elf::SHT_STRTAB && off == str_begin && size == in_.table.strtab_size) {
        g.strtab_section = i, own = true;
        continue;
      }
      if (size == 0) {
        // An empty section after the table (.rela.iplt) keeps its place among the moved ones.
        if ((sh.sh_flags & elf::SHF_ALLOC) && off >= str_end && off <= g.end) g.moved_sections.push_back(i);
        continue;
      }
      if (off + size <= str_begin || off >= limit) continue;
      if (off < str_end || off + size > g.end || !(sh.sh_flags & elf::SHF_ALLOC)) return false;
      if (!names_table(sh.sh_addr) || sh.sh_addralign > kMinPage) return false;
      g.moved_sections.push_back(i);
      g.begin = std::min<uint64_t>(g.begin, off);
      g.align = std::max<uint64_t>(g.align, sh.sh_addralign);
    }
    return own;
  }

  bool names_table(uint64_t vaddr) const {
    return std::any_of(in_.table.entries().begin(), in_.table.entries().end(), [&](const auto& d) {
      return elf::is_table_movable_in_segment(d.d_tag) && uint64_t(d.d_val) == vaddr;
    });
  }

  // No dynamic entry but a movable table's points past the string table in
  // the page (a pointer only the loader knows would go stale), and those
  // point into the moved bytes.
  bool only_table_entries_point_into(uint64_t str_end, uint64_t limit, const Growth& g) const {
    for (const auto& d : in_.table.entries()) {
      uint64_t value = d.d_val;
      if (is_string_tag(d.d_tag) || value < str_end + g.vaddr_delta || value >= limit + g.vaddr_delta) continue;
      if (!elf::is_table_movable_in_segment(d.d_tag) || !g.moves_address(value)) return false;
    }
    return true;
  }

  // No other segment, header table or section in the bytes the table and the
  // moved tables take, nor another PT_LOAD on the page.
  bool nothing_else_in(const Growth& g, uint64_t str_end, uint64_t limit) const {
    auto overlaps = [&](uint64_t off, uint64_t size) { return size > 0 && off < limit && str_end < off + size; };
    const auto& eh = view_.ehdr();
    if (overlaps(eh.e_phoff, view_.phdrs().size() * sizeof(Phdr)) ||
        overlaps(eh.e_shoff, view_.shdrs().size() * sizeof(Shdr)))
      return false;
    auto phdrs = view_.phdrs();
    for (size_t i = 0; i < phdrs.size(); ++i) {
      const Phdr& ph = phdrs[i];
      if (i == g.segment || ph.p_type == elf::PT_GNU_STACK) continue;
      uint64_t first = ph.p_vaddr, last = uint64_t(ph.p_vaddr) + uint64_t(ph.p_memsz);
      if (ph.p_type == elf::PT_LOAD) first = first / kMinPage * kMinPage, last = align_up(last, kMinPage);
      if (overlaps(ph.p_offset, ph.p_filesz) ||
          (last > first && first < limit + g.vaddr_delta && str_end + g.vaddr_delta < last))
        return false;
    }
    return true;
  }

  // The table grows by kGrownTableRoom (or its new strings and kStringSlack,
  // when more), not to the page's end: patchelf 0.14 lays a program's tables
  // out again from what lies before the next one, and a table that fills the
  // page makes it put .dynstr across two segments, which strip then breaks
  // (as it does on python3.11 as linked). Its size follows from what the file
  // keeps alone while the strings fit the room: the hooks' later edits (the
  // driver and compat directories prepended, in either order) then go in
  // place, and a regrow gives the bytes of one edit whichever led there.
  void grow_only_as_needed(Growth& g, const std::vector<ByteRange>& survives) const {
    uint64_t kept_end = 0;
    for (const auto& r : survives) kept_end = std::max<uint64_t>(kept_end, r.end);
    std::set<std::string> added;
    for (const auto& e : in_.model.entries)
      if (e.changed && e.text) added.insert(*e.text);
    for (const auto& rename : in_.version_need_renames) added.insert(rename.text);
    uint64_t strings = kStringSlack;
    for (const auto& text : added) strings += text.size() + 1;
    uint64_t wanted_end = in_.table.strtab_offset + kept_end + std::max(strings, kGrownTableRoom);
    // The moved tables keep their place modulo their alignment.
    uint64_t shift = wanted_end <= g.begin ? 0 : align_up(wanted_end - g.begin, g.align);
    g.shift = std::min(g.shift, shift);
  }

  std::optional<EditPlan> writes(const Growth& g, PlacedStrings placed, std::vector<ByteRange> live) const {
    EditPlan plan;
    plan.strategy = EditStrategy::InPlace;
    plan.layout = {LayoutStep::StringTableGrown};
    plan.new_size = view_.bytes().size();
    for (const auto& [text, at] : placed.offsets) live.push_back({at, at + text.size() + 1});
    in_.zero_unreferenced_strings(placed.strtab, std::move(live));
    plan.writes.push_back({WritePhase::Prepare, in_.table.strtab_offset, placed.strtab, WriteKind::DynamicStrings});
    // No shift: the table already has its room (an edit that could not be staged in place, written as a copy).
    if (g.end > g.begin && g.shift > 0)
      plan.writes.push_back(
          {WritePhase::Prepare, g.begin + g.shift, in_.copy_range(g.begin, g.end - g.begin), WriteKind::MovedTables});
    std::vector<uint8_t> entries = dynamic_bytes(g, placed.model);
    if (auto w =
            changed_bytes_write(WritePhase::Commit, in_.table.offset, in_.copy_range(in_.table.offset, entries.size()),
                                entries, WriteKind::DynamicSection))
      plan.writes.push_back(std::move(*w));
    if (g.shift > 0) {
      Phdr load = view_.phdrs()[g.segment];
      load.p_filesz = uint64_t(load.p_filesz) + g.shift;
      load.p_memsz = load.p_filesz;
      plan.writes.push_back(
          {WritePhase::Commit, in_.phdr_offset(g.segment), phdr_bytes<E>(load), WriteKind::ProgramHeader});
    }
    if (in_.interp.changed) plan.writes.push_back(interpreter_write(in_, WritePhase::Commit));
    size_t table_writes = plan.writes.size();
    add_version_need_writes(in_, placed.offsets, plan);
    add_symbol_rename_writes(in_.renamer.writes(view_, placed.offsets), plan);
    if (g.shift > 0) add_symbol_updates(g, plan);
    if (!follow_moved_tables(g, plan, table_writes)) return std::nullopt;
    add_section_header_writes(g, plan);
    return plan;
  }

  std::vector<uint8_t> dynamic_bytes(const Growth& g, DynamicModel model) const {
    for (auto& e : model.entries) {
      if (e.tag == elf::DT_STRSZ) e.value = g.grown_size(in_.table.strtab_offset);
      if (elf::is_table_movable_in_segment(e.tag) && g.moves_address(e.value)) e.value += g.shift;
    }
    return serialize_dynamic<E>(model, std::max(model.entries.size(), in_.original.entries.size()) + 1);
  }

  // Writes into the moved tables (version needs, renamed symbols' tables, a
  // moved .dynsym's symbols) go to their new place; one across the moved bytes' edge cannot.
  static bool follow_moved_tables(const Growth& g, EditPlan& plan, size_t from) {
    for (size_t i = from; i < plan.writes.size(); ++i) {
      PlannedWrite& w = plan.writes[i];
      if (w.bytes.empty()) continue;
      uint64_t end = w.offset + w.bytes.size();
      bool starts = g.moves(w.offset), ends = g.moves(end - 1);
      if (starts != ends || (!starts && w.offset < g.begin && end > g.end)) return false;
      if (starts) w.offset += g.shift;
    }
    return true;
  }

  // For tools: the string table's size, the moved sections' places.
  void add_section_header_writes(const Growth& g, EditPlan& plan) const {
    auto header = [&](size_t index, const Shdr& sh) {
      plan.writes.push_back({WritePhase::Cleanup, uint64_t(view_.ehdr().e_shoff) + index * sizeof(Shdr),
                             bytes_of(std::span<const Shdr>(&sh, 1)), WriteKind::SectionHeader});
    };
    Shdr strtab = view_.shdrs()[g.strtab_section];
    strtab.sh_size = g.grown_size(in_.table.strtab_offset);
    header(g.strtab_section, strtab);
    for (size_t index : g.moved_sections) {
      Shdr sh = view_.shdrs()[index];
      sh.sh_offset = uint64_t(sh.sh_offset) + g.shift;
      sh.sh_addr = uint64_t(sh.sh_addr) + g.shift;
      header(index, sh);
    }
  }

  // Symbols defined in a moved section (section symbols, __rela_iplt_start) follow it.
  void add_symbol_updates(const Growth& g, EditPlan& plan) const {
    auto new_value = [&](const Sym& sym, const Shdr*) -> std::optional<uint64_t> {
      bool moved =
          std::find(g.moved_sections.begin(), g.moved_sections.end(), size_t(sym.st_shndx)) != g.moved_sections.end();
      if (!moved) return std::nullopt;
      return uint64_t(sym.st_value) + g.shift;
    };
    add_symbol_value_writes(in_, new_value, plan);
  }

  const PlanInputs<E>& in_;
  const MappedElfView<E>& view_;
};

}  // namespace

template <class E>
std::optional<EditPlan> plan_grown_string_table(const PlanInputs<E>& in) {
  return StringTableGrower<E>(in).plan();
}

#define RUNPATCH_INSTANTIATE(E) template std::optional<EditPlan> plan_grown_string_table(const PlanInputs<E>&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
