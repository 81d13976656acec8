// Builds small ELF images in memory for every class and byte order, so unit
// tests can state exact contents and corrupt exact fields.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace runpatch::test {

// One ELF class and byte order: the synthetic tests run on all four.
struct ElfFlavour {
  bool is64 = true;
  bool big = false;
};
std::vector<ElfFlavour> every_elf_flavour();
std::string flavour_name(const ElfFlavour& flavour);  // Elf64LE, Elf64BE, Elf32LE, Elf32BE
// The machine of a flavour's files where a test's files should be loadable:
// x86-64, ppc64, i386, ppc (loader_listing.hpp's loader_for runs each).
uint16_t flavour_machine(const ElfFlavour& flavour);
// A test-name generator for INSTANTIATE_TEST_SUITE_P over every_elf_flavour().
struct FlavourTestName {
  template <class ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    return flavour_name(info.param);
  }
};

struct SyntheticSpec {
  bool is64 = true;
  bool big_endian = false;
  uint16_t type = 3;      // ET_DYN
  uint16_t machine = 62;  // EM_X86_64
  uint8_t osabi = 0;
  bool with_dynamic = true;
  bool with_section_headers = true;
  std::vector<std::string> needed;
  std::optional<std::string> runpath, rpath, soname, interpreter;
  uint64_t flags_1 = 0;
  int spare_dynamic_slots = 0;  // extra DT_NULL entries after the terminator
  // A .note.gnu.property note (x86 feature bits) described by both PT_NOTE and
  // PT_GNU_PROPERTY, as x86-64 and aarch64 linkers emit it; after the interpreter.
  bool gnu_property_note = false;
  // Code (a .text section) right after the program header table: nothing
  // there can move, so a table that must grow moves itself (rule 5).
  bool code_after_headers = false;
};

// Where the builder put things, for tests that corrupt them.
struct SyntheticLayout {
  uint64_t phoff = 0, phnum = 0, phentsize = 0;
  uint64_t shoff = 0, shnum = 0, shentsize = 0;
  uint64_t dynamic_offset = 0, dynamic_entries = 0, dynamic_entsize = 0;
  uint64_t dynstr_offset = 0, dynstr_size = 0;
  uint64_t strtab_tag_index = 0;  // index of DT_STRTAB among the dynamic entries
};

struct SyntheticElf {
  std::vector<uint8_t> bytes;
  SyntheticLayout layout;
};

SyntheticElf build_synthetic_elf(const SyntheticSpec& spec);

// Writes bytes to path (creating parents).
void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_file(const std::filesystem::path& path);

// Stores v at offset with the given width and byte order.
void poke(std::vector<uint8_t>& bytes, uint64_t offset, int width, bool big_endian, uint64_t v);

// Reads the value of the given width and byte order at offset.
uint64_t peek(const std::vector<uint8_t>& bytes, uint64_t offset, int width, bool big_endian);

// A field of the ELF header, a program header or a section header: its
// offset in the header and its width, in each class (the gABI's tables).
struct HeaderField {
  int offset64, offset32, width64, width32;
};
using PhdrField = HeaderField;
inline constexpr HeaderField kEhdrPhoff{32, 28, 8, 4}, kEhdrPhentsize{54, 42, 2, 2}, kEhdrPhnum{56, 44, 2, 2};
inline constexpr HeaderField kPhdrType{0, 0, 4, 4}, kPhdrOffset{8, 4, 8, 4}, kPhdrVaddr{16, 8, 8, 4},
    kPhdrFilesz{32, 16, 8, 4}, kPhdrMemsz{40, 20, 8, 4}, kPhdrAlign{48, 28, 8, 4};
inline constexpr HeaderField kShdrInfo{44, 28, 4, 4};

// Reads `field` of the ELF header, or of the program header at `header`.
uint64_t get_ehdr(const std::vector<uint8_t>& bytes, const ElfFlavour& flavour, HeaderField field);
uint64_t get_field(const std::vector<uint8_t>& bytes, uint64_t header, const ElfFlavour& flavour, HeaderField field);

// Sets `field` of the ELF header of a built image (its class and byte order).
void set_ehdr(std::vector<uint8_t>& bytes, const ElfFlavour& flavour, HeaderField field, uint64_t value);
// Sets `field` of section header `index` (the table at layout.shoff).
void set_shdr(std::vector<uint8_t>& bytes, const SyntheticLayout& layout, const ElfFlavour& flavour, uint64_t index,
              HeaderField field, uint64_t value);

// Sets `field` of program header `index` of a built image (its class and byte order).
void set_phdr(std::vector<uint8_t>& bytes, const SyntheticLayout& layout, const ElfFlavour& flavour, uint64_t index,
              PhdrField field, uint64_t value);
// A test case's file: the image `shape` describes for `flavour`, changed by
// `reshape`, written as lib.so into a fresh scratch directory `scratch`.
using SpecShape = std::function<void(SyntheticSpec&)>;
using ImageReshape = std::function<void(std::vector<uint8_t>&, const SyntheticLayout&, const ElfFlavour&)>;
struct SyntheticFile {
  std::filesystem::path path;
  std::vector<uint8_t> bytes;  // as written
};
SyntheticFile write_synthetic_case(const std::string& scratch, const ElfFlavour& flavour, const SpecShape& shape,
                                   const ImageReshape& reshape);

// Retags dynamic entry `index` (its value stays).
void set_dynamic_tag(std::vector<uint8_t>& bytes, const SyntheticLayout& layout, const ElfFlavour& flavour,
                     uint64_t index, uint64_t tag);
// Sets the value (d_val/d_ptr) of dynamic entry `index` (its tag stays).
void set_dynamic_value(std::vector<uint8_t>& bytes, const SyntheticLayout& layout, const ElfFlavour& flavour,
                       uint64_t index, uint64_t value);

}  // namespace runpatch::test
