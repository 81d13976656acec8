// Everything that points into the dynamic string table: string-valued dynamic
// tags, dynamic symbol names and symbol-version names. Bytes no reference
// covers are free to reuse; linkers tail-merge strings, so a reference covers
// [offset, end of its string], which may overlap another reference.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "editing/symbol_rename.hpp"
#include "reading/dynamic_table.hpp"

namespace runpatch {

struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;  // exclusive
};

inline bool is_string_tag(uint64_t tag) {
  switch (tag) {
    case elf::DT_NEEDED:
    case elf::DT_SONAME:
    case elf::DT_RPATH:
    case elf::DT_RUNPATH:
    case elf::DT_AUXILIARY:
    case elf::DT_USED:
    case elf::DT_FILTER:
    case elf::DT_CONFIG:
    case elf::DT_DEPAUDIT:
    case elf::DT_AUDIT: return true;
    default: return false;
  }
}

namespace detail {

using elf::DT_HASH, elf::DT_SYMTAB, elf::DT_SYMENT, elf::DT_GNU_HASH, elf::DT_VERDEF, elf::DT_VERDEFNUM,
    elf::DT_VERNEED, elf::DT_VERNEEDNUM, elf::SHT_DYNSYM;
// Guards against looping forever on corrupt version chains.
inline constexpr uint64_t kMaxVersionEntries = 1 << 16;

template <class E>
class StringRefCollector {
 public:
  StringRefCollector(const ElfView<E>& view, const DynamicTable<E>& table) : view_(view), table_(table) {}

  // Ranges covered by symbols and versions (not dynamic tags: the caller decides which of those survive).
  Expected<std::vector<ByteRange>> symbol_and_version_refs() {
    RUNPATCH_CHECK(add_symbols());
    RUNPATCH_CHECK(add_verneed());
    RUNPATCH_CHECK(add_verdef());
    return std::move(refs_);
  }

  // Every Elf_Verneed's vn_file: where the field lies in the file and the library it names.
  struct VersionNeedFile {
    uint64_t field_offset;
    std::string library;
  };
  Expected<std::vector<VersionNeedFile>> version_need_files() {
    std::vector<VersionNeedFile> files;
    RUNPATCH_CHECK(walk_verneed(
        [&](uint64_t field, uint64_t index) -> Status {
          RUNPATCH_TRY(auto text, dynamic_string(view_, table_, index, "version need file"));
          files.push_back({field, std::string(text)});
          return {};
        },
        [](uint64_t) -> Status { return {}; }));
    return files;
  }

  // What the loader reads through the string table besides dynamic entries, as text in table order.
  struct NamedStrings {
    // Views into the file's string table (valid while its view is): a big
    // library has hundreds of thousands of long C++ names, read once each.
    std::vector<std::string_view> symbols;
    std::vector<std::string> version_need_files, version_need_names, version_definitions;
  };
  // symbols: how many dynamic symbols there are, when the caller knows better than
  // this file's tables (a stripped file's count is bounded by the table after
  // DT_SYMTAB, which an edit may move).
  Expected<NamedStrings> named_strings(std::optional<uint64_t> symbols = std::nullopt) {
    known_symbol_count_ = symbols;
    NamedStrings out;
    auto text_into = [&](auto& list, const char* what) {
      return [&, what](uint64_t index) -> Status {
        RUNPATCH_TRY(auto text, dynamic_string(view_, table_, index, what));
        list.emplace_back(text);
        return {};
      };
    };
    auto symbol_name = text_into(out.symbols, "symbol name");
    RUNPATCH_CHECK(walk_symbols([&](uint64_t, uint64_t name) { return symbol_name(name); }));
    auto need_file = text_into(out.version_need_files, "version need file");
    RUNPATCH_CHECK(walk_verneed([&](uint64_t, uint64_t file) { return need_file(file); },
                                text_into(out.version_need_names, "version need name")));
    RUNPATCH_CHECK(walk_verdef(text_into(out.version_definitions, "version definition name")));
    return out;
  }

  // The range a string index covers, including its NUL.
  Expected<ByteRange> range_of(uint64_t index, const char* what) const {
    RUNPATCH_TRY(auto text, dynamic_string(view_, table_, index, what));
    return ByteRange{index, index + text.size() + 1};
  }

 private:
  Status add(uint64_t index, const char* what) {
    RUNPATCH_TRY(ByteRange r, range_of(index, what));
    refs_.push_back(r);
    return {};
  }

  // Symbols are read as Sym structs at this stride: anything else is corrupt.
  Expected<uint64_t> symbol_entry_size() const {
    uint64_t entsize = table_.find(DT_SYMENT).value_or(sizeof(elf::Sym<E>));
    if (entsize != sizeof(elf::Sym<E>))
      return view_.malformed("DT_SYMENT is " + std::to_string(entsize) + ", not the symbol size " +
                             std::to_string(sizeof(elf::Sym<E>)));
    return entsize;
  }

  Expected<uint64_t> symbol_count(uint64_t symtab_vaddr) {
    if (known_symbol_count_) return *known_symbol_count_;
    return count_dynamic_symbols(view_, table_, symtab_vaddr);
  }

  // Calls on_name(symbol index, its name's string index) for every dynamic symbol.
  template <class OnName>
  Status walk_symbols(OnName on_name) {
    auto symtab = table_.find(DT_SYMTAB);
    if (!symtab) return {};
    RUNPATCH_TRY(uint64_t entsize, symbol_entry_size());
    RUNPATCH_TRY(uint64_t count, symbol_count(*symtab));
    RUNPATCH_TRY(uint64_t off, view_.offset_of_vaddr(*symtab, count * entsize, "dynamic symbol table"));
    for (uint64_t i = 0; i < count; ++i) {
      // st_name is the first word of a symbol in both classes.
      RUNPATCH_TRY(auto name, view_.template table_at<typename E::Word>(off + i * entsize, 1, "dynamic symbol"));
      RUNPATCH_CHECK(on_name(i, uint64_t(name[0])));
    }
    return {};
  }

  Status add_symbols() {
    return walk_symbols([&](uint64_t, uint64_t name) -> Status {
      if (name != 0) return add(name, "symbol name");
      return {};
    });
  }

 public:
  // Calls on_file(offset of a Verneed's vn_file field, its string index) and on_name(string index).
  template <class OnFile, class OnName>
  Status walk_verneed(OnFile on_file, OnName on_name) {
    using Verneed = elf::Verneed<E>;
    auto vaddr = table_.find(DT_VERNEED);
    if (!vaddr) return {};
    uint64_t count = table_.find(DT_VERNEEDNUM).value_or(0);
    RUNPATCH_TRY(uint64_t off, view_.offset_of_vaddr(*vaddr, sizeof(Verneed), "version needs"));
    for (uint64_t n = 0; n < count && n < kMaxVersionEntries; ++n) {
      RUNPATCH_TRY(const Verneed* vn, entry_at<Verneed>(off));
      RUNPATCH_CHECK(on_file(off + offsetof(Verneed, vn_file), uint64_t(vn->vn_file)));
      uint64_t aux = off + vn->vn_aux;
      for (uint16_t a = 0, cnt = vn->vn_cnt; a < cnt; ++a) {
        RUNPATCH_TRY(const elf::Vernaux<E>* vna, entry_at<elf::Vernaux<E>>(aux));
        RUNPATCH_CHECK(on_name(uint64_t(vna->vna_name)));
        if (vna->vna_next == 0) break;
        aux += vna->vna_next;
      }
      if (vn->vn_next == 0) break;
      off += vn->vn_next;
    }
    return {};
  }

 private:
  Status add_verneed() {
    return walk_verneed([&](uint64_t, uint64_t file) { return add(file, "version need file"); },
                        [&](uint64_t name) { return add(name, "version need name"); });
  }

  template <class OnName>
  Status walk_verdef(OnName on_name) {
    using Verdef = elf::Verdef<E>;
    auto vaddr = table_.find(DT_VERDEF);
    if (!vaddr) return {};
    uint64_t count = table_.find(DT_VERDEFNUM).value_or(0);
    RUNPATCH_TRY(uint64_t off, view_.offset_of_vaddr(*vaddr, sizeof(Verdef), "version definitions"));
    for (uint64_t n = 0; n < count && n < kMaxVersionEntries; ++n) {
      RUNPATCH_TRY(const Verdef* vd, entry_at<Verdef>(off));
      uint64_t aux = off + vd->vd_aux;
      for (uint16_t a = 0, cnt = vd->vd_cnt; a < cnt; ++a) {
        RUNPATCH_TRY(const elf::Verdaux<E>* vda, entry_at<elf::Verdaux<E>>(aux));
        RUNPATCH_CHECK(on_name(uint64_t(vda->vda_name)));
        if (vda->vda_next == 0) break;
        aux += vda->vda_next;
      }
      if (vd->vd_next == 0) break;
      off += vd->vd_next;
    }
    return {};
  }

  Status add_verdef() {
    return walk_verdef([&](uint64_t name) { return add(name, "version definition name"); });
  }

  // A version entry (elf::Verdef ...: byte-aligned fields) read through the view, as
  // either backend holds it; checked as the 4-byte words it spans, so that an
  // error counts words.
  template <class T>
  Expected<const T*> entry_at(uint64_t off) {
    static_assert(sizeof(T) % 4 == 0 && alignof(T) == 1);
    RUNPATCH_TRY(auto words, view_.template table_at<typename E::Word>(off, sizeof(T) / 4, "version entry"));
    return reinterpret_cast<const T*>(words.data());
  }

  const ElfView<E>& view_;
  const DynamicTable<E>& table_;
  std::vector<ByteRange> refs_;
  std::optional<uint64_t> known_symbol_count_;
};

}  // namespace detail

}  // namespace runpatch
