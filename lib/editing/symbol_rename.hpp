// Renaming dynamic symbols (patchelf --rename-dynamic-symbols): .dynsym takes
// the new names, and every table that finds a symbol by name or by position
// follows: .gnu.hash wants the symbols from its symoffset on grouped by
// bucket, so renamed ones may move (.gnu.version and the symbol indices of
// the relocations the dynamic section lists move with them), and .hash is
// rebuilt over the new names. Nothing is re-sorted below symoffset, nor in a
// file without .gnu.hash. The planner uses SymbolRenamer; the verifier reads
// the result with the same table readers and looks every symbol up.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "editing/planned_write.hpp"
#include "reading/dynamic_table.hpp"

namespace runpatch {

using SymbolRenameMap = std::vector<std::pair<std::string, std::string>>;  // old -> new

// The loader's hash functions (glibc dl-hash.h, the GNU hash's DJB function).
uint32_t gnu_symbol_hash(std::string_view name);
uint32_t sysv_symbol_hash(std::string_view name);

struct FileRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// The dynamic symbol table and what indexes it, found through the dynamic section.
struct SymbolTables {
  uint64_t symtab_offset = 0;
  uint64_t count = 0;  // from .dynsym's header, DT_HASH, the GNU hash chains or (stripped) the next table
  std::optional<uint64_t> versym_offset;  // count 2-byte entries
  std::optional<FileRange> gnu_hash, sysv_hash;
  uint32_t gnu_buckets = 0, gnu_symoffset = 0, gnu_maskwords = 0, gnu_shift = 0;
  uint32_t sysv_buckets = 0;
  struct Relocations {
    FileRange range;
    bool rela = false;
  };
  std::vector<Relocations> relocations;  // DT_RELA, DT_REL, DT_JMPREL (as DT_PLTREL says)

  std::vector<FileRange> ranges(uint64_t symbol_size) const;  // every byte a rename may write
};

// How many dynamic symbols there are: .dynsym's section header, DT_HASH's
// nchain, the GNU hash chains, or (stripped, nothing hashed) up to the next
// table the dynamic section names.
template <class E>
Expected<uint64_t> count_dynamic_symbols(const ElfView<E>& view, const DynamicTable<E>& table, uint64_t symtab_vaddr);

// known_count: the number of symbols, when the caller knows it better (the verifier, from the old file).
template <class E>
Expected<SymbolTables> locate_symbol_tables(const ElfView<E>& view, const DynamicTable<E>& table,
                                            std::optional<uint64_t> known_count = std::nullopt);

// One dynamic symbol, every field the loader reads, and its version index.
struct SymbolEntry {
  std::string name;
  uint64_t value = 0, size = 0;
  uint8_t info = 0, other = 0;
  uint16_t shndx = 0, version = 0;
  auto operator<=>(const SymbolEntry&) const = default;
};

template <class E>
Expected<std::vector<SymbolEntry>> read_symbols(const ElfView<E>& view, const DynamicTable<E>& table,
                                                const SymbolTables& tables);

// One relocation of the tables the dynamic section lists (each entry once,
// even where DT_JMPREL lies inside DT_RELA's range).
struct RelocationEntry {
  uint64_t offset = 0;  // of the entry in the file
  uint64_t where = 0, type = 0, addend = 0;
  uint64_t symbol = 0;
};

template <class E>
Expected<std::vector<RelocationEntry>> read_relocations(const ElfView<E>& view, const SymbolTables& tables);

// The symbol indices a lookup of name finds through the hash tables, in the
// loader's order (empty when the bloom filter rejects the name).
template <class E>
Expected<std::vector<uint64_t>> gnu_hash_lookup(const ElfView<E>& view, const SymbolTables& tables,
                                                const std::vector<SymbolEntry>& symbols, const std::string& name);
template <class E>
Expected<std::vector<uint64_t>> sysv_hash_lookup(const ElfView<E>& view, const SymbolTables& tables,
                                                 const std::vector<SymbolEntry>& symbols, const std::string& name);

template <class E>
class SymbolRenamer {
 public:
  // The symbols map renames; none (a name the file lacks is no error, as in patchelf): empty().
  static Expected<SymbolRenamer> plan(const ElfView<E>& view, const DynamicTable<E>& table, const SymbolRenameMap& map);

  bool empty() const { return renamed_count_ == 0; }
  // Where the symbol at old_index ends up (renamed symbols may move within .gnu.hash's range).
  uint64_t new_position(uint64_t old_index) const;
  // The names the string table must hold, each once.
  std::vector<std::string> new_names() const;
  // The table writes (phase Commit), given each new name's offset in the dynamic string table.
  std::vector<PlannedWrite> writes(const MappedElfView<E>& view, const std::map<std::string, uint64_t>& offsets) const;

 private:
  std::vector<uint8_t> new_symbol_table(const MappedElfView<E>& view,
                                        const std::map<std::string, uint64_t>& offsets) const;
  std::vector<uint8_t> new_gnu_hash(const MappedElfView<E>& view) const;
  std::vector<uint8_t> new_sysv_hash(const MappedElfView<E>& view) const;
  void remap_relocations(const MappedElfView<E>& view, std::vector<PlannedWrite>& writes) const;

  SymbolTables tables_;
  std::vector<std::string> names_;  // by old index, after the rename
  std::vector<bool> renamed_;       // by old index
  size_t renamed_count_ = 0;
  std::vector<uint64_t> order_;  // new position -> old index
  bool resorted_ = false;
};

// The verifier's part: the new file's symbols are the old ones with the
// renames applied (same fields, same versions; positions below the GNU hash's
// symoffset unchanged), relocations name the same symbols, and every hashed
// symbol is found by a lookup through each hash table.
template <class E>
Status check_renamed_symbols(const ElfView<E>& old_view, const DynamicTable<E>& old_table, const ElfView<E>& new_view,
                             const DynamicTable<E>& new_table, const SymbolRenameMap& map);

}  // namespace runpatch
