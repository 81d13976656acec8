#include "synthetic_elf.hpp"

#include <algorithm>
#include <fstream>

#include "elf_image.hpp"
#include "fixtures.hpp"
#include "runpatch/reading/elf_types.hpp"

namespace runpatch::test {

namespace {

using namespace runpatch::elf;

// NT_GNU_PROPERTY_TYPE_0 holding GNU_PROPERTY_X86_FEATURE_1_AND (IBT and
// SHSTK), its descriptor padded to the class's word.
std::vector<uint8_t> gnu_property_note(const ElfFlavour& f) {
  std::vector<uint8_t> descriptor(f.is64 ? 16 : 12, 0);
  poke(descriptor, 0, 4, f.big, 0xc0000002);  // pr_type
  poke(descriptor, 4, 4, f.big, 4);           // pr_datasz
  poke(descriptor, 8, 4, f.big, 3);           // pr_data
  return note_bytes(f, 5, "GNU", descriptor);
}

}  // namespace

// The spec's file as data: the interpreter, the note, the dynamic strings and
// the dynamic section after the program header table, all in one read-write
// PT_LOAD from the start of the file to its end (vaddr == offset).
ImageDesc describe_synthetic_elf(const SyntheticSpec& spec) {
  ImageDesc desc;
  desc.flavour = {spec.is64, spec.big_endian};
  desc.type = spec.type;
  desc.machine = spec.machine;
  desc.osabi = spec.osabi;
  desc.section_headers = spec.with_section_headers;
  const uint64_t word = spec.is64 ? 8 : 4;
  if (spec.code_after_headers) {
    SectionDesc text{".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 16};
    text.bytes.assign(64, 0xf4);  // hlt: never run, only in the way
    desc.sections.push_back(text);
  }
  if (spec.interpreter) {
    SectionDesc interp{".interp", SHT_PROGBITS, SHF_ALLOC};
    interp.bytes.assign(spec.interpreter->begin(), spec.interpreter->end());
    interp.bytes.push_back(0);
    desc.sections.push_back(interp);
    desc.segments.push_back({PT_INTERP, PF_R, 1, ".interp"});
  }
  if (spec.gnu_property_note) {
    SectionDesc note{".note.gnu.property", SHT_NOTE, SHF_ALLOC, word};
    note.bytes = gnu_property_note(desc.flavour);
    desc.sections.push_back(note);
    desc.segments.push_back({PT_NOTE, PF_R, word, ".note.gnu.property"});
    desc.segments.push_back({PT_GNU_PROPERTY, PF_R, word, ".note.gnu.property"});
  }
  SectionDesc dynstr{".dynstr", SHT_STRTAB, SHF_ALLOC};
  std::vector<DynamicEntry> entries;
  auto add_string = [&](uint64_t tag, const std::string& s) {
    dynstr.strings.push_back(s);
    entries.push_back(dynamic_string(tag, s));
  };
  for (const auto& n : spec.needed) add_string(DT_NEEDED, n);
  if (spec.soname) add_string(DT_SONAME, *spec.soname);
  if (spec.rpath) add_string(DT_RPATH, *spec.rpath);
  if (spec.runpath) add_string(DT_RUNPATH, *spec.runpath);
  if (spec.flags_1) entries.push_back(dynamic_value(DT_FLAGS_1, spec.flags_1));
  entries.push_back(dynamic_address(DT_STRTAB, ".dynstr"));
  entries.push_back(dynamic_size(DT_STRSZ, ".dynstr"));
  for (int i = 0; i <= spec.spare_dynamic_slots; ++i) entries.push_back(dynamic_value(DT_NULL, 0));
  desc.sections.push_back(dynstr);
  desc.segments.push_back({PT_LOAD, PF_R | PF_W, 0x1000, kFileStart, kFileEnd});
  if (spec.with_dynamic) {
    SectionDesc dynamic{".dynamic", SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE, 8};
    dynamic.entries = entries;
    dynamic.link = ".dynstr";
    desc.sections.push_back(dynamic);
    desc.segments.push_back({PT_DYNAMIC, PF_R | PF_W, 8, ".dynamic"});
  }
  return desc;
}

std::vector<ElfFlavour> every_elf_flavour() { return {{true, false}, {true, true}, {false, false}, {false, true}}; }

std::string flavour_name(const ElfFlavour& flavour) {
  return std::string(flavour.is64 ? "Elf64" : "Elf32") + (flavour.big ? "BE" : "LE");
}

uint16_t flavour_machine(const ElfFlavour& flavour) {
  if (flavour.is64) return flavour.big ? EM_PPC64 : EM_X86_64;
  return flavour.big ? EM_PPC : EM_386;
}

SyntheticElf build_synthetic_elf(const SyntheticSpec& spec) {
  ImageDesc desc = describe_synthetic_elf(spec);
  ElfImage image = build_elf_image(desc);
  SyntheticLayout layout = layout_of(image, desc);
  return {std::move(image.bytes), layout};
}

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Sized from the file and read in one go: tests read 286 MB CUDA libraries,
// which a byte-wise stream iterator copied and regrew for 30 s (3 min under ASan).
std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::vector<uint8_t> bytes(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

void poke(std::vector<uint8_t>& bytes, uint64_t offset, int width, bool big_endian, uint64_t v) {
  for (int i = 0; i < width; ++i) {
    int shift = 8 * (big_endian ? width - 1 - i : i);
    bytes.at(offset + i) = static_cast<uint8_t>(v >> shift);
  }
}

uint64_t peek(const std::vector<uint8_t>& bytes, uint64_t offset, int width, bool big_endian) {
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) {
    int shift = 8 * (big_endian ? width - 1 - i : i);
    v |= uint64_t(bytes.at(offset + i)) << shift;
  }
  return v;
}

namespace {
// Where `field` of the header at `header` lies, and its width, in the flavour's class.
uint64_t field_at(uint64_t header, const ElfFlavour& flavour, HeaderField field) {
  return header + uint64_t(flavour.is64 ? field.offset64 : field.offset32);
}
int field_width(const ElfFlavour& flavour, HeaderField field) { return flavour.is64 ? field.width64 : field.width32; }
}  // namespace

uint64_t get_field(const std::vector<uint8_t>& bytes, uint64_t header, const ElfFlavour& flavour, HeaderField field) {
  return peek(bytes, field_at(header, flavour, field), field_width(flavour, field), flavour.big);
}

uint64_t get_ehdr(const std::vector<uint8_t>& bytes, const ElfFlavour& flavour, HeaderField field) {
  return get_field(bytes, 0, flavour, field);
}

namespace {
void set_field(std::vector<uint8_t>& bytes, uint64_t header, const ElfFlavour& flavour, HeaderField field,
               uint64_t value) {
  poke(bytes, field_at(header, flavour, field), field_width(flavour, field), flavour.big, value);
}
}  // namespace

void set_ehdr(std::vector<uint8_t>& bytes, const ElfFlavour& flavour, HeaderField field, uint64_t value) {
  set_field(bytes, 0, flavour, field, value);
}

void set_phdr(std::vector<uint8_t>& bytes, const SyntheticLayout& layout, const ElfFlavour& flavour, uint64_t index,
              PhdrField field, uint64_t value) {
  set_field(bytes, layout.phoff + index * layout.phentsize, flavour, field, value);
}

void set_shdr(std::vector<uint8_t>& bytes, const SyntheticLayout& layout, const ElfFlavour& flavour, uint64_t index,
              HeaderField field, uint64_t value) {
  set_field(bytes, layout.shoff + index * layout.shentsize, flavour, field, value);
}

SyntheticFile write_synthetic_case(const std::string& scratch, const ElfFlavour& flavour, const SpecShape& shape,
                                   const ImageReshape& reshape) {
  SyntheticSpec spec;
  spec.is64 = flavour.is64;
  spec.big_endian = flavour.big;
  shape(spec);
  auto built = build_synthetic_elf(spec);
  reshape(built.bytes, built.layout, flavour);
  SyntheticFile file{scratch_dir(scratch) / "lib.so", std::move(built.bytes)};
  write_file(file.path, file.bytes);
  return file;
}

void set_dynamic_tag(std::vector<uint8_t>& bytes, const SyntheticLayout& layout, const ElfFlavour& flavour,
                     uint64_t index, uint64_t tag) {
  poke(bytes, layout.dynamic_offset + index * layout.dynamic_entsize, flavour.is64 ? 8 : 4, flavour.big, tag);
}

void set_dynamic_value(std::vector<uint8_t>& bytes, const SyntheticLayout& layout, const ElfFlavour& flavour,
                       uint64_t index, uint64_t value) {
  uint64_t word = flavour.is64 ? 8 : 4;
  poke(bytes, layout.dynamic_offset + index * layout.dynamic_entsize + word, int(word), flavour.big, value);
}

}  // namespace runpatch::test
