#include "elf_image.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "editing/symbol_rename.hpp"
#include "fixtures.hpp"
#include "runpatch/reading/elf_types.hpp"

namespace runpatch::test {

DynamicEntry dynamic_value(uint64_t tag, uint64_t value) { return {tag, value, {}, {}, {}}; }
DynamicEntry dynamic_string(uint64_t tag, const std::string& string) { return {tag, 0, string, {}, {}}; }
DynamicEntry dynamic_address(uint64_t tag, const std::string& section) { return {tag, 0, {}, section, {}}; }
DynamicEntry dynamic_size(uint64_t tag, const std::string& section) { return {tag, 0, {}, {}, section}; }

namespace {

using namespace runpatch::elf;

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return alignment > 1 ? (value + alignment - 1) / alignment * alignment : value;
}

}  // namespace

uint64_t dynamic_symbol_size(const ElfFlavour& flavour) { return flavour.is64 ? 24 : 16; }

uint64_t relocation_entry_size(const ElfFlavour& flavour, bool rela) { return (rela ? 3 : 2) * (flavour.is64 ? 8 : 4); }

std::vector<uint8_t> note_bytes(const ElfFlavour& flavour, uint32_t type, const std::string& name,
                                const std::vector<uint8_t>& descriptor) {
  uint64_t name_size = name.size() + 1, padded_name = align_up(name_size, 4);
  std::vector<uint8_t> out(12 + padded_name + align_up(descriptor.size(), 4), 0);
  poke(out, 0, 4, flavour.big, name_size);
  poke(out, 4, 4, flavour.big, descriptor.size());
  poke(out, 8, 4, flavour.big, type);
  std::copy(name.begin(), name.end(), out.begin() + 12);
  std::copy(descriptor.begin(), descriptor.end(), out.begin() + 12 + int64_t(padded_name));
  return out;
}

std::vector<uint8_t> relocation_table(const ElfFlavour& flavour, bool rela,
                                      const std::vector<RelocationDesc>& entries) {
  const int word = flavour.is64 ? 8 : 4;
  const uint64_t entry = relocation_entry_size(flavour, rela);
  std::vector<uint8_t> out(entries.size() * entry, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const RelocationDesc& r = entries[i];
    uint64_t info = flavour.is64 ? (r.symbol << 32 | r.type) : (r.symbol << 8 | r.type);
    poke(out, i * entry, word, flavour.big, r.where);
    poke(out, i * entry + word, word, flavour.big, info);
    if (rela) poke(out, i * entry + 2 * word, word, flavour.big, r.addend);
  }
  return out;
}

ImageDesc library_image(const ElfFlavour& flavour, uint16_t machine, const std::string& soname) {
  const uint64_t word = flavour.is64 ? 8 : 4;
  ImageDesc d{.flavour = flavour, .machine = machine};
  d.sections = {
      {.name = ".dynsym", .type = SHT_DYNSYM, .flags = SHF_ALLOC, .addralign = word, .link = ".dynstr"},
      {.name = ".dynstr", .type = SHT_STRTAB, .flags = SHF_ALLOC},
      {.name = ".dynamic",
       .type = SHT_DYNAMIC,
       .flags = SHF_ALLOC | SHF_WRITE,
       .addralign = word,
       .entries = {dynamic_string(DT_SONAME, soname), dynamic_address(DT_SYMTAB, ".dynsym"),
                   dynamic_value(DT_SYMENT, dynamic_symbol_size(flavour)), dynamic_address(DT_STRTAB, ".dynstr"),
                   dynamic_size(DT_STRSZ, ".dynstr"), dynamic_value(DT_NULL, 0)},
       .link = ".dynstr"}};
  d.segments = {{PT_LOAD, PF_R | PF_W, 0x1000, kFileStart, kFileEnd}, {PT_DYNAMIC, PF_R | PF_W, word, ".dynamic"}};
  return d;
}

SyntheticFile write_image_case(const std::string& scratch, const ImageDesc& desc) {
  SyntheticFile file{scratch_dir(scratch) / "lib.so", build_elf_image(desc).bytes};
  write_file(file.path, file.bytes);
  return file;
}

namespace {

// A string table's contents: the empty string, the listed strings, then every
// string a dynamic section linked to it names (each once).
std::vector<uint8_t> string_table(const SectionDesc& table, const ImageDesc& desc,
                                  std::map<std::string, uint64_t>& offsets) {
  std::string out(table.bytes.begin(), table.bytes.end());
  if (out.empty()) out += '\0';
  auto add = [&](const std::string& s) {
    if (offsets.count(s)) return;
    offsets[s] = out.size();
    out += s;
    out += '\0';
  };
  for (const auto& s : table.strings) add(s);
  for (const auto& section : desc.sections) {
    if (section.link != table.name) continue;
    for (const auto& entry : section.entries)
      if (!entry.string.empty()) add(entry.string);
    for (const auto& symbol : section.symbols) add(symbol.name);
  }
  return {out.begin(), out.end()};
}

std::vector<uint8_t> section_names(const ImageDesc& desc, std::map<std::string, uint64_t>& offsets) {
  SectionDesc names{".shstrtab", SHT_STRTAB};
  for (const auto& section : desc.sections) names.strings.push_back(section.name);
  names.strings.push_back(".shstrtab");
  ImageDesc none;
  return string_table(names, none, offsets);
}

// A DT_HASH table over `symbols` (after the null one): one bucket per two
// symbols, each chain newest first, as linkers build it. (The library's hash
// function: the loader, relocating against such a table, checks it too.)
std::vector<uint8_t> sysv_hash_table(const ElfFlavour& f, const std::vector<SymbolDesc>& symbols) {
  const uint64_t count = symbols.size() + 1, buckets = count / 2 + 1;
  std::vector<uint8_t> out((2 + buckets + count) * 4, 0);
  poke(out, 0, 4, f.big, buckets);
  poke(out, 4, 4, f.big, count);
  for (uint64_t i = 1; i < count; ++i) {
    uint64_t bucket_at = (2 + sysv_symbol_hash(symbols[i - 1].name) % buckets) * 4;
    poke(out, (2 + buckets + i) * 4, 4, f.big, peek(out, bucket_at, 4, f.big));
    poke(out, bucket_at, 4, f.big, i);
  }
  return out;
}

// A DT_GNU_HASH table over `symbols` (after the null one, all hashed): one
// bucket, so any order is bucket order; a one-word bloom filter with both
// bits of each name set.
std::vector<uint8_t> gnu_hash_table(const ElfFlavour& f, const std::vector<SymbolDesc>& symbols) {
  const uint64_t word = f.is64 ? 8 : 4, bits = word * 8, shift = 6, first = 1;
  std::vector<uint8_t> out(16 + word + 4 + symbols.size() * 4, 0);
  poke(out, 0, 4, f.big, 1);  // buckets
  poke(out, 4, 4, f.big, first);
  poke(out, 8, 4, f.big, 1);  // bloom words
  poke(out, 12, 4, f.big, shift);
  uint64_t bloom = 0;
  for (size_t i = 0; i < symbols.size(); ++i) {
    uint32_t h = gnu_symbol_hash(symbols[i].name);
    bloom |= uint64_t(1) << (h % bits) | uint64_t(1) << ((h >> shift) % bits);
    bool last = i + 1 == symbols.size();
    poke(out, 16 + word + 4 + i * 4, 4, f.big, last ? (h | 1u) : (h & ~1u));
  }
  poke(out, 16, int(word), f.big, bloom);
  if (!symbols.empty()) poke(out, 16 + word, 4, f.big, first);  // the bucket's first symbol
  return out;
}

template <class E>
class ImageBuilder {
 public:
  explicit ImageBuilder(const ImageDesc& desc) : desc_(desc) {}

  ElfImage build() {
    place_sections();
    image_.bytes.assign(file_size_, 0);
    write_elf_header();
    for (size_t i = 0; i < desc_.segments.size(); ++i) write_program_header(i);
    for (const auto& section : desc_.sections) write_contents(section);
    write_contents(names_section());
    if (desc_.section_headers) write_section_headers();
    return std::move(image_);
  }

 private:
  SectionDesc names_section() const { return SectionDesc{".shstrtab", SHT_STRTAB}; }

  void place_sections() {
    image_.phoff = sizeof(Ehdr<E>);
    image_.phnum = desc_.segments.size();
    image_.phentsize = sizeof(Phdr<E>);
    uint64_t at = image_.phoff + image_.phnum * image_.phentsize;
    uint64_t index = 1;
    for (const auto& section : desc_.sections) {
      if (image_.sections.count(section.name)) throw std::invalid_argument("two sections named " + section.name);
      contents_[section.name] = contents_of(section);
      at = align_up(at, section.addralign);
      uint64_t size = contents_[section.name].size();
      image_.sections[section.name] = {index++, at, size, desc_.base_address + at + section.address_delta};
      at += size;
    }
    contents_[".shstrtab"] = section_names(desc_, name_offsets_);
    image_.sections[".shstrtab"] = {index++, at, contents_[".shstrtab"].size(), 0};
    at += contents_[".shstrtab"].size();
    if (desc_.section_headers) {
      image_.shoff = align_up(at, 8);
      image_.shnum = index;
      image_.shentsize = sizeof(Shdr<E>);
      at = image_.shoff + image_.shnum * image_.shentsize;
    }
    file_size_ = at;
  }

  std::vector<uint8_t> contents_of(const SectionDesc& section) {
    if (section.type == SHT_STRTAB) return string_table(section, desc_, image_.string_offsets[section.name]);
    if (section.type == SHT_DYNAMIC) return std::vector<uint8_t>(section.entries.size() * sizeof(Dyn<E>), 0);
    if (section.type == SHT_DYNSYM) return std::vector<uint8_t>((section.symbols.size() + 1) * sizeof(Sym<E>), 0);
    if (section.type == SHT_HASH) return sysv_hash_table(desc_.flavour, symbols_of(section.link));
    if (section.type == SHT_GNU_HASH) return gnu_hash_table(desc_.flavour, symbols_of(section.link));
    return section.bytes;
  }

  const std::vector<SymbolDesc>& symbols_of(const std::string& name) const {
    for (const auto& section : desc_.sections)
      if (section.name == name) return section.symbols;
    throw std::invalid_argument("no symbol table named " + name);
  }

  const PlacedSection& placed(const std::string& name) const {
    auto found = image_.sections.find(name);
    if (found == image_.sections.end()) throw std::invalid_argument("no section named " + name);
    return found->second;
  }

  void write_elf_header() {
    auto& eh = *reinterpret_cast<Ehdr<E>*>(image_.bytes.data());
    std::memcpy(eh.e_ident, "\177ELF", 4);
    eh.e_ident[EI_CLASS] = E::is64 ? ELFCLASS64 : ELFCLASS32;
    eh.e_ident[EI_DATA] = E::big_endian ? ELFDATA2MSB : ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = 1;
    eh.e_ident[EI_OSABI] = desc_.osabi;
    eh.e_type = desc_.type;
    eh.e_machine = desc_.machine;
    eh.e_version = 1;
    eh.e_phoff = image_.phoff;
    eh.e_shoff = image_.shoff;
    eh.e_ehsize = sizeof(Ehdr<E>);
    eh.e_phentsize = sizeof(Phdr<E>);
    eh.e_phnum = static_cast<uint16_t>(image_.phnum);
    eh.e_shentsize = static_cast<uint16_t>(image_.shentsize);
    eh.e_shnum = static_cast<uint16_t>(image_.shnum);
    eh.e_shstrndx = static_cast<uint16_t>(desc_.section_headers ? image_.shnum - 1 : 0);
  }

  // [offset, end) and the address of offset of what a segment names at one end.
  uint64_t start_of(const std::string& name) const {
    if (name == kFileStart) return 0;
    if (name == kProgramHeaders) return image_.phoff;
    return placed(name).offset;
  }
  uint64_t end_of(const std::string& name) const {
    if (name == kFileStart) return 0;
    if (name == kFileEnd) return file_size_;
    if (name == kProgramHeaders) return image_.phoff + image_.phnum * image_.phentsize;
    return placed(name).offset + placed(name).size;
  }
  uint64_t address_of(const std::string& name) const {
    if (name == kFileStart || name == kProgramHeaders) return desc_.base_address + start_of(name);
    return placed(name).address;
  }

  void write_program_header(size_t i) {
    const SegmentDesc& segment = desc_.segments[i];
    uint64_t start = start_of(segment.from), end = end_of(segment.to.empty() ? segment.from : segment.to);
    if (end < start) throw std::invalid_argument("segment " + std::to_string(i) + " ends before it starts");
    auto& ph = reinterpret_cast<Phdr<E>*>(image_.bytes.data() + image_.phoff)[i];
    ph.p_type = segment.type;
    ph.p_flags = segment.flags;
    ph.p_offset = start;
    ph.p_vaddr = address_of(segment.from);
    ph.p_paddr = address_of(segment.from);
    ph.p_filesz = end - start;
    ph.p_memsz = end - start + segment.extra_memsz;
    ph.p_align = segment.align;
  }

  void write_contents(const SectionDesc& section) {
    const auto& bytes = contents_.at(section.name);
    std::copy(bytes.begin(), bytes.end(), image_.bytes.begin() + int64_t(placed(section.name).offset));
    if (section.type == SHT_DYNAMIC) write_dynamic_entries(section);
    if (section.type == SHT_DYNSYM) write_symbols(section);
  }

  void write_symbols(const SectionDesc& section) {
    auto* sym = reinterpret_cast<Sym<E>*>(image_.bytes.data() + placed(section.name).offset);
    for (size_t k = 0; k < section.symbols.size(); ++k) {
      const SymbolDesc& symbol = section.symbols[k];
      auto& s = sym[k + 1];
      s.st_name = static_cast<uint32_t>(image_.string_offsets.at(section.link).at(symbol.name));
      s.st_value = symbol.value;
      s.st_size = symbol.size;
      s.st_info = symbol.info;
      s.st_other = symbol.other;
      s.st_shndx = symbol.shndx;
    }
  }

  void write_dynamic_entries(const SectionDesc& section) {
    auto* dyn = reinterpret_cast<Dyn<E>*>(image_.bytes.data() + placed(section.name).offset);
    for (size_t k = 0; k < section.entries.size(); ++k) {
      const DynamicEntry& entry = section.entries[k];
      uint64_t value = entry.value;
      if (!entry.string.empty()) value = image_.string_offsets.at(section.link).at(entry.string);
      if (!entry.address_of.empty()) value = placed(entry.address_of).address;
      if (!entry.size_of.empty()) value = placed(entry.size_of).size;
      dyn[k].d_tag = entry.tag;
      dyn[k].d_val = value;
    }
  }

  void write_section_headers() {
    auto* sh = reinterpret_cast<Shdr<E>*>(image_.bytes.data() + image_.shoff);
    auto header = [&](const SectionDesc& section) {
      const PlacedSection& place = placed(section.name);
      auto& h = sh[place.index];
      h.sh_name = static_cast<uint32_t>(name_offsets_.at(section.name));
      h.sh_type = section.type;
      h.sh_flags = section.flags;
      h.sh_addr = (section.flags & SHF_ALLOC) ? place.address : 0;
      h.sh_offset = place.offset;
      h.sh_size = place.size;
      h.sh_link = section.link.empty() ? 0 : static_cast<uint32_t>(placed(section.link).index);
      h.sh_addralign = section.addralign;
      h.sh_entsize = entry_size(section.type);
      if (section.type == SHT_DYNSYM) h.sh_info = 1;  // the first global symbol
    };
    for (const auto& section : desc_.sections) header(section);
    header(names_section());
  }

  static uint64_t entry_size(uint32_t type) {
    if (type == SHT_DYNAMIC) return sizeof(Dyn<E>);
    if (type == SHT_DYNSYM) return sizeof(Sym<E>);
    return type == SHT_HASH ? 4 : 0;
  }

  const ImageDesc& desc_;
  ElfImage image_;
  std::map<std::string, std::vector<uint8_t>> contents_;
  std::map<std::string, uint64_t> name_offsets_;
  uint64_t file_size_ = 0;
};

}  // namespace

ElfImage build_elf_image(const ImageDesc& desc) {
  const ElfFlavour& f = desc.flavour;
  if (f.is64) return f.big ? ImageBuilder<Elf64BE>(desc).build() : ImageBuilder<Elf64LE>(desc).build();
  return f.big ? ImageBuilder<Elf32BE>(desc).build() : ImageBuilder<Elf32LE>(desc).build();
}

std::string program_header_table_defects(const std::vector<uint8_t>& bytes, const ElfFlavour& flavour) {
  const uint64_t phoff = get_ehdr(bytes, flavour, kEhdrPhoff), phentsize = get_ehdr(bytes, flavour, kEhdrPhentsize);
  const uint64_t size = get_ehdr(bytes, flavour, kEhdrPhnum) * phentsize;
  std::optional<uint64_t> mapped_at;  // the table's address, from the PT_LOAD holding it
  std::vector<uint64_t> phdr_headers;
  for (uint64_t at = phoff; at < phoff + size; at += phentsize) {
    uint64_t type = get_field(bytes, at, flavour, kPhdrType), offset = get_field(bytes, at, flavour, kPhdrOffset);
    if (type == elf::PT_PHDR) phdr_headers.push_back(at);
    if (type == elf::PT_LOAD && offset <= phoff && phoff + size <= offset + get_field(bytes, at, flavour, kPhdrFilesz))
      mapped_at = get_field(bytes, at, flavour, kPhdrVaddr) + (phoff - offset);
  }
  if (!mapped_at) return "no PT_LOAD holds the program header table";
  // A program's AT_PHDR as kernels before 5.18 and qemu-user compute it: the first PT_LOAD's address less its offset,
  // plus e_phoff.
  std::optional<uint64_t> first_load_base;
  bool program = false;
  for (uint64_t at = phoff; at < phoff + size; at += phentsize) {
    uint64_t type = get_field(bytes, at, flavour, kPhdrType);
    program = program || type == elf::PT_INTERP;
    if (type == elf::PT_LOAD && !first_load_base)
      first_load_base = get_field(bytes, at, flavour, kPhdrVaddr) - get_field(bytes, at, flavour, kPhdrOffset);
  }
  if (program && first_load_base && *first_load_base + phoff != *mapped_at)
    return "the table is not where e_phoff says to kernels before 5.18";
  for (uint64_t at : phdr_headers) {
    if (get_field(bytes, at, flavour, kPhdrOffset) != phoff || get_field(bytes, at, flavour, kPhdrFilesz) != size ||
        get_field(bytes, at, flavour, kPhdrMemsz) != size || get_field(bytes, at, flavour, kPhdrVaddr) != *mapped_at)
      return "PT_PHDR does not describe the program header table";
  }
  return "";
}

SyntheticLayout layout_of(const ElfImage& image, const ImageDesc& desc) {
  SyntheticLayout layout;
  layout.phoff = image.phoff;
  layout.phnum = image.phnum;
  layout.phentsize = image.phentsize;
  layout.shoff = image.shoff;
  layout.shnum = image.shnum;
  layout.shentsize = image.shentsize;
  for (const auto& section : desc.sections) {
    const PlacedSection& place = image.section(section.name);
    if (section.type == elf::SHT_DYNAMIC) {
      layout.dynamic_offset = place.offset;
      layout.dynamic_entries = section.entries.size();
      layout.dynamic_entsize = desc.flavour.is64 ? 16 : 8;
      auto strtab = std::find_if(section.entries.begin(), section.entries.end(),
                                 [](const DynamicEntry& e) { return e.tag == elf::DT_STRTAB; });
      layout.strtab_tag_index = uint64_t(strtab - section.entries.begin());
    }
    if (section.name == ".dynstr") {
      layout.dynstr_offset = place.offset;
      layout.dynstr_size = place.size;
    }
  }
  return layout;
}

}  // namespace runpatch::test
