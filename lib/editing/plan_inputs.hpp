// What an edit of one ELF image wants, resolved once before any layout is
// chosen (resolve_plan_inputs): the dynamic section as it is and as it must
// become, the interpreter, the resolution-cache note, the version needs and
// symbols to rename. Every planning step takes it const and returns values
// (edit_planner.cpp in place; appended_*.cpp a new segment); the helpers
// below build the writes both layouts share.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "editing/byte_buffer.hpp"
#include "editing/dynamic_model.hpp"
#include "editing/plan_options.hpp"
#include "editing/planned_write.hpp"
#include "editing/resolution_cache_edit.hpp"
#include "editing/string_refs.hpp"
#include "editing/string_space.hpp"
#include "editing/symbol_rename.hpp"

namespace runpatch {

inline constexpr uint64_t kMinPage = 0x1000;
inline constexpr uint64_t kSpareDynamicSlots = 2;
// The section that keeps the bytes an executable's moved dynamic strings left
// in its first segment (appended_writes.cpp says why).
inline constexpr std::string_view kLeftStringsSection = ".dynstr.old";
inline constexpr uint64_t kStringSlack = 64;
inline constexpr uint64_t kMaxLoadAlign = uint64_t(64) << 20;

// Each new string's offset in the dynamic string table (dynamic entries,
// version-need file names, renamed symbols): where a StringPlacer put it.
using StringOffsets = std::map<std::string, uint64_t>;

// A Verneed whose vn_file must name another library (a replaced DT_NEEDED).
struct VersionNeedRename {
  uint64_t field_offset;  // of vn_file
  std::string text;       // the library it must name
};

template <class E>
struct InterpreterChange {
  const elf::Phdr<E>* phdr = nullptr;  // PT_INTERP, when the interpreter changes
  bool changed = false;
  bool needs_room = false;  // the new one is longer than the segment
  std::string text;
};

template <class E>
struct PlanInputs {
  using Phdr = elf::Phdr<E>;
  using Dyn = elf::Dyn<E>;

  const MappedElfView<E>& view;
  const ElfInfo& info;
  const PlanOptions& options;
  DynamicTable<E> table;
  DynamicModel original;  // the dynamic section as it is
  DynamicModel model;     // as the request makes it
  NoteChange note;
  std::vector<VersionNeedRename> version_need_renames;
  SymbolRenamer<E> renamer;
  InterpreterChange<E> interp;
  // --set/clear-execstack on a file with neither PT_GNU_STACK nor a PT_NULL
  // entry: the new program header table gets one more (PT_NULL) entry, which
  // fold_header_fields turns into PT_GNU_STACK.
  bool stack_entry_wanted = false;
  std::vector<EditWarning> warnings;  // what the request costs, whatever the layout

  // Whether the dynamic section, its strings or the headers change (the note aside).
  bool tables_change() const {
    return model.any_changed(original) || interp.changed || !version_need_renames.empty() || !renamer.empty() ||
           stack_entry_wanted;
  }

  uint64_t page_size() const {
    if (options.page_size) return *options.page_size;
    uint64_t page = kMinPage;
    for (const auto& ph : view.phdrs())
      if (ph.p_type == elf::PT_LOAD) page = std::max<uint64_t>(page, ph.p_align);
    return page;
  }

  uint64_t phdr_offset(size_t index) const { return uint64_t(view.ehdr().e_phoff) + index * sizeof(Phdr); }

  std::vector<uint8_t> copy_range(uint64_t off, uint64_t size) const {
    auto b = view.bytes().subspan(off, size);
    return {b.begin(), b.end()};
  }

  // The dynamic strings that symbols and version entries reference; nullopt
  // when the symbols cannot be enumerated (then no byte may count as free).
  std::optional<std::vector<ByteRange>> symbol_string_refs() const {
    detail::StringRefCollector<E> refs(view, table);
    auto ranges = refs.symbol_and_version_refs();
    if (!ranges) return std::nullopt;
    return std::move(*ranges);
  }

  // Adds the strings of the dynamic entries the request leaves as they are.
  void add_unchanged_entry_refs(std::vector<ByteRange>& into) const {
    for (const auto& e : model.entries)
      if (e.text && !e.changed) into.push_back({e.value, e.value + e.text->size() + 1});
  }

  // What the edited file still references in the string table: symbols,
  // versions and the entries the request keeps; nullopt when the symbols
  // cannot be enumerated.
  std::optional<std::vector<ByteRange>> surviving_string_refs() const {
    auto live = symbol_string_refs();
    if (live) add_unchanged_entry_refs(*live);
    return live;
  }

  // Whether the strings, entries or names the loader reads through the string table change.
  bool strings_change() const {
    return model.any_changed(original) || !version_need_renames.empty() || !renamer.empty();
  }

  // Whether a section other than the table's own (of `own_type`, at `offset`) has bytes in [offset, offset + size).
  bool shares_bytes_with_other_sections(uint64_t offset, uint64_t size, uint32_t own_type) const {
    for (const auto& sh : view.shdrs()) {
      if (sh.sh_type == elf::SHT_NOBITS || sh.sh_size == 0) continue;
      if (sh.sh_type == own_type && sh.sh_offset == offset) continue;  // the table itself
      if (sh.sh_offset < offset + size && offset < uint64_t(sh.sh_offset) + sh.sh_size) return true;
    }
    return false;
  }

  // Zeroes, in `strings` (the table's first strings.size() bytes, or a copy
  // of them, with the edit's new strings in place), every byte that `live`
  // (what the edited file references: symbols, versions, entries) does not
  // cover: the replaced strings, and dead strings an earlier tool left
  // (patchelf keeps what it replaces, and auditwheel's edits leave runpaths
  // no entry names), so the bytes depend on the final content only, however
  // many edits and tools led there, and a Nix output keeps no reference to a
  // store path it no longer names. Only the replaced strings where another
  // section shares the table's bytes (they may be its strings).
  void zero_unreferenced_strings(std::vector<uint8_t>& strings, std::vector<ByteRange> live) const {
    StringSpace unreferenced(strings.size(), std::move(live));
    if (shares_bytes_with_other_sections(table.strtab_offset, table.strtab_size, elf::SHT_STRTAB))
      zero_old_entry_strings(unreferenced, strings, 0);
    else
      unreferenced.zero_free_bytes(strings, {0, strings.size()});
  }

  // Zeroes, in `strings` (the table's first strings.size() bytes, or a copy
  // of them), the old strings of the entries the request replaces where
  // nothing else still references them (symbols, versions, kept entries): no
  // dead copy of an old runpath stays, so the bytes depend on the final
  // content only, whichever edits led there, and a Nix output keeps no
  // reference to a store path it no longer names.
  // `runpath_mark`: the byte a replaced runpath's text is overwritten with
  // instead (patchelf's 'X'; its NUL stays).
  void zero_replaced_strings(std::vector<uint8_t>& strings, uint8_t runpath_mark = 0) const {
    auto live = surviving_string_refs();
    if (!live) return;  // cannot tell what is referenced: zero nothing
    zero_old_entry_strings(StringSpace(strings.size(), std::move(*live)), strings, runpath_mark);
  }

 private:
  // The bytes of the original entries' strings that `unreferenced` holds, zeroed (or marked).
  void zero_old_entry_strings(const StringSpace& unreferenced, std::vector<uint8_t>& strings,
                              uint8_t runpath_mark) const {
    for (const auto& e : original.entries) {
      if (!e.text) continue;
      bool marked = runpath_mark != 0 && DynamicModel::is_runpath_entry(e);
      unreferenced.zero_free_bytes(strings, {e.value, e.value + e.text->size() + (marked ? 0 : 1)},
                                   marked ? runpath_mark : 0);
    }
  }
};

// Works out what the request wants of the file whose dynamic section is
// `table`, refusing unsound segments. No table: the file is edited without
// its dynamic section (the request touches only the interpreter and header fields).
template <class E>
Expected<PlanInputs<E>> resolve_plan_inputs(const MappedElfView<E>& view, const ElfInfo& info,
                                            const PlanOptions& options, const EditRequest& request,
                                            const DynamicTable<E>* table);

// [off, off + size) inside the segment's bytes in the file.
template <class Phdr>
bool covers(const Phdr& segment, uint64_t off, uint64_t size) {
  return off >= segment.p_offset && off + size <= uint64_t(segment.p_offset) + uint64_t(segment.p_filesz);
}

template <class E>
std::vector<uint8_t> phdr_bytes(const elf::Phdr<E>& ph) {
  return bytes_of(std::span<const elf::Phdr<E>>(&ph, 1));
}

template <class E>
std::vector<uint8_t> serialize_dynamic(const DynamicModel& model, size_t slots) {
  std::vector<uint8_t> bytes(slots * sizeof(elf::Dyn<E>), 0);
  for (size_t i = 0; i < model.entries.size(); ++i) {
    auto* d = struct_at<elf::Dyn<E>>(bytes, i * sizeof(elf::Dyn<E>));
    d->d_tag = model.entries[i].tag;
    d->d_val = model.entries[i].value;
  }
  return bytes;
}

// Byte ranges [offset, offset + size) of the file whose bytes the plan
// carries into a new segment: writes inside them go into the copy instead.
using CarriedSpans = std::vector<std::pair<uint64_t, uint64_t>>;

inline bool inside_any(const CarriedSpans& spans, uint64_t offset, uint64_t size) {
  return std::any_of(spans.begin(), spans.end(),
                     [&](const auto& r) { return offset >= r.first && offset + size <= r.first + r.second; });
}

template <class E>
PlannedWrite interpreter_write(const PlanInputs<E>& in, WritePhase phase) {
  std::vector<uint8_t> bytes(uint64_t(in.interp.phdr->p_filesz), 0);
  std::memcpy(bytes.data(), in.interp.text.data(), in.interp.text.size());
  return {phase, uint64_t(in.interp.phdr->p_offset), std::move(bytes), WriteKind::Interpreter};
}

// Renamed symbols and the tables that index them (in.renamer.writes), at
// their offsets in the file.
inline void add_symbol_rename_writes(std::vector<PlannedWrite> rename_writes, EditPlan& plan,
                                     const CarriedSpans& carried = {}) {
  for (auto& w : rename_writes)
    if (!inside_any(carried, w.offset, w.bytes.size())) plan.writes.push_back(std::move(w));
}

// Symbols whose value an edit moves (defined in a moved section, _DYNAMIC)
// rewritten in .symtab and .dynsym (a renamed symbol at its new position),
// so that debuggers and eu-elflint agree with the headers; only tools read
// them. `new_value(sym, names)`: the symbol's new value, or nullopt to keep
// it; `names` is its table's string table, null when that is not in the file.
template <class E, class NewValue>
void add_symbol_value_writes(const PlanInputs<E>& in, NewValue new_value, EditPlan& plan) {
  using Sym = elf::Sym<E>;
  auto shdrs = in.view.shdrs();
  for (const auto& sh : shdrs) {
    if ((sh.sh_type != elf::SHT_SYMTAB && sh.sh_type != elf::SHT_DYNSYM) || sh.sh_entsize != sizeof(Sym)) continue;
    auto symbols = in.view.template table_at<Sym>(sh.sh_offset, uint64_t(sh.sh_size) / sizeof(Sym), "symbol table");
    if (!symbols) continue;
    const elf::Shdr<E>* names = sh.sh_link < shdrs.size() ? &shdrs[sh.sh_link] : nullptr;
    if (names && !in.view.in_file(names->sh_offset, names->sh_size)) names = nullptr;
    for (size_t i = 0; i < symbols->size(); ++i) {
      auto value = new_value((*symbols)[i], names);
      if (!value) continue;
      Sym updated = (*symbols)[i];
      updated.st_value = *value;
      uint64_t position = sh.sh_type == elf::SHT_DYNSYM ? in.renamer.new_position(i) : i;  // a rename may move it
      plan.writes.push_back({WritePhase::Cleanup, uint64_t(sh.sh_offset) + position * sizeof(Sym),
                             bytes_of(std::span<const Sym>(&updated, 1)), WriteKind::SymbolValue});
    }
  }
}

// The vn_file fields switch after the dynamic section does: until then the old name is right.
template <class E>
void add_version_need_writes(const PlanInputs<E>& in, const StringOffsets& offsets, EditPlan& plan,
                             const CarriedSpans& carried = {}) {
  for (const auto& rename : in.version_need_renames) {
    typename E::Word value;
    if (inside_any(carried, rename.field_offset, sizeof value)) continue;
    value = static_cast<uint32_t>(offsets.at(rename.text));
    plan.writes.push_back({WritePhase::Commit, rename.field_offset,
                           bytes_of(std::span<const typename E::Word>(&value, 1)), WriteKind::VersionNeedFile});
  }
}

}  // namespace runpatch
