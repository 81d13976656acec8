// The dynamic section found through PT_DYNAMIC (or, when asked, through its
// section header), and its string table found through DT_STRTAB (an address,
// translated to a file offset via PT_LOAD).
#pragma once

#include <fmt/format.h>

#include <optional>
#include <span>
#include <string_view>

#include "reading/elf_view.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

template <class E>
struct DynamicTable {
  uint64_t offset = 0;                 // file offset of the first entry
  uint64_t vaddr = 0;                  // its address
  std::span<const elf::Dyn<E>> slots;  // every entry PT_DYNAMIC holds
  size_t used = 0;                     // entries before the first DT_NULL
  uint64_t strtab_vaddr = 0;
  uint64_t strtab_offset = 0;
  uint64_t strtab_size = 0;
  bool has_strtab = false;

  std::span<const elf::Dyn<E>> entries() const { return slots.first(used); }

  // File offset of the first entry with this tag.
  std::optional<uint64_t> offset_of_entry(uint64_t tag) const {
    auto all = entries();
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].d_tag == tag) return offset + i * sizeof(elf::Dyn<E>);
    return std::nullopt;
  }

  std::optional<uint64_t> find(uint64_t tag) const {
    for (const auto& d : entries())
      if (d.d_tag == tag) return uint64_t(d.d_val);
    return std::nullopt;
  }
};

// The `.dynamic` section of a file without PT_DYNAMIC, or null: its bytes
// inside the file and mapped by a PT_LOAD at its address (patchelf's reading).
template <class E>
Expected<const elf::Shdr<E>*> dynamic_section(const ElfView<E>& view) {
  for (const auto& sh : view.shdrs()) {
    if (sh.sh_type != elf::SHT_DYNAMIC || sh.sh_size == 0) continue;
    RUNPATCH_TRY(uint64_t offset, view.offset_of_vaddr(sh.sh_addr, sh.sh_size, "section .dynamic"));
    if (offset != sh.sh_offset)
      return view.malformed(fmt::format("section .dynamic: address {:#x} maps to offset {:#x}, not its offset {:#x}",
                                        uint64_t(sh.sh_addr), offset, uint64_t(sh.sh_offset)));
    return &sh;
  }
  return nullptr;
}

// The dynamic table, or nullopt for a file without PT_DYNAMIC (statically linked).
template <class E>
Expected<std::optional<DynamicTable<E>>> read_dynamic(const ElfView<E>& view,
                                                      DynamicSource source = DynamicSource::Segment) {
  using Dyn = elf::Dyn<E>;
  DynamicTable<E> table;
  uint64_t size = 0;
  if (const auto* ph = view.find_phdr(elf::PT_DYNAMIC)) {
    // p_filesz 0: the contents were stripped (separate debug files keep only the header).
    if (ph->p_filesz == 0) return std::optional<DynamicTable<E>>();
    table.offset = ph->p_offset;
    table.vaddr = ph->p_vaddr;
    size = ph->p_filesz;
  } else {
    if (source != DynamicSource::SegmentOrSection) return std::optional<DynamicTable<E>>();
    RUNPATCH_TRY(const auto* section, dynamic_section(view));
    if (!section) return std::optional<DynamicTable<E>>();
    table.offset = section->sh_offset;
    table.vaddr = section->sh_addr;
    size = section->sh_size;
  }
  RUNPATCH_TRY(table.slots, view.template table_at<Dyn>(table.offset, size / sizeof(Dyn), "dynamic section"));
  table.used = table.slots.size();
  for (size_t i = 0; i < table.slots.size(); ++i)
    if (table.slots[i].d_tag == elf::DT_NULL) {
      table.used = i;
      break;
    }
  auto strtab = table.find(elf::DT_STRTAB);
  auto strsz = table.find(elf::DT_STRSZ);
  if (strtab.has_value() != strsz.has_value())
    return view.malformed(
        strtab ? "dynamic section has DT_STRTAB but no DT_STRSZ" : "dynamic section has DT_STRSZ but no DT_STRTAB",
        table.offset);
  if (strtab) {
    RUNPATCH_TRY(table.strtab_offset,
                 view.offset_of_vaddr(*strtab, *strsz, "dynamic string table", table.offset_of_entry(elf::DT_STRTAB)));
    table.strtab_vaddr = *strtab;
    table.strtab_size = *strsz;
    table.has_strtab = true;
  }
  return std::optional<DynamicTable<E>>(table);
}

// The string a string-valued dynamic tag names.
template <class E>
Expected<std::string_view> dynamic_string(const ElfView<E>& view, const DynamicTable<E>& table, uint64_t index,
                                          std::string_view what) {
  if (!table.has_strtab)
    return view.malformed(fmt::format("{} names a string but the file has no DT_STRTAB", what), table.offset);
  return view.string_at(table.strtab_offset, table.strtab_size, index, what);
}

}  // namespace runpatch
