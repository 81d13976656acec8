#include "editing/edit_verifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>

#include "editing/header_edits.hpp"
#include "editing/plan_inputs.hpp"
#include "editing/planned_image.hpp"
#include "editing/string_refs.hpp"
#include "editing/symbol_rename.hpp"
#include "reading/elf_dispatch.hpp"
#include "reading/elf_info_reader.hpp"
#include "reading/notes.hpp"
#include "runpatch/resolving/resolution_cache.hpp"

namespace runpatch {

namespace {

Error verification_error(const std::string& path, const std::string& field, const std::string& detail) {
  return make_error(ErrorCode::VerificationFailed, path,
                    fmt::format("edit verification failed: {} {} (file left untouched)", field, detail));
}

std::string shown(const std::optional<std::string>& value) { return value ? "'" + *value + "'" : "(none)"; }
std::string shown(const std::vector<std::string>& values) {
  return "[" + fmt::format("{}", fmt::join(values, ", ")) + "]";
}

template <class T>
Status expect_equal(const std::string& path, const std::string& field, const T& wanted, const T& found) {
  if (wanted == found) return {};
  return verification_error(path, field, fmt::format("is {}, expected {}", shown(found), shown(wanted)));
}

// ---- Which bytes of the old file an edit may write --------------------------

struct Range {
  uint64_t begin, end;
};

// Ranges sorted and merged; gaps under 8 bytes (alignment padding between
// headers, notes and the interpreter string) are closed.
std::vector<Range> merged(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::vector<Range> out;
  for (const auto& r : ranges) {
    if (r.end <= r.begin) continue;
    if (!out.empty() && r.begin <= out.back().end + 7)
      out.back().end = std::max(out.back().end, r.end);
    else
      out.push_back(r);
  }
  return out;
}

// The section a dynamic entry's address starts, if the file has section headers.
template <class E>
const elf::Shdr<E>* section_at_address(const ElfView<E>& view, uint64_t vaddr) {
  for (const auto& sh : view.shdrs())
    if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && sh.sh_addr == vaddr && sh.sh_size > 0)
      return &sh;
  return nullptr;
}

template <class E>
class WritableRegions {
  using Phdr = elf::Phdr<E>;
  using Shdr = elf::Shdr<E>;
  using Sym = elf::Sym<E>;

 public:
  WritableRegions(const ElfView<E>& view, const DynamicTable<E>& table) : view_(view), table_(table) {}

  // moved: tables whose dynamic entry the result points elsewhere; their old bytes are free.
  // versions: the symbol version table may be written (--clear-symbol-version);
  // renaming: symbols are renamed, so their tables and the relocations may change.
  Expected<std::vector<Range>> collect(const std::vector<uint64_t>& moved, bool versions, bool renaming) {
    if (versions) {
      RUNPATCH_TRY(auto tables, symbol_version_tables(view_, table_));
      if (tables) add(tables->versym_offset, tables->count * 2);
    }
    for (uint64_t tag : moved)
      if (auto vaddr = table_.find(tag))
        if (const auto* sh = section_at_address(view_, *vaddr)) add(sh->sh_offset, sh->sh_size);
    const auto& eh = view_.ehdr();
    add(0, sizeof(elf::Ehdr<E>));
    add(eh.e_phoff, view_.phdrs().size() * sizeof(Phdr));
    add_unnamed_bytes_after(uint64_t(eh.e_phoff) + view_.phdrs().size() * sizeof(Phdr));
    add(eh.e_shoff, view_.shdrs().size() * sizeof(Shdr));
    add(table_.strtab_offset, table_.strtab_size);
    for (const auto& ph : view_.phdrs())
      if (ph.p_type == elf::PT_DYNAMIC || ph.p_type == elf::PT_INTERP || ph.p_type == elf::PT_NOTE ||
          ph.p_type == elf::PT_GNU_PROPERTY)
        add(ph.p_offset, ph.p_filesz);
    detail::StringRefCollector<E> refs(view_, table_);
    RUNPATCH_CHECK(refs.walk_verneed(
        [&](uint64_t field, uint64_t) -> Status {
          add(field, 4);
          return {};
        },
        [](uint64_t) -> Status { return {}; }));
    add_symbol_tables();
    if (renaming) {
      RUNPATCH_TRY(auto tables, locate_symbol_tables(view_, table_));
      for (const auto& r : tables.ranges(sizeof(Sym))) add(r.offset, r.size);
    }
    return merged(std::move(ranges_));
  }

 private:
  void add(uint64_t offset, uint64_t size) {
    if (size > 0 && offset + size > offset) ranges_.push_back({offset, offset + size});
  }

  // The program header table may grow over bytes after it that no section or
  // segment describes (patchelf leaves such bytes where it moved sections away).
  void add_unnamed_bytes_after(uint64_t table_end) {
    if (view_.shdrs().empty()) return;
    uint64_t next = view_.size();
    for (const auto& sh : view_.shdrs())
      if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && sh.sh_size > 0 &&
          sh.sh_offset >= table_end)
        next = std::min<uint64_t>(next, sh.sh_offset);
    for (const auto& ph : view_.phdrs())
      if (ph.p_type != elf::PT_LOAD && ph.p_type != elf::PT_PHDR && ph.p_filesz > 0 && ph.p_offset >= table_end)
        next = std::min<uint64_t>(next, ph.p_offset);
    add(table_end, next - table_end);
  }

  // Static symbol tables are for tools; in .dynsym only section symbols and
  // _DYNAMIC, whose values follow a moved section.
  void add_symbol_tables() {
    auto shdrs = view_.shdrs();
    for (const auto& sh : shdrs) {
      if (sh.sh_type == elf::SHT_SYMTAB && !(sh.sh_flags & elf::SHF_ALLOC)) add(sh.sh_offset, sh.sh_size);
      if (sh.sh_type != elf::SHT_DYNSYM || sh.sh_entsize != sizeof(Sym) || sh.sh_link >= shdrs.size()) continue;
      const auto& names = shdrs[sh.sh_link];
      auto symbols = view_.template table_at<Sym>(sh.sh_offset, uint64_t(sh.sh_size) / sizeof(Sym), "symbol table");
      if (!symbols || !view_.in_file(names.sh_offset, names.sh_size)) continue;  // string_at trusts its table
      for (size_t i = 0; i < symbols->size(); ++i) {
        const Sym& sym = (*symbols)[i];
        bool movable = (sym.st_info & 0xf) == elf::STT_SECTION;
        if (!movable) {
          auto name = view_.string_at(names.sh_offset, names.sh_size, sym.st_name, "symbol");
          movable = name && *name == "_DYNAMIC";
        }
        if (movable) add(uint64_t(sh.sh_offset) + i * sizeof(Sym), sizeof(Sym));
      }
    }
  }

  const ElfView<E>& view_;
  const DynamicTable<E>& table_;
  std::vector<Range> ranges_;
};

// A PT_LOAD grown within its last page (grown_string_table.cpp): the same
// segment, longer, mapping no page it did not.
template <class Phdr>
bool grown_in_last_page(const Phdr& old_load, const Phdr& ph) {
  uint64_t old_end = uint64_t(old_load.p_offset) + uint64_t(old_load.p_filesz);
  uint64_t end = uint64_t(ph.p_offset) + uint64_t(ph.p_filesz);
  return ph.p_type == elf::PT_LOAD && old_load.p_type == elf::PT_LOAD && ph.p_flags == old_load.p_flags &&
         ph.p_offset == old_load.p_offset && ph.p_vaddr == old_load.p_vaddr && ph.p_align == old_load.p_align &&
         old_load.p_filesz == old_load.p_memsz && ph.p_filesz == ph.p_memsz && end > old_end &&
         end <= align_up(old_end, kMinPage);
}

// The bytes a result grew into where they lie: its string table past its old
// end, a PT_LOAD past its old end in its last page.
template <class E>
std::vector<Range> grown_in_place(const ElfView<E>& old_view, const DynamicTable<E>& old_table,
                                  const ElfView<E>& new_view, const DynamicTable<E>& new_table) {
  std::vector<Range> grown;
  if (new_table.strtab_offset == old_table.strtab_offset && new_table.strtab_size > old_table.strtab_size)
    grown.push_back({old_table.strtab_offset + old_table.strtab_size, new_table.strtab_offset + new_table.strtab_size});
  for (const auto& old_load : old_view.phdrs())
    for (const auto& ph : new_view.phdrs())
      if (grown_in_last_page(old_load, ph))
        grown.push_back(
            {uint64_t(old_load.p_offset) + uint64_t(old_load.p_filesz), uint64_t(ph.p_offset) + uint64_t(ph.p_filesz)});
  return grown;
}

template <class E>
Status check_write_regions(const ElfView<E>& old_view, const DynamicTable<E>& old_table,
                           const std::vector<uint64_t>& moved_tables, const EditPlan& plan, bool versions = false,
                           bool renaming = false, const std::vector<Range>& grown = {}) {
  RUNPATCH_TRY(auto regions, WritableRegions<E>(old_view, old_table).collect(moved_tables, versions, renaming));
  regions.insert(regions.end(), grown.begin(), grown.end());
  regions = merged(std::move(regions));
  // The tail of an interrupted edit, which nothing references, may be overwritten.
  if (plan.reclaimed_from) regions.push_back({*plan.reclaimed_from, old_view.size()});
  uint64_t old_size = old_view.size();
  for (const auto& w : plan.writes) {
    if (w.bytes.empty() || w.offset >= old_size) continue;
    uint64_t end = std::min<uint64_t>(w.offset + w.bytes.size(), old_size);
    bool inside = std::any_of(regions.begin(), regions.end(),
                              [&](const Range& r) { return w.offset >= r.begin && end <= r.end; });
    if (!inside)
      return verification_error(
          old_view.path(), w.description(),
          fmt::format("would write {} bytes at offset {:#x}, outside every structure an edit may change",
                      end - w.offset, w.offset));
  }
  return {};
}

// ---- The program headers of the result --------------------------------------

template <class E>
bool is_load_dropped_with_tables(const ElfView<E>& old_view, const DynamicTable<E>& table, const elf::Phdr<E>& ph) {
  // A segment an earlier edit appended (dynamic strings and section, or a
  // resolution-cache note) may be replaced; code never is, nor a segment
  // with zero-filled memory (.bss: no edit appends one).
  if (ph.p_flags & elf::PF_X || &ph == old_view.find_phdr(elf::PT_LOAD) || ph.p_memsz != ph.p_filesz) return false;
  auto holds = [&](uint64_t off) { return off >= ph.p_offset && off - ph.p_offset < uint64_t(ph.p_filesz); };
  if (holds(table.offset) || holds(table.strtab_offset)) return true;
  bool holds_note = false;
  for_each_note(old_view, [&](const NoteRef& note) {
    if (note.type == kResolutionCacheNoteType && holds(note.offset)) holds_note = true;
  });
  return holds_note;
}

template <class E>
Status check_loads(const ElfView<E>& old_view, const DynamicTable<E>& old_table, const ElfView<E>& new_view) {
  using Phdr = elf::Phdr<E>;
  const std::string& path = old_view.path();
  auto same = [](const Phdr& a, const Phdr& b) {
    return a.p_type == b.p_type && a.p_flags == b.p_flags && a.p_offset == b.p_offset && a.p_vaddr == b.p_vaddr &&
           a.p_filesz == b.p_filesz && a.p_memsz == b.p_memsz && a.p_align == b.p_align;
  };
  for (size_t i = 0; i < old_view.phdrs().size(); ++i) {
    const Phdr& old_load = old_view.phdrs()[i];
    if (old_load.p_type != elf::PT_LOAD) continue;
    bool kept = std::any_of(new_view.phdrs().begin(), new_view.phdrs().end(),
                            [&](const Phdr& ph) { return same(ph, old_load) || grown_in_last_page(old_load, ph); });
    if (!kept && !is_load_dropped_with_tables(old_view, old_table, old_load))
      return verification_error(path, fmt::format("PT_LOAD #{}", i), "is changed or gone in the planned result");
  }
  auto ascending = [](const ElfView<E>& view) {
    uint64_t end = 0;
    for (const Phdr& ph : view.phdrs()) {
      if (ph.p_type != elf::PT_LOAD) continue;
      if (uint64_t(ph.p_vaddr) < end) return false;
      end = uint64_t(ph.p_vaddr) + uint64_t(ph.p_memsz);
    }
    return true;
  };
  bool was_ascending = ascending(old_view);
  const Phdr* previous = nullptr;
  for (const Phdr& ph : new_view.phdrs()) {
    if (ph.p_type != elf::PT_LOAD) continue;
    uint64_t align = ph.p_align;
    // A segment the input already had is the input's business (patchelf's
    // empty-note fixture has an empty PT_LOAD at an incongruent offset).
    bool from_input = std::any_of(old_view.phdrs().begin(), old_view.phdrs().end(),
                                  [&](const Phdr& old_ph) { return same(old_ph, ph); });
    if (!from_input && align > 1 && (uint64_t(ph.p_offset) % align) != (uint64_t(ph.p_vaddr) % align))
      return verification_error(
          path, "a PT_LOAD", fmt::format("at {:#x} has an offset not congruent to its address", uint64_t(ph.p_vaddr)));
    if (!new_view.in_file(ph.p_offset, ph.p_filesz))
      return verification_error(path, "a PT_LOAD",
                                fmt::format("at {:#x} extends past the end of the file", uint64_t(ph.p_vaddr)));
    // ld.so requires PT_LOADs in ascending address order and maps the span from the first to the last.
    if (was_ascending && previous && uint64_t(previous->p_vaddr) + uint64_t(previous->p_memsz) > uint64_t(ph.p_vaddr))
      return verification_error(
          path, "the PT_LOADs",
          fmt::format("are not in ascending, non-overlapping address order at {:#x}", uint64_t(ph.p_vaddr)));
    previous = &ph;
  }
  return {};
}

// Segments the loader reads through memory must map their own file bytes
// (checked where the edit moved or resized them).
template <class E>
Status check_mapped_in_place(const ElfView<E>& old_view, const ElfView<E>& view, const ElfInfo& after) {
  const auto& eh = view.ehdr();
  auto unchanged = [&](const elf::Phdr<E>& ph) {
    const auto* old = old_view.find_phdr(ph.p_type);
    bool same_table = ph.p_type != elf::PT_PHDR || old_view.ehdr().e_phoff == eh.e_phoff;
    return old && same_table && old->p_offset == ph.p_offset && old->p_vaddr == ph.p_vaddr &&
           old->p_filesz == ph.p_filesz;
  };
  for (const auto& ph : view.phdrs()) {
    bool read_in_memory = ph.p_type == elf::PT_INTERP || ph.p_type == elf::PT_DYNAMIC || ph.p_type == elf::PT_PHDR;
    if (!read_in_memory || ph.p_filesz == 0 || unchanged(ph)) continue;
    auto off = view.offset_of_vaddr(ph.p_vaddr, ph.p_filesz, "segment");
    if (!off || *off != uint64_t(ph.p_offset))
      return verification_error(view.path(), fmt::format("program header of type {:#x}", uint32_t(ph.p_type)),
                                fmt::format("at {:#x} does not map its own file bytes", uint64_t(ph.p_vaddr)));
    if (ph.p_type != elf::PT_PHDR) continue;
    if (ph.p_offset != eh.e_phoff || ph.p_filesz < view.phdrs().size() * sizeof(elf::Phdr<E>))
      return verification_error(view.path(), "PT_PHDR", "does not describe the program header table");
    // Kernels before 5.18 pass AT_PHDR = first PT_LOAD's address - offset + e_phoff.
    const auto* first = view.find_phdr(elf::PT_LOAD);
    if (after.is_executable() && first &&
        uint64_t(first->p_vaddr) - uint64_t(first->p_offset) + uint64_t(eh.e_phoff) != uint64_t(ph.p_vaddr))
      return verification_error(view.path(), "PT_PHDR",
                                "is not where older kernels tell the loader the program headers are");
  }
  return {};
}

// ---- The dynamic section, symbols, versions and notes -----------------------

using TagValues = std::vector<std::pair<uint64_t, uint64_t>>;
using TagTexts = std::vector<std::pair<uint64_t, std::string>>;

// DT_FLAGS_1 and DT_DEBUG are checked on their own (check_facts, check_debug_entry).
bool is_edited_tag(uint64_t tag) {
  return tag == elf::DT_NEEDED || tag == elf::DT_SONAME || tag == elf::DT_RPATH || tag == elf::DT_RUNPATH ||
         tag == elf::DT_FLAGS_1 || tag == elf::DT_DEBUG;
}

// Entries an edit never changes: by value (non-strings) and by text (other string tags).
template <class E>
Expected<std::pair<TagValues, TagTexts>> fixed_entries(const ElfView<E>& view, const DynamicTable<E>& table) {
  std::pair<TagValues, TagTexts> out;
  for (const auto& d : table.entries()) {
    uint64_t tag = d.d_tag, value = d.d_val;
    if (tag == elf::DT_STRTAB || tag == elf::DT_STRSZ || tag == elf::DT_MIPS_RLD_MAP_REL || is_edited_tag(tag) ||
        elf::is_table_movable_in_segment(tag))
      continue;
    if (!is_string_tag(tag)) {
      out.first.emplace_back(tag, value);
      continue;
    }
    RUNPATCH_TRY(auto text, dynamic_string(view, table, value, "dynamic entry"));
    out.second.emplace_back(tag, std::string(text));
  }
  return out;
}

using NoteSet = std::set<std::tuple<std::string, uint32_t, std::vector<uint8_t>>>;

// Every note but the resolution cache (which an edit writes, moves or
// neutralizes), whether a PT_NOTE or PT_GNU_PROPERTY shows it.
template <class E>
NoteSet notes_of(const ElfView<E>& view) {
  NoteSet notes;
  auto take = [&](const NoteRef& note) {
    if (note_named(note, kResolutionCacheNoteName) && (note.type == kResolutionCacheNoteType || note.type == 0)) return;
    notes.emplace(std::string(note.name), note.type,
                  std::vector<uint8_t>(note.descriptor.begin(), note.descriptor.end()));
  };
  for_each_note(view, take, elf::PT_NOTE);
  for_each_note(view, take, elf::PT_GNU_PROPERTY);
  return notes;
}

// Tags whose table the result has at another address.
template <class E>
std::vector<uint64_t> moved_tables(const DynamicTable<E>& old_table, const DynamicTable<E>& new_table) {
  std::vector<uint64_t> moved;
  auto add_if_moved = [&](uint64_t tag) {
    auto before = old_table.find(tag), after = new_table.find(tag);
    if (before.has_value() != after.has_value() || (before && *before != *after)) moved.push_back(tag);
  };
  for (uint64_t tag : elf::kTablesFoundThroughDynamic) add_if_moved(tag);
  for (uint64_t tag : elf::kRelocationTables) add_if_moved(tag);
  return moved;
}

// A moved table holds the same bytes at its new address (vn_file fields aside:
// replace-needed renames them, and the version-need check compares their text;
// renamed symbols change the symbol, version and hash tables, which
// check_renamed_symbols reads instead).
template <class E>
Status check_moved_tables(const ElfView<E>& old_view, const DynamicTable<E>& old_table, const ElfView<E>& new_view,
                          const DynamicTable<E>& new_table, const std::vector<uint64_t>& moved, bool versions_edited,
                          bool renaming) {
  const std::string& path = old_view.path();
  for (uint64_t tag : moved) {
    if (tag == elf::DT_VERSYM && versions_edited) continue;  // check_symbol_versions compares it entry by entry
    if (renaming && (tag == elf::DT_SYMTAB || tag == elf::DT_VERSYM || tag == elf::DT_GNU_HASH || tag == elf::DT_HASH))
      continue;
    std::string field = fmt::format("the table of dynamic tag {:#x}", tag);
    auto before = old_table.find(tag), after = new_table.find(tag);
    if (!before || !after) return verification_error(path, field, "appeared or disappeared");
    const auto* sh = section_at_address(old_view, *before);
    if (!sh) return verification_error(path, field, "moved, but its size is unknown (no section header)");
    uint64_t size = sh->sh_size;
    RUNPATCH_TRY(uint64_t new_off, new_view.offset_of_vaddr(*after, size, field));
    const uint8_t* old_bytes = old_view.data_at(sh->sh_offset, size);
    const uint8_t* new_bytes = new_view.data_at(new_off, size);
    if (!old_bytes || !new_bytes) return verification_error(path, field, "cannot be read");
    std::vector<uint8_t> a(old_bytes, old_bytes + size), b(new_bytes, new_bytes + size);
    if (tag == elf::DT_VERNEED) {
      detail::StringRefCollector<E> refs(old_view, old_table);
      RUNPATCH_CHECK(refs.walk_verneed(
          [&](uint64_t field_offset, uint64_t) -> Status {
            uint64_t at = field_offset - uint64_t(sh->sh_offset);
            if (at + 4 <= size) std::fill_n(a.begin() + at, 4, 0), std::fill_n(b.begin() + at, 4, 0);
            return {};
          },
          [](uint64_t) -> Status { return {}; }));
    }
    if (a != b) return verification_error(path, field, "does not hold the same bytes at its new address");
  }
  return {};
}

// DT_DEBUG entries keep their values; one is there when asked for.
template <class E>
Status check_debug_entry(const std::string& path, const DynamicTable<E>& old_table, const DynamicTable<E>& new_table,
                         bool wanted) {
  auto debug_values = [](const DynamicTable<E>& table) {
    std::vector<uint64_t> values;
    for (const auto& d : table.entries())
      if (d.d_tag == elf::DT_DEBUG) values.push_back(d.d_val);
    return values;
  };
  auto before = debug_values(old_table), after = debug_values(new_table);
  if (wanted && before.empty()) before.push_back(0);
  if (before != after) return verification_error(path, "DT_DEBUG", wanted ? "is missing" : "changed");
  return {};
}

// Each .gnu.version entry keeps its value, except those of the symbols named
// to be cleared, which become VER_NDX_GLOBAL.
template <class E>
Status check_symbol_versions(const ElfView<E>& old_view, const DynamicTable<E>& old_table, const ElfView<E>& new_view,
                             const DynamicTable<E>& new_table, const std::vector<std::string>& cleared) {
  if (cleared.empty()) return {};  // untouched: the write regions and moved-table checks cover it
  const std::string& path = old_view.path();
  RUNPATCH_TRY(auto old_tables, symbol_version_tables(old_view, old_table));
  RUNPATCH_TRY(auto new_tables, symbol_version_tables(new_view, new_table));
  if (!old_tables || !new_tables)
    return old_tables.has_value() == new_tables.has_value()
               ? Status{}
               : verification_error(path, "the symbol version table", "appeared or disappeared");
  if (old_tables->count != new_tables->count)
    return verification_error(path, "the symbol version table", "changed its size");
  using Half = typename E::Half;
  RUNPATCH_TRY(auto symbols, old_view.template table_at<elf::Sym<E>>(old_tables->symtab_offset, old_tables->count,
                                                                     "dynamic symbol table"));
  RUNPATCH_TRY(auto before,
               old_view.template table_at<Half>(old_tables->versym_offset, old_tables->count, "symbol version table"));
  RUNPATCH_TRY(auto after,
               new_view.template table_at<Half>(new_tables->versym_offset, new_tables->count, "symbol version table"));
  for (size_t i = 0; i < before.size(); ++i) {
    uint16_t was = before[i], now = after[i];
    RUNPATCH_TRY(std::string_view name, dynamic_string(old_view, old_table, symbols[i].st_name, "dynamic symbol name"));
    bool named = std::find(cleared.begin(), cleared.end(), name) != cleared.end();
    if (now != (named ? elf::VER_NDX_GLOBAL : was))
      return verification_error(path, fmt::format("the version of dynamic symbol #{}", i),
                                fmt::format("is {}, expected {}", now, named ? elf::VER_NDX_GLOBAL : was));
  }
  return {};
}

// PT_GNU_STACK's PF_X says what was asked; otherwise it keeps its flags.
template <class E>
Status check_exec_stack(const ElfView<E>& old_view, const ElfView<E>& new_view, std::optional<bool> wanted) {
  const auto* before = old_view.find_phdr(elf::PT_GNU_STACK);
  const auto* after = new_view.find_phdr(elf::PT_GNU_STACK);
  if (!wanted) {
    if (bool(before) != bool(after) || (before && uint32_t(before->p_flags) != uint32_t(after->p_flags)))
      return verification_error(old_view.path(), "PT_GNU_STACK", "changed");
    return {};
  }
  if (!after || bool(uint32_t(after->p_flags) & elf::PF_X) != *wanted)
    return verification_error(old_view.path(), "PT_GNU_STACK", *wanted ? "is not executable" : "is still executable");
  return {};
}

template <class E>
Status check_dynamic(const ElfView<E>& old_view, const DynamicTable<E>& old_table, const ElfView<E>& new_view,
                     const DynamicTable<E>& new_table, const ExpectedFacts& expected, const SymbolRenameMap& renames) {
  const std::string& path = old_view.path();
  RUNPATCH_TRY(auto old_fixed, fixed_entries(old_view, old_table));
  RUNPATCH_TRY(auto new_fixed, fixed_entries(new_view, new_table));
  if (old_fixed.first != new_fixed.first)
    return verification_error(path, "the dynamic section", "lost or changed an entry it does not edit");
  if (old_fixed.second != new_fixed.second)
    return verification_error(path, "the dynamic section", "changed a string entry it does not edit");

  RUNPATCH_TRY(auto old_names, detail::StringRefCollector<E>(old_view, old_table).named_strings());
  RUNPATCH_TRY(auto new_names,
               detail::StringRefCollector<E>(new_view, new_table).named_strings(old_names.symbols.size()));
  if (!renames.empty())
    RUNPATCH_CHECK(check_renamed_symbols(old_view, old_table, new_view, new_table, renames));
  else if (old_names.symbols != new_names.symbols)
    return verification_error(path, "dynamic symbol names", "changed");
  if (old_names.version_need_names != new_names.version_need_names)
    return verification_error(path, "version need names", "changed");
  if (old_names.version_definitions != new_names.version_definitions)
    return verification_error(path, "version definition names", "changed");
  RUNPATCH_CHECK(expect_equal(path, "version need files (.gnu.version_r vn_file)",
                              expected.version_need_files(old_names.version_need_files), new_names.version_need_files));
  if (notes_of(old_view) != notes_of(new_view)) return verification_error(path, "the notes", "changed");
  return {};
}

Status check_facts(const std::string& path, const ElfInfo& before, const ElfInfo& after, const ExpectedFacts& expected,
                   const EditPlan& plan) {
  RUNPATCH_CHECK(expect_equal(path, "interpreter", expected.interpreter, after.interpreter));
  RUNPATCH_CHECK(expect_equal(path, "soname", expected.soname, after.soname));
  RUNPATCH_CHECK(expect_equal(path, "DT_NEEDED", expected.needed, after.needed));
  RUNPATCH_CHECK(expect_equal(path, "DT_RUNPATH", expected.runpath, after.runpath));
  RUNPATCH_CHECK(expect_equal(path, "DT_RPATH", expected.rpath, after.rpath));
  ElfIdentity identity = before.identity;
  identity.osabi = expected.osabi;
  if (after.identity != identity || after.type != before.type)
    return verification_error(path, "the ELF header", "changed its identity");
  if (after.flags != before.flags || after.flags_1 != expected.flags_1)
    return verification_error(path, "DT_FLAGS/DT_FLAGS_1", "changed");
  if (after.dlopen != before.dlopen) return verification_error(path, "the .note.dlopen entries", "changed");
  if (after.resolution_cache && !after.resolution_cache->defect.empty())
    return verification_error(path, "the resolution-cache note", "is unreadable: " + after.resolution_cache->defect);
  bool wanted = plan.carries_resolution_cache.value_or(before.resolution_cache.has_value());
  if (wanted != after.resolution_cache.has_value())
    return verification_error(path, "the resolution-cache note", wanted ? "is missing" : "is still present");
  return {};
}

template <class E>
Status verify_typed(const ElfView<E>& old_view, const FileReader& result, const ElfInfo& before,
                    const ExpectedFacts& expected, const EditRequest& request, const EditPlan& plan) {
  const std::string& path = old_view.path();
  RUNPATCH_TRY(auto old_table, read_dynamic(old_view, plan.dynamic_source));
  RUNPATCH_TRY(ElfInfo after, read_elf_info(result, plan.dynamic_source));
  RUNPATCH_CHECK(check_facts(path, before, after, expected, plan));
  RUNPATCH_TRY(auto new_view, ElfView<E>::parse(result));
  RUNPATCH_TRY(auto new_table, read_dynamic(new_view, plan.dynamic_source));
  if (!old_table || !old_table->has_strtab) {
    // An interpreter-only edit of a file the loader sees no dynamic section in.
    if (new_table.has_value() != old_table.has_value())
      return verification_error(path, "the dynamic section", "changed");
    DynamicTable<E> none;
    RUNPATCH_CHECK(check_write_regions(old_view, old_table ? *old_table : none, {}, plan));
    RUNPATCH_CHECK(check_loads(old_view, none, new_view));
    RUNPATCH_CHECK(check_exec_stack(old_view, new_view, expected.exec_stack));
    return check_mapped_in_place(old_view, new_view, after);
  }
  if (!new_table) return verification_error(path, "the dynamic section", "is gone");
  auto moved = moved_tables(*old_table, *new_table);
  bool versions = !expected.cleared_versions.empty();
  bool renaming = !request.rename_symbols.empty();
  RUNPATCH_CHECK(check_write_regions(old_view, *old_table, moved, plan, versions, renaming,
                                     grown_in_place(old_view, *old_table, new_view, *new_table)));
  RUNPATCH_CHECK(check_moved_tables(old_view, *old_table, new_view, *new_table, moved, versions, renaming));
  RUNPATCH_CHECK(check_loads(old_view, *old_table, new_view));
  RUNPATCH_CHECK(check_mapped_in_place(old_view, new_view, after));
  RUNPATCH_CHECK(check_exec_stack(old_view, new_view, expected.exec_stack));
  RUNPATCH_CHECK(check_debug_entry(path, *old_table, *new_table, expected.debug_entry));
  RUNPATCH_CHECK(check_symbol_versions(old_view, *old_table, new_view, *new_table, expected.cleared_versions));
  return check_dynamic(old_view, *old_table, new_view, *new_table, expected, request.rename_symbols);
}

}  // namespace

std::vector<std::string> ExpectedFacts::version_need_files(std::vector<std::string> files) const {
  for (const auto& [from, to] : replaced)
    for (auto& file : files)
      if (file == from) file = to;
  return files;
}

Expected<ExpectedFacts> expected_facts(const ElfInfo& before, const EditRequest& request) {
  ExpectedFacts facts;
  facts.interpreter = request.interpreter ? request.interpreter : before.interpreter;
  facts.soname = request.soname ? request.soname : before.soname;
  facts.replaced = request.replace_needed;
  facts.needed = facts.version_need_files(before.needed);
  std::erase_if(facts.needed, [&](const std::string& name) {
    return std::find(request.remove_needed.begin(), request.remove_needed.end(), name) != request.remove_needed.end();
  });
  std::vector<std::string> added;
  for (const auto& name : request.add_needed)
    if ((request.add_needed_even_if_present ||
         std::find(facts.needed.begin(), facts.needed.end(), name) == facts.needed.end()) &&
        std::find(added.begin(), added.end(), name) == added.end())
      added.push_back(name);
  facts.needed.insert(facts.needed.begin(), added.begin(), added.end());
  facts.runpath = before.runpath;
  facts.rpath = before.rpath;
  const HeaderEditRequest& headers = request.headers;
  facts.osabi = headers.osabi.value_or(before.identity.osabi);
  facts.flags_1 = before.flags_1 | (headers.no_default_lib ? elf::DF_1_NODEFLIB : 0);
  facts.debug_entry = headers.add_debug_tag;
  facts.exec_stack = headers.exec_stack;
  facts.cleared_versions = headers.clear_symbol_version;
  if (request.runpath) {
    RUNPATCH_TRY(RunpathChange change, request.runpath(before));
    if (change.kind == RunpathChange::Kind::Remove) facts.runpath = facts.rpath = std::nullopt;
    if (change.kind == RunpathChange::Kind::Set) {
      facts.runpath = facts.rpath = std::nullopt;
      (request.force_rpath ? facts.rpath : facts.runpath) = change.value;
    }
  }
  return facts;
}

Status verify_edit_plan(std::span<const uint8_t> original, const std::string& path, const ElfInfo& before,
                        const EditRequest& request, const EditPlan& plan) {
  if (plan.strategy == EditStrategy::Unchanged && plan.writes.empty()) return {};
  RUNPATCH_TRY(ExpectedFacts expected, expected_facts(before, request));
  PlannedImage image(original, plan);
  FileReader result = image.reader(path);
  return visit_elf(original, path, [&](const auto& old_view) {
    return verify_typed(old_view, result, before, expected, request, plan);
  });
}

}  // namespace runpatch
