// Typed, endian-aware views of ELF structures laid over mapped bytes.
// Every field is stored as raw bytes (alignment 1), so a struct may sit at any
// offset of a mapping and reads/writes go through the target's byte order.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace runpatch::elf {

template <class T, bool BigEndian>
struct Field {
  static_assert(std::is_unsigned_v<T>);
  uint8_t bytes[sizeof(T)];

  operator T() const {
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return needs_swap() ? swap(v) : v;
  }
  Field& operator=(T v) {
    if (needs_swap()) v = swap(v);
    std::memcpy(bytes, &v, sizeof(T));
    return *this;
  }

 private:
  static constexpr bool needs_swap() { return BigEndian != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__); }
  static T swap(T v) {
    if constexpr (sizeof(T) == 1)
      return v;
    else if constexpr (sizeof(T) == 2)
      return __builtin_bswap16(v);
    else if constexpr (sizeof(T) == 4)
      return __builtin_bswap32(v);
    else
      return __builtin_bswap64(v);
  }
};

// One of the four ELF targets: class (32/64-bit) × byte order.
template <bool Is64, bool BigEndian>
struct Target {
  static constexpr bool is64 = Is64;
  static constexpr bool big_endian = BigEndian;
  using Half = Field<uint16_t, BigEndian>;
  using Word = Field<uint32_t, BigEndian>;
  using Xword = Field<uint64_t, BigEndian>;
  // Address/offset-sized field: 4 bytes in ELF32, 8 in ELF64.
  using Addr = std::conditional_t<Is64, Xword, Word>;
};

using Elf32LE = Target<false, false>;
using Elf32BE = Target<false, true>;
using Elf64LE = Target<true, false>;
using Elf64BE = Target<true, true>;

// MACRO(E) once for each target: the explicit instantiations of a template
// defined in a .cpp file (and the extern declarations in its header).
#define RUNPATCH_FOR_EACH_ELF_TARGET(MACRO) \
  MACRO(::runpatch::elf::Elf32LE)           \
  MACRO(::runpatch::elf::Elf32BE)           \
  MACRO(::runpatch::elf::Elf64LE)           \
  MACRO(::runpatch::elf::Elf64BE)

template <class E>
struct Ehdr {
  uint8_t e_ident[16];
  typename E::Half e_type;
  typename E::Half e_machine;
  typename E::Word e_version;
  typename E::Addr e_entry;
  typename E::Addr e_phoff;
  typename E::Addr e_shoff;
  typename E::Word e_flags;
  typename E::Half e_ehsize;
  typename E::Half e_phentsize;
  typename E::Half e_phnum;
  typename E::Half e_shentsize;
  typename E::Half e_shnum;
  typename E::Half e_shstrndx;
};

// Program headers differ in field order between the classes (p_flags moves).
template <class E>
struct Phdr64 {
  typename E::Word p_type;
  typename E::Word p_flags;
  typename E::Xword p_offset;
  typename E::Xword p_vaddr;
  typename E::Xword p_paddr;
  typename E::Xword p_filesz;
  typename E::Xword p_memsz;
  typename E::Xword p_align;
};
template <class E>
struct Phdr32 {
  typename E::Word p_type;
  typename E::Word p_offset;
  typename E::Word p_vaddr;
  typename E::Word p_paddr;
  typename E::Word p_filesz;
  typename E::Word p_memsz;
  typename E::Word p_flags;
  typename E::Word p_align;
};
template <class E>
using Phdr = std::conditional_t<E::is64, Phdr64<E>, Phdr32<E>>;

template <class E>
struct Shdr {
  typename E::Word sh_name;
  typename E::Word sh_type;
  typename E::Addr sh_flags;
  typename E::Addr sh_addr;
  typename E::Addr sh_offset;
  typename E::Addr sh_size;
  typename E::Word sh_link;
  typename E::Word sh_info;
  typename E::Addr sh_addralign;
  typename E::Addr sh_entsize;
};

template <class E>
struct Dyn {
  typename E::Addr d_tag;  // signed in the spec; every tag we handle is non-negative
  typename E::Addr d_val;
};

// Symbols differ in field order between the classes.
template <class E>
struct Sym64 {
  typename E::Word st_name;
  uint8_t st_info;
  uint8_t st_other;
  typename E::Half st_shndx;
  typename E::Xword st_value;
  typename E::Xword st_size;
};
template <class E>
struct Sym32 {
  typename E::Word st_name;
  typename E::Word st_value;
  typename E::Word st_size;
  uint8_t st_info;
  uint8_t st_other;
  typename E::Half st_shndx;
};
template <class E>
using Sym = std::conditional_t<E::is64, Sym64<E>, Sym32<E>>;

// Note header; the same 4-byte words in both classes.
template <class E>
struct Nhdr {
  typename E::Word n_namesz;
  typename E::Word n_descsz;
  typename E::Word n_type;
};

// Symbol versioning (.gnu.version_d / .gnu.version_r): the same layout in both
// classes; each entry links to the next by a byte offset from itself.
template <class E>
struct Verdef {
  typename E::Half vd_version;
  typename E::Half vd_flags;
  typename E::Half vd_ndx;
  typename E::Half vd_cnt;  // Verdaux entries
  typename E::Word vd_hash;
  typename E::Word vd_aux;   // first Verdaux, from this entry
  typename E::Word vd_next;  // next Verdef, from this entry; 0 ends the chain
};
template <class E>
struct Verdaux {
  typename E::Word vda_name;  // dynamic string table index
  typename E::Word vda_next;
};
template <class E>
struct Verneed {
  typename E::Half vn_version;
  typename E::Half vn_cnt;   // Vernaux entries
  typename E::Word vn_file;  // dynamic string table index of the library
  typename E::Word vn_aux;
  typename E::Word vn_next;
};
template <class E>
struct Vernaux {
  typename E::Word vna_hash;
  typename E::Half vna_flags;
  typename E::Half vna_other;
  typename E::Word vna_name;
  typename E::Word vna_next;
};

static_assert(sizeof(Ehdr<Elf64LE>) == 64 && sizeof(Ehdr<Elf32BE>) == 52);
static_assert(sizeof(Phdr<Elf64LE>) == 56 && sizeof(Phdr<Elf32BE>) == 32);
static_assert(sizeof(Shdr<Elf64LE>) == 64 && sizeof(Shdr<Elf32BE>) == 40);
static_assert(sizeof(Dyn<Elf64LE>) == 16 && sizeof(Dyn<Elf32BE>) == 8);
static_assert(sizeof(Sym<Elf64LE>) == 24 && sizeof(Sym<Elf32BE>) == 16);
static_assert(sizeof(Verdef<Elf64LE>) == 20 && sizeof(Verdaux<Elf32BE>) == 8);
static_assert(sizeof(Verneed<Elf64LE>) == 16 && sizeof(Vernaux<Elf32BE>) == 16);
static_assert(alignof(Ehdr<Elf64LE>) == 1 && alignof(Phdr<Elf64BE>) == 1);

// e_ident
inline constexpr int EI_CLASS = 4, EI_DATA = 5, EI_VERSION = 6, EI_OSABI = 7, EI_ABIVERSION = 8;
inline constexpr uint8_t ELFCLASS32 = 1, ELFCLASS64 = 2;
inline constexpr uint8_t ELFDATA2LSB = 1, ELFDATA2MSB = 2;
// EI_OSABI
inline constexpr uint8_t ELFOSABI_SYSV = 0, ELFOSABI_HPUX = 1, ELFOSABI_NETBSD = 2, ELFOSABI_GNU = 3, ELFOSABI_HURD = 4,
                         ELFOSABI_SOLARIS = 6, ELFOSABI_AIX = 7, ELFOSABI_IRIX = 8, ELFOSABI_FREEBSD = 9,
                         ELFOSABI_TRU64 = 10, ELFOSABI_MODESTO = 11, ELFOSABI_OPENBSD = 12, ELFOSABI_OPENVMS = 13,
                         ELFOSABI_ARM = 97, ELFOSABI_STANDALONE = 255;

// e_type
inline constexpr uint16_t ET_NONE = 0, ET_REL = 1, ET_EXEC = 2, ET_DYN = 3, ET_CORE = 4;

// Extended numbering: the real counts live in section header 0.
inline constexpr uint16_t PN_XNUM = 0xffff;
inline constexpr uint16_t SHN_UNDEF = 0, SHN_XINDEX = 0xffff;

// p_type
inline constexpr uint32_t PT_NULL = 0, PT_LOAD = 1, PT_DYNAMIC = 2, PT_INTERP = 3, PT_NOTE = 4, PT_SHLIB = 5,
                          PT_PHDR = 6, PT_TLS = 7;
inline constexpr uint32_t PT_GNU_EH_FRAME = 0x6474e550, PT_GNU_STACK = 0x6474e551, PT_GNU_RELRO = 0x6474e552,
                          PT_GNU_PROPERTY = 0x6474e553;
inline constexpr uint32_t PF_X = 1, PF_W = 2, PF_R = 4;

// n_type of the "FDO" dlopen-metadata note (systemd.io/ELF_DLOPEN_METADATA)
inline constexpr uint32_t NT_FDO_DLOPEN_METADATA = 0x407c0c0a;

// sh_type
inline constexpr uint32_t SHT_NULL = 0, SHT_PROGBITS = 1, SHT_SYMTAB = 2, SHT_STRTAB = 3, SHT_RELA = 4, SHT_HASH = 5,
                          SHT_DYNAMIC = 6, SHT_NOTE = 7, SHT_NOBITS = 8, SHT_REL = 9, SHT_DYNSYM = 11,
                          SHT_GNU_HASH = 0x6ffffff6, SHT_GNU_VERSYM = 0x6fffffff;
inline constexpr uint64_t SHF_WRITE = 1, SHF_ALLOC = 2, SHF_EXECINSTR = 4;
inline constexpr uint32_t SHN_LORESERVE = 0xff00;

// d_tag
inline constexpr uint64_t DT_NULL = 0, DT_NEEDED = 1, DT_STRTAB = 5, DT_STRSZ = 10, DT_SONAME = 14, DT_RPATH = 15,
                          DT_DEBUG = 21, DT_RUNPATH = 29, DT_FLAGS = 30, DT_FLAGS_1 = 0x6ffffffb,
                          DT_MIPS_RLD_MAP_REL = 0x70000035;  // relative to the entry's own address
// Tables the dynamic section points at, and string-valued tags beyond the common ones.
inline constexpr uint64_t DT_HASH = 4, DT_SYMTAB = 6, DT_RELA = 7, DT_SYMENT = 11, DT_REL = 17, DT_JMPREL = 23,
                          DT_RELR = 36, DT_GNU_HASH = 0x6ffffef5, DT_VERSYM = 0x6ffffff0, DT_VERDEF = 0x6ffffffc,
                          DT_VERDEFNUM = 0x6ffffffd, DT_VERNEED = 0x6ffffffe, DT_VERNEEDNUM = 0x6fffffff,
                          DT_CONFIG = 0x6ffffefa, DT_DEPAUDIT = 0x6ffffefb, DT_AUDIT = 0x6ffffefc,
                          DT_AUXILIARY = 0x7ffffffd, DT_USED = 0x7ffffffe, DT_FILTER = 0x7fffffff;
// Relocation tables' sizes and kinds, and the tables a symbol index also indexes.
inline constexpr uint64_t DT_PLTRELSZ = 2, DT_RELASZ = 8, DT_RELAENT = 9, DT_RELSZ = 18, DT_RELENT = 19, DT_PLTREL = 20,
                          DT_SYMTAB_SHNDX = 34, DT_MIPS_XHASH = 0x70000036;
// The tables the loader finds only through their dynamic entry (so an editor
// may move one: a copy and a new address in its entry).
inline constexpr uint64_t kTablesFoundThroughDynamic[] = {DT_GNU_HASH, DT_HASH,    DT_SYMTAB,
                                                          DT_VERSYM,   DT_VERNEED, DT_VERDEF};
constexpr bool is_table_found_through_dynamic(uint64_t tag) {
  for (uint64_t t : kTablesFoundThroughDynamic)
    if (t == tag) return true;
  return false;
}
// A program's relocation tables, which only ld.so reads.
inline constexpr uint64_t kRelocationTables[] = {DT_RELA, DT_REL, DT_JMPREL, DT_RELR};
// Those and the tables found through the dynamic section: an editor may move
// them within their segment (a new address in their entry).
constexpr bool is_table_movable_in_segment(uint64_t tag) {
  if (is_table_found_through_dynamic(tag)) return true;
  for (uint64_t t : kRelocationTables)
    if (t == tag) return true;
  return false;
}
inline constexpr uint8_t STT_SECTION = 3;
inline constexpr uint64_t DF_ORIGIN = 0x1;
inline constexpr uint64_t DF_1_NOW = 0x1, DF_1_GLOBAL = 0x2, DF_1_GROUP = 0x4, DF_1_NODELETE = 0x8,
                          DF_1_LOADFLTR = 0x10, DF_1_INITFIRST = 0x20, DF_1_NOOPEN = 0x40, DF_1_ORIGIN = 0x80,
                          DF_1_DIRECT = 0x100, DF_1_INTERPOSE = 0x400, DF_1_NODEFLIB = 0x800, DF_1_NODUMP = 0x1000,
                          DF_1_PIE = 0x08000000;
// .gnu.version entries: 1 is the unversioned global definition.
inline constexpr uint16_t VER_NDX_LOCAL = 0, VER_NDX_GLOBAL = 1;

// e_machine values we name; any other value is still handled.
inline constexpr uint16_t EM_386 = 3, EM_PPC = 20, EM_PPC64 = 21, EM_S390 = 22, EM_ARM = 40, EM_X86_64 = 62,
                          EM_AARCH64 = 183, EM_RISCV = 243, EM_MIPS = 8, EM_SPARCV9 = 43, EM_LOONGARCH = 258;

}  // namespace runpatch::elf
