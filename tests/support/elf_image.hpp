// An ELF file described as data — its sections in file order, its program
// headers naming the sections they span, its dynamic entries naming strings
// and sections — and laid out by build_elf_image (what LLVM's yaml2obj does
// for lit tests): a test states what the file has, the builder decides where
// the bytes go, and the test then reads places back by section name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "synthetic_elf.hpp"

namespace runpatch::test {

// A dynamic entry: a plain value, or a reference the builder resolves.
struct DynamicEntry {
  uint64_t tag = 0;
  uint64_t value = 0;
  std::string string;      // the offset of this string in the linked string table
  std::string address_of;  // the address of this section
  std::string size_of;     // the size of this section
};
DynamicEntry dynamic_value(uint64_t tag, uint64_t value);
DynamicEntry dynamic_string(uint64_t tag, const std::string& string);
DynamicEntry dynamic_address(uint64_t tag, const std::string& section);
DynamicEntry dynamic_size(uint64_t tag, const std::string& section);

// A dynamic symbol; its name goes into the symbol table's linked string table.
struct SymbolDesc {
  std::string name;
  uint64_t value = 0, size = 0;
  uint8_t info = 0x12;  // STB_GLOBAL, STT_FUNC
  uint8_t other = 0;
  uint16_t shndx = 0;
};

struct SectionDesc {
  std::string name;
  uint32_t type = 1;  // SHT_PROGBITS
  uint64_t flags = 0;
  uint64_t addralign = 1;
  std::vector<uint8_t> bytes;         // the contents; for a string table, the strings after these:
  std::vector<std::string> strings;   // SHT_STRTAB: after the empty string (referenced ones are added)
  std::vector<DynamicEntry> entries;  // SHT_DYNAMIC: the entries, in order
  std::vector<SymbolDesc> symbols;    // SHT_DYNSYM: the symbols after the null one
  std::string link;                   // sh_link, by section name (SHT_HASH, SHT_GNU_HASH: its symbol table)
  uint64_t address_delta = 0;         // sh_addr - (base address + offset): a later page, as linkers lay out data
};

// Where a program header starts and ends: a section, or one of these.
inline const std::string kFileStart = "<file start>";            // offset 0 (as an end: empty)
inline const std::string kFileEnd = "<file end>";                // the last byte of the file
inline const std::string kProgramHeaders = "<program headers>";  // the table itself

struct SegmentDesc {
  uint32_t type = 1;   // PT_LOAD
  uint32_t flags = 4;  // PF_R
  uint64_t align = 1;
  std::string from;          // a section name, kFileStart or kProgramHeaders
  std::string to;            // the last section spanned (kFileEnd, kProgramHeaders); empty: `from`
  uint64_t extra_memsz = 0;  // memory past the file bytes (.bss)
};

struct ImageDesc {
  ElfFlavour flavour;
  uint16_t type = 3;      // ET_DYN
  uint16_t machine = 62;  // EM_X86_64
  uint8_t osabi = 0;
  uint64_t base_address = 0;          // the address of offset 0
  std::vector<SectionDesc> sections;  // in file order, after the program header table
  std::vector<SegmentDesc> segments;  // the program header table, in order
  bool section_headers = true;        // .shstrtab is written either way, last
};

struct PlacedSection {
  uint64_t index = 0;  // in the section header table
  uint64_t offset = 0, size = 0, address = 0;
};

struct ElfImage {
  std::vector<uint8_t> bytes;
  uint64_t phoff = 0, phnum = 0, phentsize = 0;
  uint64_t shoff = 0, shnum = 0, shentsize = 0;
  std::map<std::string, PlacedSection> sections;
  std::map<std::string, std::map<std::string, uint64_t>> string_offsets;  // per string table

  const PlacedSection& section(const std::string& name) const { return sections.at(name); }
};

// The file a SyntheticSpec stands for, as data (synthetic_elf.cpp): for a
// test that starts from it and changes sections or program headers.
ImageDesc describe_synthetic_elf(const SyntheticSpec& spec);

// A shared library of that class, byte order, machine and soname with
// nothing in it: an empty symbol table (glibc relocates no object without
// DT_SYMTAB) and its strings in one read-write PT_LOAD.
ImageDesc library_image(const ElfFlavour& flavour, uint16_t machine, const std::string& soname);

// The size of a dynamic symbol (DT_SYMENT) and of a relocation (DT_RELAENT, DT_RELENT) in the flavour's class.
uint64_t dynamic_symbol_size(const ElfFlavour& flavour);
uint64_t relocation_entry_size(const ElfFlavour& flavour, bool rela);

// One relocation, and a table of them as the class writes them (ELF64:
// r_info = symbol << 32 | type, ELF32: symbol << 8 | type; RELA entries
// carry the addend, REL ones keep it at the place).
struct RelocationDesc {
  uint64_t where = 0, symbol = 0, type = 0, addend = 0;
};
std::vector<uint8_t> relocation_table(const ElfFlavour& flavour, bool rela, const std::vector<RelocationDesc>& entries);

// A note's bytes (name and descriptor padded to 4 bytes) in the flavour's byte order.
std::vector<uint8_t> note_bytes(const ElfFlavour& flavour, uint32_t type, const std::string& name,
                                const std::vector<uint8_t>& descriptor);

// Throws std::invalid_argument naming what the description gets wrong (an
// unknown section name, a segment ending before it starts).
ElfImage build_elf_image(const ImageDesc& desc);

// The places of the image's dynamic section and string table, for the typed setters.
SyntheticLayout layout_of(const ElfImage& image, const ImageDesc& desc);

// "" when the program header table lies in the file bytes of a PT_LOAD and
// every PT_PHDR describes it exactly (its offset, its size, the address that
// PT_LOAD maps it at: the loader's AT_PHDR); else what is wrong.
std::string program_header_table_defects(const std::vector<uint8_t>& bytes, const ElfFlavour& flavour);

// The image built and written as lib.so into a fresh scratch directory `scratch`.
SyntheticFile write_image_case(const std::string& scratch, const ImageDesc& desc);

}  // namespace runpatch::test
