// The fixed-size fields of runpatch/editing/header_edit.hpp (OS ABI, PT_GNU_STACK,
// symbol versions) in an edit plan; DF_1_NODEFLIB and DT_DEBUG are dynamic
// entries, which the planner lays out like any other (edit_planner.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "editing/planned_write.hpp"
#include "reading/dynamic_table.hpp"
#include "reading/elf_view.hpp"
#include "runpatch/reading/expected.hpp"
#include "runpatch/editing/header_edit.hpp"

namespace runpatch {

// Adds the field writes request asks for to plan, at the places where the
// planned result keeps those fields (inside a write that already covers
// them, such as a moved program header table, or as Commit writes).
template <class E>
Status fold_header_fields(const MappedElfView<E>& view, const HeaderEditRequest& request, EditPlan& plan);

// The same facts read_header_facts gives, for an image in memory.
Expected<HeaderFacts> header_facts(std::span<const uint8_t> bytes, const std::string& path);

struct SymbolVersionTables {
  uint64_t symtab_offset = 0, versym_offset = 0, count = 0;
};

// .dynsym and .gnu.version from the section headers, or else from DT_SYMTAB,
// DT_VERSYM and DT_HASH's chain count; none when the file has no version table.
template <class E>
Expected<std::optional<SymbolVersionTables>> symbol_version_tables(const ElfView<E>& view,
                                                                   const DynamicTable<E>& dynamic) {
  using Sym = elf::Sym<E>;
  SymbolVersionTables t;
  std::optional<uint64_t> versym_count;
  for (const auto& sh : view.shdrs()) {
    if (sh.sh_type == elf::SHT_DYNSYM) t.symtab_offset = sh.sh_offset, t.count = uint64_t(sh.sh_size) / sizeof(Sym);
    if (sh.sh_type == elf::SHT_GNU_VERSYM) t.versym_offset = sh.sh_offset, versym_count = uint64_t(sh.sh_size) / 2;
  }
  if (!view.shdrs().empty()) {
    if (!versym_count) return std::optional<SymbolVersionTables>();
    if (*versym_count != t.count) return view.malformed("versym size mismatch");
    return std::optional<SymbolVersionTables>(t);
  }
  auto versym = dynamic.find(elf::DT_VERSYM);
  auto symtab = dynamic.find(elf::DT_SYMTAB);
  auto hash = dynamic.find(elf::DT_HASH);
  if (!versym) return std::optional<SymbolVersionTables>();
  if (!symtab || !hash)
    return view.error(ErrorCode::NothingToEdit,
                      "has no section headers and no DT_HASH: the dynamic symbols cannot be counted");
  RUNPATCH_TRY(uint64_t hash_offset, view.offset_of_vaddr(*hash, 8, "DT_HASH table"));
  RUNPATCH_TRY(auto words, view.template table_at<typename E::Word>(hash_offset, 2, "DT_HASH table"));
  t.count = words[1];
  auto symtab_bytes = checked_mul(t.count, sizeof(Sym));
  if (!symtab_bytes) return view.malformed("DT_HASH symbol count overflows");
  RUNPATCH_TRY(t.symtab_offset, view.offset_of_vaddr(*symtab, *symtab_bytes, "dynamic symbol table"));
  RUNPATCH_TRY(t.versym_offset, view.offset_of_vaddr(*versym, t.count * 2, "symbol version table"));
  return std::optional<SymbolVersionTables>(t);
}

}  // namespace runpatch
