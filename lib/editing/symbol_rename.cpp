#include "editing/symbol_rename.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>
#include <unordered_map>

#include "editing/byte_buffer.hpp"

namespace runpatch {

namespace {

using elf::DT_PLTRELSZ, elf::DT_RELASZ, elf::DT_RELAENT, elf::DT_RELSZ, elf::DT_RELENT, elf::DT_PLTREL,
    elf::DT_SYMTAB_SHNDX, elf::DT_MIPS_XHASH;

template <class E>
using Word = typename E::Word;
template <class E>
using Half = typename E::Half;
template <class E>
using Addr = typename E::Addr;

template <class E>
constexpr uint64_t relocation_size(bool rela) {
  return (rela ? 3 : 2) * sizeof(Addr<E>);
}

// r_info: symbol << 32 | type in ELF64, symbol << 8 | type in ELF32.
template <class E>
uint64_t info_symbol(uint64_t info) {
  return E::is64 ? info >> 32 : info >> 8;
}
template <class E>
uint64_t info_type(uint64_t info) {
  return E::is64 ? info & 0xffffffffu : info & 0xffu;
}
template <class E>
uint64_t make_info(uint64_t symbol, uint64_t type) {
  return E::is64 ? (symbol << 32) | type : (symbol << 8) | type;
}

template <class E>
Expected<uint32_t> word_at(const ElfView<E>& view, uint64_t off, std::string_view what) {
  RUNPATCH_TRY(auto words, view.template table_at<Word<E>>(off, 1, what));
  return uint32_t(words[0]);
}

// The number of symbols of a table found only through .gnu.hash: the last
// bucket's chain ends at the last symbol (nullopt: every bucket is empty).
template <class E>
Expected<std::optional<uint64_t>> count_from_gnu_hash(const ElfView<E>& view, uint64_t gnu_off, const SymbolTables& t) {
  uint64_t buckets_off = gnu_off + 16 + uint64_t(t.gnu_maskwords) * sizeof(Addr<E>);
  RUNPATCH_TRY(auto buckets, view.template table_at<Word<E>>(buckets_off, t.gnu_buckets, "GNU hash buckets"));
  uint64_t last = 0;
  for (const auto& b : buckets) last = std::max<uint64_t>(last, uint32_t(b));
  if (last == 0) return std::optional<uint64_t>();
  if (last < t.gnu_symoffset) return view.malformed("GNU hash bucket names a symbol below its symoffset", buckets_off);
  uint64_t chain_off = buckets_off + uint64_t(t.gnu_buckets) * 4;
  for (uint64_t i = last;; ++i) {
    RUNPATCH_TRY(uint32_t value, word_at(view, chain_off + (i - t.gnu_symoffset) * 4, "GNU hash chain"));
    if (value & 1) return std::optional<uint64_t>(i + 1);
  }
}

// Without an exact count (a stripped file whose .gnu.hash hashes nothing):
// the symbols end where the next table the dynamic section names begins
// (linkers put .dynstr right after .dynsym), or before the first entry whose
// name lies outside the string table (bytes an earlier edit left unreferenced
// there). Padding read this way has empty names: no rename matches them.
template <class E>
Expected<uint64_t> count_up_to_next_table(const ElfView<E>& view, const DynamicTable<E>& table, uint64_t symtab) {
  std::optional<uint64_t> next;
  for (const auto& d : table.entries()) {
    uint64_t tag = d.d_tag, addr = d.d_val;
    bool is_table = tag == elf::DT_STRTAB || tag == elf::DT_GNU_HASH || tag == elf::DT_HASH || tag == elf::DT_VERSYM ||
                    tag == elf::DT_VERNEED || tag == elf::DT_VERDEF || tag == elf::DT_RELA || tag == elf::DT_REL ||
                    tag == elf::DT_JMPREL || tag == elf::DT_RELR;
    if (is_table && addr > symtab && (!next || addr < *next)) next = addr;
  }
  if (!next)
    return view.error(ErrorCode::NothingToEdit,
                      "cannot count the dynamic symbols: no .dynsym section header, DT_HASH or following table");
  uint64_t bound = (*next - symtab) / sizeof(elf::Sym<E>);
  RUNPATCH_TRY(uint64_t off, view.offset_of_vaddr(symtab, bound * sizeof(elf::Sym<E>), "dynamic symbol table"));
  RUNPATCH_TRY(auto symbols, view.template table_at<elf::Sym<E>>(off, bound, "dynamic symbol table"));
  for (uint64_t i = 0; i < bound; ++i)
    if (uint64_t(symbols[i].st_name) >= table.strtab_size) return i;
  return bound;
}

template <class E>
Status locate_gnu_hash(const ElfView<E>& view, uint64_t vaddr, SymbolTables& t) {
  RUNPATCH_TRY(uint64_t off, view.offset_of_vaddr(vaddr, 16, "GNU hash table"));
  RUNPATCH_TRY(auto header, view.template table_at<Word<E>>(off, 4, "GNU hash table"));
  t.gnu_buckets = header[0], t.gnu_symoffset = header[1], t.gnu_maskwords = header[2], t.gnu_shift = header[3];
  // The loader indexes the bloom filter with (hash / bits) & (maskwords - 1).
  if (t.gnu_buckets == 0 || t.gnu_maskwords == 0 || (t.gnu_maskwords & (t.gnu_maskwords - 1)) != 0)
    return view.malformed(fmt::format("GNU hash table has {} buckets and {} bloom words (a power of two is needed)",
                                      t.gnu_buckets, t.gnu_maskwords),
                          off);
  // The second bloom bit is (hash >> shift) % bits: a shift beyond the hash's 32 bits means nothing.
  if (t.gnu_shift >= 32)
    return view.malformed(fmt::format("GNU hash table has a bloom shift of {} (at most 31)", t.gnu_shift), off + 12);
  t.gnu_hash = FileRange{off, 0};
  return {};
}

template <class E>
Status locate_sysv_hash(const ElfView<E>& view, uint64_t vaddr, SymbolTables& t, std::optional<uint64_t>& nchain) {
  RUNPATCH_TRY(uint64_t off, view.offset_of_vaddr(vaddr, 8, "hash table"));
  RUNPATCH_TRY(auto header, view.template table_at<Word<E>>(off, 2, "hash table"));
  t.sysv_buckets = header[0];
  nchain = uint32_t(header[1]);
  if (t.sysv_buckets == 0) return view.malformed("hash table (DT_HASH) has no buckets", off);
  t.sysv_hash = FileRange{off, 8 + (uint64_t(t.sysv_buckets) + *nchain) * 4};
  return {};
}

template <class E>
Status locate_relocations(const ElfView<E>& view, const DynamicTable<E>& table, SymbolTables& t) {
  auto add = [&](uint64_t addr_tag, uint64_t size_tag, std::optional<uint64_t> entsize, bool rela,
                 const char* what) -> Status {
    auto vaddr = table.find(addr_tag);
    if (!vaddr) return {};
    auto size = table.find(size_tag);
    if (!size) return view.malformed(fmt::format("{} has no size entry", what), table.offset_of_entry(addr_tag));
    uint64_t entry = relocation_size<E>(rela);
    if ((entsize && *entsize != entry) || *size % entry != 0)
      return view.malformed(fmt::format("{} entries are not {} bytes each", what, entry),
                            table.offset_of_entry(addr_tag));
    if (*size == 0) return {};
    RUNPATCH_TRY(uint64_t off, view.offset_of_vaddr(*vaddr, *size, what));
    t.relocations.push_back({{off, *size}, rela});
    return {};
  };
  RUNPATCH_CHECK(add(elf::DT_RELA, DT_RELASZ, table.find(DT_RELAENT), true, "DT_RELA relocations"));
  RUNPATCH_CHECK(add(elf::DT_REL, DT_RELSZ, table.find(DT_RELENT), false, "DT_REL relocations"));
  if (table.find(elf::DT_JMPREL)) {
    auto kind = table.find(DT_PLTREL);
    if (!kind || (*kind != elf::DT_RELA && *kind != elf::DT_REL))
      return view.malformed("DT_JMPREL relocations without a DT_PLTREL saying their kind",
                            table.offset_of_entry(elf::DT_JMPREL));
    RUNPATCH_CHECK(add(elf::DT_JMPREL, DT_PLTRELSZ, std::nullopt, *kind == elf::DT_RELA, "DT_JMPREL relocations"));
  }
  return {};
}

// The symbol count: .dynsym's section header, DT_HASH's nchain, the GNU hash chains, or the next table.
template <class E>
Expected<uint64_t> count_symbols(const ElfView<E>& view, const DynamicTable<E>& table, uint64_t symtab_vaddr,
                                 const SymbolTables& t, std::optional<uint64_t> nchain) {
  for (const auto& sh : view.shdrs())
    if (sh.sh_type == elf::SHT_DYNSYM && sh.sh_addr == symtab_vaddr && sh.sh_entsize == sizeof(elf::Sym<E>))
      return uint64_t(sh.sh_size) / sizeof(elf::Sym<E>);
  if (nchain) return *nchain;
  if (t.gnu_hash) {
    RUNPATCH_TRY(auto count, count_from_gnu_hash(view, t.gnu_hash->offset, t));
    if (count) return *count;
  }
  return count_up_to_next_table(view, table, symtab_vaddr);
}

// The names of every symbol, read from one span of the string table.
template <class E>
Expected<std::vector<std::string>> symbol_names(const ElfView<E>& view, const DynamicTable<E>& table,
                                                std::span<const elf::Sym<E>> symbols) {
  if (!table.has_strtab)
    return view.error(ErrorCode::NothingToEdit, "dynamic symbols without a string table (DT_STRTAB)");
  const auto* strings = reinterpret_cast<const char*>(view.data_at(table.strtab_offset, table.strtab_size));
  if (!strings) return view.error(ErrorCode::SystemCall, "cannot read the dynamic string table", table.strtab_offset);
  std::vector<std::string> names;
  names.reserve(symbols.size());
  for (size_t i = 0; i < symbols.size(); ++i) {
    uint64_t at = symbols[i].st_name;
    const void* nul = at < table.strtab_size ? std::memchr(strings + at, 0, table.strtab_size - at) : nullptr;
    if (!nul)
      return view.malformed(
          fmt::format("dynamic symbol #{} names string {}, outside the string table or unterminated", i, at),
          table.strtab_offset);
    names.emplace_back(strings + at, static_cast<const char*>(nul) - (strings + at));
  }
  return names;
}

bool is_local(uint8_t info) { return (info >> 4) == 0; }  // STB_LOCAL

// One write covering every byte of a table that changes (none when nothing does).
void add_changed_span(std::vector<PlannedWrite>& writes, uint64_t offset, std::span<const uint8_t> before,
                      const std::vector<uint8_t>& after, WriteKind kind) {
  size_t first = 0, last = after.size();
  while (first < last && before[first] == after[first]) ++first;
  while (last > first && before[last - 1] == after[last - 1]) --last;
  if (first < last)
    writes.push_back(
        {WritePhase::Commit, offset + first, std::vector<uint8_t>(after.begin() + first, after.begin() + last), kind});
}

}  // namespace

uint32_t gnu_symbol_hash(std::string_view name) {
  uint32_t h = 5381;
  for (unsigned char c : name) h = h * 33 + c;
  return h;
}

uint32_t sysv_symbol_hash(std::string_view name) {
  uint32_t h = 0;
  for (unsigned char c : name) {
    h = (h << 4) + c;
    uint32_t high = h & 0xf0000000u;
    if (high) h ^= high >> 24;
    h &= ~high;
  }
  return h;
}

std::vector<FileRange> SymbolTables::ranges(uint64_t symbol_size) const {
  std::vector<FileRange> out{{symtab_offset, count * symbol_size}};
  if (versym_offset) out.push_back({*versym_offset, count * 2});
  if (gnu_hash) out.push_back(*gnu_hash);
  if (sysv_hash) out.push_back(*sysv_hash);
  for (const auto& r : relocations) out.push_back(r.range);
  return out;
}

template <class E>
Expected<SymbolTables> locate_symbol_tables(const ElfView<E>& view, const DynamicTable<E>& table,
                                            std::optional<uint64_t> known_count) {
  SymbolTables t;
  auto symtab = table.find(elf::DT_SYMTAB);
  if (!symtab) return view.error(ErrorCode::NothingToEdit, "no dynamic symbol table (.dynsym) to rename symbols in");
  if (table.find(DT_MIPS_XHASH))
    return view.error(ErrorCode::Unsupported, "renaming symbols of a MIPS file with DT_MIPS_XHASH is not supported");
  if (table.find(elf::DT_SYMENT).value_or(sizeof(elf::Sym<E>)) != sizeof(elf::Sym<E>))
    return view.malformed("DT_SYMENT is not the size of a symbol", table.offset_of_entry(elf::DT_SYMENT));
  std::optional<uint64_t> nchain;
  if (auto gnu = table.find(elf::DT_GNU_HASH)) RUNPATCH_CHECK(locate_gnu_hash(view, *gnu, t));
  if (auto hash = table.find(elf::DT_HASH)) RUNPATCH_CHECK(locate_sysv_hash(view, *hash, t, nchain));
  if (known_count) {
    t.count = *known_count;
  } else {
    RUNPATCH_TRY(t.count, count_symbols(view, table, *symtab, t, nchain));
  }
  if (nchain && *nchain != t.count)
    return view.malformed(fmt::format("DT_HASH chains {} symbols, the symbol table holds {}", *nchain, t.count));
  if (t.gnu_hash) {
    // A table with every bucket empty hashes no symbol, whatever its symoffset
    // says (linkers write 1 for executables that export nothing): it has no chains.
    uint64_t buckets_off = t.gnu_hash->offset + 16 + uint64_t(t.gnu_maskwords) * sizeof(Addr<E>);
    RUNPATCH_TRY(auto buckets, view.template table_at<Word<E>>(buckets_off, t.gnu_buckets, "GNU hash buckets"));
    if (std::all_of(buckets.begin(), buckets.end(), [](const auto& b) { return uint32_t(b) == 0; }))
      t.gnu_symoffset = static_cast<uint32_t>(t.count);
    if (t.gnu_symoffset > t.count)
      return view.malformed(fmt::format("GNU hash symoffset {} is past the {} symbols", t.gnu_symoffset, t.count));
    uint64_t size =
        16 + uint64_t(t.gnu_maskwords) * sizeof(Addr<E>) + (uint64_t(t.gnu_buckets) + t.count - t.gnu_symoffset) * 4;
    RUNPATCH_TRY(t.gnu_hash->offset, view.offset_of_vaddr(*table.find(elf::DT_GNU_HASH), size, "GNU hash table"));
    t.gnu_hash->size = size;
  }
  if (t.sysv_hash) {
    RUNPATCH_TRY(t.sysv_hash->offset, view.offset_of_vaddr(*table.find(elf::DT_HASH), t.sysv_hash->size, "hash table"));
  }
  RUNPATCH_TRY(t.symtab_offset, view.offset_of_vaddr(*symtab, t.count * sizeof(elf::Sym<E>), "dynamic symbol table"));
  if (auto versym = table.find(elf::DT_VERSYM)) {
    RUNPATCH_TRY(t.versym_offset, view.offset_of_vaddr(*versym, t.count * 2, "symbol versions"));
  }
  RUNPATCH_CHECK(locate_relocations(view, table, t));
  return t;
}

template <class E>
Expected<std::vector<SymbolEntry>> read_symbols(const ElfView<E>& view, const DynamicTable<E>& table,
                                                const SymbolTables& tables) {
  RUNPATCH_TRY(auto symbols,
               view.template table_at<elf::Sym<E>>(tables.symtab_offset, tables.count, "dynamic symbol table"));
  RUNPATCH_TRY(auto names, symbol_names(view, table, symbols));
  std::span<const Half<E>> versions;
  if (tables.versym_offset) {
    RUNPATCH_TRY(versions, view.template table_at<Half<E>>(*tables.versym_offset, tables.count, "symbol versions"));
  }
  std::vector<SymbolEntry> out(tables.count);
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& s = symbols[i];
    out[i] = {std::move(names[i]),
              uint64_t(s.st_value),
              uint64_t(s.st_size),
              s.st_info,
              s.st_other,
              uint16_t(s.st_shndx),
              versions.empty() ? uint16_t(0) : uint16_t(versions[i])};
  }
  return out;
}

template <class E>
Expected<std::vector<RelocationEntry>> read_relocations(const ElfView<E>& view, const SymbolTables& tables) {
  std::vector<RelocationEntry> out;
  // An entry is read once: DT_JMPREL may lie inside DT_RELA's range. Told by
  // the earlier tables' ranges (a std::set of every offset was a large part of
  // verifying a rename of libLLVM, 380,000 relocations; docs/performance.md).
  auto read_before = [&](size_t k, uint64_t offset) {
    for (size_t j = 0; j < k; ++j) {
      const auto& earlier = tables.relocations[j];
      uint64_t entry = relocation_size<E>(earlier.rela);
      if (offset >= earlier.range.offset && offset - earlier.range.offset < earlier.range.size / entry * entry &&
          (offset - earlier.range.offset) % entry == 0)
        return true;
    }
    return false;
  };
  uint64_t entries = 0;
  for (const auto& table : tables.relocations) entries += table.range.size / relocation_size<E>(table.rela);
  out.reserve(entries);
  for (size_t k = 0; k < tables.relocations.size(); ++k) {
    const auto& table = tables.relocations[k];
    uint64_t entry = relocation_size<E>(table.rela);
    RUNPATCH_TRY(auto fields, view.template table_at<Addr<E>>(table.range.offset, table.range.size / sizeof(Addr<E>),
                                                              "relocations"));
    for (uint64_t i = 0; i < table.range.size / entry; ++i) {
      uint64_t offset = table.range.offset + i * entry;
      if (read_before(k, offset)) continue;
      const auto* f = &fields[i * (entry / sizeof(Addr<E>))];
      uint64_t info = f[1];
      out.push_back(
          {offset, uint64_t(f[0]), info_type<E>(info), table.rela ? uint64_t(f[2]) : 0, info_symbol<E>(info)});
    }
  }
  return out;
}

template <class E>
Expected<std::vector<uint64_t>> gnu_hash_lookup(const ElfView<E>& view, const SymbolTables& t,
                                                const std::vector<SymbolEntry>& symbols, const std::string& name) {
  std::vector<uint64_t> found;
  if (!t.gnu_hash) return found;
  constexpr uint32_t bits = sizeof(Addr<E>) * 8;
  uint32_t h = gnu_symbol_hash(name);
  uint64_t bloom_off = t.gnu_hash->offset + 16, buckets_off = bloom_off + uint64_t(t.gnu_maskwords) * sizeof(Addr<E>);
  RUNPATCH_TRY(auto bloom, view.template table_at<Addr<E>>(bloom_off, t.gnu_maskwords, "GNU hash bloom filter"));
  uint64_t word = bloom[(h / bits) & (t.gnu_maskwords - 1)];
  if (!((word >> (h % bits)) & (word >> ((h >> t.gnu_shift) % bits)) & 1)) return found;
  RUNPATCH_TRY(uint32_t start, word_at(view, buckets_off + uint64_t(h % t.gnu_buckets) * 4, "GNU hash bucket"));
  if (start == 0) return found;
  uint64_t chain_off = buckets_off + uint64_t(t.gnu_buckets) * 4;
  for (uint64_t i = start; i >= t.gnu_symoffset && i < t.count; ++i) {
    RUNPATCH_TRY(uint32_t value, word_at(view, chain_off + (i - t.gnu_symoffset) * 4, "GNU hash chain"));
    if (((value ^ h) >> 1) == 0 && symbols[i].name == name) found.push_back(i);
    if (value & 1) break;
  }
  return found;
}

template <class E>
Expected<std::vector<uint64_t>> sysv_hash_lookup(const ElfView<E>& view, const SymbolTables& t,
                                                 const std::vector<SymbolEntry>& symbols, const std::string& name) {
  std::vector<uint64_t> found;
  if (!t.sysv_hash) return found;
  uint64_t buckets_off = t.sysv_hash->offset + 8, chain_off = buckets_off + uint64_t(t.sysv_buckets) * 4;
  RUNPATCH_TRY(uint32_t i,
               word_at(view, buckets_off + uint64_t(sysv_symbol_hash(name) % t.sysv_buckets) * 4, "hash bucket"));
  // A corrupt chain may loop: no chain is longer than the table.
  for (uint64_t steps = 0; i != 0 && i < t.count && steps < t.count; ++steps) {
    if (symbols[i].name == name) found.push_back(i);
    RUNPATCH_TRY(i, word_at(view, chain_off + uint64_t(i) * 4, "hash chain"));
  }
  return found;
}

// ---- The planner's part ------------------------------------------------------

template <class E>
Expected<SymbolRenamer<E>> SymbolRenamer<E>::plan(const ElfView<E>& view, const DynamicTable<E>& table,
                                                  const SymbolRenameMap& map) {
  SymbolRenamer r;
  if (map.empty()) return r;
  RUNPATCH_TRY(r.tables_, locate_symbol_tables(view, table));
  RUNPATCH_TRY(auto symbols, read_symbols(view, table, r.tables_));
  std::unordered_map<std::string, std::string> wanted;
  for (const auto& [from, to] : map) {
    if (to.find('\0') != std::string::npos)
      return view.error(ErrorCode::InvalidRequest, "a new symbol name contains a NUL byte");
    if (from != to) wanted.emplace(from, to);
  }
  const SymbolTables& t = r.tables_;
  r.renamed_.assign(t.count, false);
  bool hashed_renamed = false;
  for (uint64_t i = 1; i < t.count; ++i) {
    auto it = wanted.find(symbols[i].name);
    if (it == wanted.end()) continue;
    symbols[i].name = it->second;
    r.renamed_[i] = true;
    ++r.renamed_count_;
    hashed_renamed |= t.gnu_hash && i >= t.gnu_symoffset;
  }
  for (auto& s : symbols) r.names_.push_back(std::move(s.name));
  r.order_.resize(t.count);
  std::iota(r.order_.begin(), r.order_.end(), uint64_t(0));
  if (hashed_renamed) {
    // .gnu.hash finds a bucket's symbols as one run: renamed symbols move to their new bucket's run.
    std::vector<uint32_t> bucket(t.count);
    for (uint64_t i = t.gnu_symoffset; i < t.count; ++i) bucket[i] = gnu_symbol_hash(r.names_[i]) % t.gnu_buckets;
    std::stable_sort(r.order_.begin() + t.gnu_symoffset, r.order_.end(),
                     [&](uint64_t a, uint64_t b) { return bucket[a] < bucket[b]; });
    r.resorted_ = !std::is_sorted(r.order_.begin(), r.order_.end());
    if (r.resorted_ && table.find(DT_SYMTAB_SHNDX))
      return view.error(ErrorCode::Unsupported,
                        "renaming would reorder symbols of a file with extended section indices (DT_SYMTAB_SHNDX)");
  }
  return r;
}

template <class E>
uint64_t SymbolRenamer<E>::new_position(uint64_t old_index) const {
  if (!resorted_) return old_index;
  auto at = std::find(order_.begin(), order_.end(), old_index);
  return at == order_.end() ? old_index : uint64_t(at - order_.begin());
}

template <class E>
std::vector<std::string> SymbolRenamer<E>::new_names() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (uint64_t i = 0; i < renamed_.size(); ++i)
    if (renamed_[i] && seen.insert(names_[i]).second) out.push_back(names_[i]);
  return out;
}

template <class E>
std::vector<uint8_t> SymbolRenamer<E>::new_symbol_table(const MappedElfView<E>& view,
                                                        const std::map<std::string, uint64_t>& offsets) const {
  using Sym = elf::Sym<E>;
  auto old = view.bytes().subspan(tables_.symtab_offset, tables_.count * sizeof(Sym));
  std::vector<uint8_t> out(old.size());
  for (uint64_t p = 0; p < tables_.count; ++p) {
    uint64_t from = order_[p];
    std::memcpy(out.data() + p * sizeof(Sym), old.data() + from * sizeof(Sym), sizeof(Sym));
    if (renamed_[from]) struct_at<Sym>(out, p * sizeof(Sym))->st_name = static_cast<uint32_t>(offsets.at(names_[from]));
  }
  return out;
}

// Bloom filter, buckets and chains over the symbols in their new order; the
// header (bucket count, symoffset, bloom size and shift) stays.
template <class E>
std::vector<uint8_t> SymbolRenamer<E>::new_gnu_hash(const MappedElfView<E>& view) const {
  const SymbolTables& t = tables_;
  constexpr uint32_t bits = sizeof(Addr<E>) * 8;
  auto old = view.bytes().subspan(t.gnu_hash->offset, t.gnu_hash->size);
  std::vector<uint8_t> out(old.begin(), old.end());
  uint64_t bloom_off = 16, buckets_off = bloom_off + uint64_t(t.gnu_maskwords) * sizeof(Addr<E>);
  uint64_t chain_off = buckets_off + uint64_t(t.gnu_buckets) * 4;
  std::fill(out.begin() + bloom_off, out.end(), 0);
  for (uint64_t p = t.gnu_symoffset; p < t.count; ++p) {
    uint32_t h = gnu_symbol_hash(names_[order_[p]]);
    auto* word = struct_at<Addr<E>>(out, bloom_off + ((h / bits) & (t.gnu_maskwords - 1)) * sizeof(Addr<E>));
    *word = uint64_t(*word) | (uint64_t(1) << (h % bits)) | (uint64_t(1) << ((h >> t.gnu_shift) % bits));
    auto* bucket = struct_at<Word<E>>(out, buckets_off + uint64_t(h % t.gnu_buckets) * 4);
    if (uint32_t(*bucket) == 0) *bucket = static_cast<uint32_t>(p);
    bool last = p + 1 == t.count || gnu_symbol_hash(names_[order_[p + 1]]) % t.gnu_buckets != h % t.gnu_buckets;
    *struct_at<Word<E>>(out, chain_off + (p - t.gnu_symoffset) * 4) = last ? (h | 1u) : (h & ~1u);
  }
  return out;
}

// Buckets and chains as linkers build them: each global symbol goes to the
// head of its bucket's chain (local ones, section symbols, are never looked up).
template <class E>
std::vector<uint8_t> SymbolRenamer<E>::new_sysv_hash(const MappedElfView<E>& view) const {
  const SymbolTables& t = tables_;
  std::vector<uint8_t> out(t.sysv_hash->size, 0);
  *struct_at<Word<E>>(out, 0) = t.sysv_buckets;
  *struct_at<Word<E>>(out, 4) = static_cast<uint32_t>(t.count);
  uint64_t chain_off = 8 + uint64_t(t.sysv_buckets) * 4;
  auto symbols = view.bytes().subspan(t.symtab_offset, t.count * sizeof(elf::Sym<E>));
  for (uint64_t p = 1; p < t.count; ++p) {
    if (is_local(reinterpret_cast<const elf::Sym<E>*>(symbols.data())[order_[p]].st_info)) continue;
    auto* bucket = struct_at<Word<E>>(out, 8 + uint64_t(sysv_symbol_hash(names_[order_[p]]) % t.sysv_buckets) * 4);
    *struct_at<Word<E>>(out, chain_off + p * 4) = uint32_t(*bucket);
    *bucket = static_cast<uint32_t>(p);
  }
  return out;
}

template <class E>
void SymbolRenamer<E>::remap_relocations(const MappedElfView<E>& view, std::vector<PlannedWrite>& writes) const {
  std::vector<uint64_t> new_index(order_.size());
  for (uint64_t p = 0; p < order_.size(); ++p) new_index[order_[p]] = p;
  for (const auto& table : tables_.relocations) {
    auto old = view.bytes().subspan(table.range.offset, table.range.size);
    std::vector<uint8_t> out(old.begin(), old.end());
    uint64_t entry = relocation_size<E>(table.rela);
    for (uint64_t at = 0; at + entry <= out.size(); at += entry) {
      auto* info = struct_at<Addr<E>>(out, at + sizeof(Addr<E>));
      uint64_t symbol = info_symbol<E>(*info);
      if (symbol < order_.size() && symbol != new_index[symbol])
        *info = make_info<E>(new_index[symbol], info_type<E>(*info));
    }
    add_changed_span(writes, table.range.offset, old, out, WriteKind::Relocations);
  }
}

template <class E>
std::vector<PlannedWrite> SymbolRenamer<E>::writes(const MappedElfView<E>& view,
                                                   const std::map<std::string, uint64_t>& offsets) const {
  std::vector<PlannedWrite> out;
  if (empty()) return out;
  const SymbolTables& t = tables_;
  uint64_t symtab_size = t.count * sizeof(elf::Sym<E>);
  add_changed_span(out, t.symtab_offset, view.bytes().subspan(t.symtab_offset, symtab_size),
                   new_symbol_table(view, offsets), WriteKind::DynamicSymbols);
  if (resorted_ && t.versym_offset) {
    auto old = view.bytes().subspan(*t.versym_offset, t.count * 2);
    std::vector<uint8_t> permuted(old.size());
    for (uint64_t p = 0; p < t.count; ++p) std::memcpy(permuted.data() + p * 2, old.data() + order_[p] * 2, 2);
    add_changed_span(out, *t.versym_offset, old, permuted, WriteKind::SymbolVersions);
  }
  if (t.gnu_hash)
    add_changed_span(out, t.gnu_hash->offset, view.bytes().subspan(t.gnu_hash->offset, t.gnu_hash->size),
                     new_gnu_hash(view), WriteKind::GnuHash);
  if (t.sysv_hash)
    add_changed_span(out, t.sysv_hash->offset, view.bytes().subspan(t.sysv_hash->offset, t.sysv_hash->size),
                     new_sysv_hash(view), WriteKind::SysvHash);
  if (resorted_) remap_relocations(view, out);
  return out;
}

// ---- The verifier's part -----------------------------------------------------

namespace {

template <class E>
Status check_lookups(const ElfView<E>& view, const SymbolTables& t, const std::vector<SymbolEntry>& symbols) {
  auto fail = [&](const char* table, uint64_t i) {
    return make_error(ErrorCode::VerificationFailed, view.path(),
                      fmt::format("edit verification failed: dynamic symbol '{}' (#{}) is not found "
                                  "through the {} (file left untouched)",
                                  symbols[i].name, i, table));
  };
  for (uint64_t i = 1; i < t.count; ++i) {
    if (symbols[i].name.empty()) continue;
    if (t.gnu_hash && i >= t.gnu_symoffset) {
      RUNPATCH_TRY(auto found, gnu_hash_lookup(view, t, symbols, symbols[i].name));
      if (std::find(found.begin(), found.end(), i) == found.end()) return fail("GNU hash table", i);
    }
    if (t.sysv_hash && !is_local(symbols[i].info)) {
      RUNPATCH_TRY(auto found, sysv_hash_lookup(view, t, symbols, symbols[i].name));
      if (std::find(found.begin(), found.end(), i) == found.end()) return fail("hash table (DT_HASH)", i);
    }
  }
  return {};
}

// Each relocation (found by its place in the file, which a rename never moves)
// names the same symbol as before, renamed, with its other fields unchanged.
Status check_relocations(const std::string& path, const std::vector<RelocationEntry>& before,
                         const std::vector<RelocationEntry>& after, const std::vector<SymbolEntry>& old_symbols,
                         const std::vector<SymbolEntry>& new_symbols) {
  auto fail = [&](const std::string& detail) {
    return make_error(ErrorCode::VerificationFailed, path,
                      "edit verification failed: relocations " + detail + " (file left untouched)");
  };
  if (before.size() != after.size()) return fail("changed in number");
  for (size_t i = 0; i < before.size(); ++i) {
    const auto &a = before[i], &b = after[i];
    if (a.offset != b.offset || a.where != b.where || a.type != b.type || a.addend != b.addend)
      return fail(fmt::format("changed at offset {:#x}", a.offset));
    bool a_in = a.symbol < old_symbols.size(), b_in = b.symbol < new_symbols.size();
    bool same = a_in && b_in ? old_symbols[a.symbol] == new_symbols[b.symbol] : a.symbol == b.symbol;
    if (!same) return fail(fmt::format("at offset {:#x} name another symbol", a.offset));
  }
  return {};
}

}  // namespace

template <class E>
Status check_renamed_symbols(const ElfView<E>& old_view, const DynamicTable<E>& old_table, const ElfView<E>& new_view,
                             const DynamicTable<E>& new_table, const SymbolRenameMap& map) {
  const std::string& path = old_view.path();
  auto fail = [&](const std::string& detail) {
    return make_error(ErrorCode::VerificationFailed, path,
                      "edit verification failed: dynamic symbols " + detail + " (file left untouched)");
  };
  RUNPATCH_TRY(auto old_tables, locate_symbol_tables(old_view, old_table));
  // The old count: a stripped file's bound moves with the tables an edit moves.
  RUNPATCH_TRY(auto new_tables, locate_symbol_tables(new_view, new_table, old_tables.count));
  if (old_tables.count != new_tables.count) return fail("changed in number");
  RUNPATCH_TRY(auto expected, read_symbols(old_view, old_table, old_tables));
  RUNPATCH_TRY(auto found, read_symbols(new_view, new_table, new_tables));
  std::unordered_map<std::string, std::string> renames(map.begin(), map.end());
  for (size_t i = 1; i < expected.size(); ++i)
    if (auto it = renames.find(expected[i].name); it != renames.end()) expected[i].name = it->second;
  // Section symbols and _DYNAMIC follow a section the edit moves (the write-region check bounds that).
  for (auto* symbols : {&expected, &found})
    for (auto& s : *symbols)
      if ((s.info & 0xf) == elf::STT_SECTION || s.name == "_DYNAMIC") s.value = 0;
  uint64_t fixed = new_tables.gnu_hash ? new_tables.gnu_symoffset : new_tables.count;
  if (!std::equal(expected.begin(), expected.begin() + fixed, found.begin()))
    return fail("below the GNU hash's symoffset moved, or are not the old ones renamed");
  RUNPATCH_TRY(auto old_relocations, read_relocations(old_view, old_tables));
  RUNPATCH_TRY(auto new_relocations, read_relocations(new_view, new_tables));
  RUNPATCH_CHECK(check_relocations(path, old_relocations, new_relocations, expected, found));
  // Compared as multisets: sorted (`found` stays in table order for the lookups).
  std::vector<SymbolEntry> want = std::move(expected), have = found;
  std::sort(want.begin(), want.end());
  std::sort(have.begin(), have.end());
  if (want != have) return fail("are not the old ones with the renames applied (names, fields and versions)");
  return check_lookups(new_view, new_tables, found);
}

template <class E>
Expected<uint64_t> count_dynamic_symbols(const ElfView<E>& view, const DynamicTable<E>& table, uint64_t symtab_vaddr) {
  SymbolTables t;
  std::optional<uint64_t> nchain;
  if (auto gnu = table.find(elf::DT_GNU_HASH)) {
    RUNPATCH_TRY(uint64_t off, view.offset_of_vaddr(*gnu, 16, "GNU hash table"));
    RUNPATCH_TRY(auto header, view.template table_at<Word<E>>(off, 4, "GNU hash table"));
    t.gnu_buckets = header[0], t.gnu_symoffset = header[1], t.gnu_maskwords = header[2];
    t.gnu_hash = FileRange{off, 0};
  }
  if (auto hash = table.find(elf::DT_HASH)) {
    RUNPATCH_TRY(uint64_t off, view.offset_of_vaddr(*hash, 8, "hash table"));
    RUNPATCH_TRY(auto header, view.template table_at<Word<E>>(off, 2, "hash table"));
    nchain = uint32_t(header[1]);
  }
  return count_symbols(view, table, symtab_vaddr, t, nchain);
}

#define RUNPATCH_INSTANTIATE(E)                                                                                   \
  template Expected<uint64_t> count_dynamic_symbols(const ElfView<E>&, const DynamicTable<E>&, uint64_t);         \
  template Expected<SymbolTables> locate_symbol_tables(const ElfView<E>&, const DynamicTable<E>&,                 \
                                                       std::optional<uint64_t>);                                  \
  template Expected<std::vector<SymbolEntry>> read_symbols(const ElfView<E>&, const DynamicTable<E>&,             \
                                                           const SymbolTables&);                                  \
  template Expected<std::vector<RelocationEntry>> read_relocations(const ElfView<E>&, const SymbolTables&);       \
  template Expected<std::vector<uint64_t>> gnu_hash_lookup(const ElfView<E>&, const SymbolTables&,                \
                                                           const std::vector<SymbolEntry>&, const std::string&);  \
  template Expected<std::vector<uint64_t>> sysv_hash_lookup(const ElfView<E>&, const SymbolTables&,               \
                                                            const std::vector<SymbolEntry>&, const std::string&); \
  template class SymbolRenamer<E>;                                                                                \
  template Status check_renamed_symbols(const ElfView<E>&, const DynamicTable<E>&, const ElfView<E>&,             \
                                        const DynamicTable<E>&, const SymbolRenameMap&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
