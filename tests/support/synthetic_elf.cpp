#include "synthetic_elf.hpp"

#include <cstring>
#include <algorithm>
#include <fstream>
#include <iterator>

#include "fixtures.hpp"
#include "runpatch/reading/elf_types.hpp"

namespace runpatch::test {

namespace {

using namespace runpatch::elf;

// NT_GNU_PROPERTY_TYPE_0 holding GNU_PROPERTY_X86_FEATURE_1_AND (IBT and
// SHSTK), its descriptor padded to the class's word.
template <class E>
std::vector<uint8_t> gnu_property_note() {
  const int word = E::is64 ? 8 : 4;
  std::vector<uint8_t> out(12 + 4 + (8 + 4 + (word - 4)), 0);
  ElfFlavour f{E::is64, E::big_endian};
  poke(out, 0, 4, f.big, 4);                // n_namesz
  poke(out, 4, 4, f.big, out.size() - 16);  // n_descsz
  poke(out, 8, 4, f.big, 5);                // NT_GNU_PROPERTY_TYPE_0
  std::memcpy(out.data() + 12, "GNU", 4);
  poke(out, 16, 4, f.big, 0xc0000002);  // pr_type
  poke(out, 20, 4, f.big, 4);           // pr_datasz
  poke(out, 24, 4, f.big, 3);           // pr_data
  return out;
}

template <class E>
SyntheticElf build(const SyntheticSpec& spec) {
  using Ehdr_ = Ehdr<E>;
  using Phdr_ = Phdr<E>;
  using Shdr_ = Shdr<E>;
  using Dyn_ = Dyn<E>;

  // String table: offset 0 is the empty string.
  std::string dynstr(1, '\0');
  auto add_string = [&](const std::string& s) {
    uint64_t at = dynstr.size();
    dynstr += s;
    dynstr += '\0';
    return at;
  };
  std::vector<std::pair<uint64_t, uint64_t>> dyn;  // tag, value
  for (const auto& n : spec.needed) dyn.emplace_back(DT_NEEDED, add_string(n));
  if (spec.soname) dyn.emplace_back(DT_SONAME, add_string(*spec.soname));
  if (spec.rpath) dyn.emplace_back(DT_RPATH, add_string(*spec.rpath));
  if (spec.runpath) dyn.emplace_back(DT_RUNPATH, add_string(*spec.runpath));
  if (spec.flags_1) dyn.emplace_back(DT_FLAGS_1, spec.flags_1);
  std::string shstrtab = std::string("\0.dynstr\0.dynamic\0.shstrtab\0", 28);

  uint64_t phnum = 1 + (spec.interpreter ? 1 : 0) + (spec.with_dynamic ? 1 : 0) + (spec.gnu_property_note ? 2 : 0);
  SyntheticLayout L;
  L.phoff = sizeof(Ehdr_);
  L.phnum = phnum;
  L.phentsize = sizeof(Phdr_);
  uint64_t off = L.phoff + phnum * sizeof(Phdr_);
  uint64_t interp_off = off;
  if (spec.interpreter) off += spec.interpreter->size() + 1;
  const uint64_t note_align = E::is64 ? 8 : 4;
  off = (off + note_align - 1) & ~(note_align - 1);
  uint64_t note_off = off;
  std::vector<uint8_t> note = spec.gnu_property_note ? gnu_property_note<E>() : std::vector<uint8_t>();
  off += note.size();
  L.dynstr_offset = off;
  L.dynstr_size = dynstr.size();
  off += dynstr.size();
  off = (off + 7) & ~uint64_t(7);
  L.dynamic_offset = off;
  L.dynamic_entsize = sizeof(Dyn_);
  L.strtab_tag_index = dyn.size();
  dyn.emplace_back(DT_STRTAB, L.dynstr_offset);  // vaddr == offset: one PT_LOAD at 0
  dyn.emplace_back(DT_STRSZ, dynstr.size());
  dyn.emplace_back(DT_NULL, 0);
  for (int i = 0; i < spec.spare_dynamic_slots; ++i) dyn.emplace_back(DT_NULL, 0);
  L.dynamic_entries = dyn.size();
  if (spec.with_dynamic) off += dyn.size() * sizeof(Dyn_);
  uint64_t shstrtab_off = off;
  off += shstrtab.size();
  off = (off + 7) & ~uint64_t(7);
  if (spec.with_section_headers) {
    L.shoff = off;
    L.shnum = 4;
    L.shentsize = sizeof(Shdr_);
    off += 4 * sizeof(Shdr_);
  }

  std::vector<uint8_t> bytes(off, 0);
  auto& eh = *reinterpret_cast<Ehdr_*>(bytes.data());
  std::memcpy(eh.e_ident, "\177ELF", 4);
  eh.e_ident[EI_CLASS] = E::is64 ? ELFCLASS64 : ELFCLASS32;
  eh.e_ident[EI_DATA] = E::big_endian ? ELFDATA2MSB : ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = 1;
  eh.e_ident[EI_OSABI] = spec.osabi;
  eh.e_type = spec.type;
  eh.e_machine = spec.machine;
  eh.e_version = 1;
  eh.e_phoff = L.phoff;
  eh.e_shoff = L.shoff;
  eh.e_ehsize = sizeof(Ehdr_);
  eh.e_phentsize = sizeof(Phdr_);
  eh.e_phnum = static_cast<uint16_t>(phnum);
  eh.e_shentsize = spec.with_section_headers ? sizeof(Shdr_) : 0;
  eh.e_shnum = static_cast<uint16_t>(L.shnum);
  eh.e_shstrndx = spec.with_section_headers ? 3 : 0;

  auto* ph = reinterpret_cast<Phdr_*>(bytes.data() + L.phoff);
  int i = 0;
  if (spec.interpreter) {
    ph[i].p_type = PT_INTERP;
    ph[i].p_offset = interp_off;
    ph[i].p_vaddr = interp_off;
    ph[i].p_filesz = spec.interpreter->size() + 1;
    ph[i].p_memsz = spec.interpreter->size() + 1;
    ph[i].p_flags = PF_R;
    ph[i].p_align = 1;
    std::memcpy(bytes.data() + interp_off, spec.interpreter->c_str(), spec.interpreter->size() + 1);
    ++i;
  }
  if (spec.gnu_property_note) {
    for (uint32_t type : {PT_NOTE, PT_GNU_PROPERTY}) {
      ph[i].p_type = type;
      ph[i].p_offset = note_off;
      ph[i].p_vaddr = note_off;
      ph[i].p_filesz = note.size();
      ph[i].p_memsz = note.size();
      ph[i].p_flags = PF_R;
      ph[i].p_align = note_align;
      ++i;
    }
    std::memcpy(bytes.data() + note_off, note.data(), note.size());
  }
  ph[i].p_type = PT_LOAD;
  ph[i].p_flags = PF_R | PF_W;
  ph[i].p_filesz = off;
  ph[i].p_memsz = off;
  ph[i].p_align = 0x1000;
  ++i;
  if (spec.with_dynamic) {
    ph[i].p_type = PT_DYNAMIC;
    ph[i].p_offset = L.dynamic_offset;
    ph[i].p_vaddr = L.dynamic_offset;
    ph[i].p_filesz = dyn.size() * sizeof(Dyn_);
    ph[i].p_memsz = dyn.size() * sizeof(Dyn_);
    ph[i].p_flags = PF_R | PF_W;
    ph[i].p_align = 8;
    auto* d = reinterpret_cast<Dyn_*>(bytes.data() + L.dynamic_offset);
    for (size_t k = 0; k < dyn.size(); ++k) {
      d[k].d_tag = dyn[k].first;
      d[k].d_val = dyn[k].second;
    }
  }
  std::memcpy(bytes.data() + L.dynstr_offset, dynstr.data(), dynstr.size());
  std::memcpy(bytes.data() + shstrtab_off, shstrtab.data(), shstrtab.size());
  if (spec.with_section_headers) {
    auto* sh = reinterpret_cast<Shdr_*>(bytes.data() + L.shoff);
    sh[1].sh_name = 1;
    sh[1].sh_type = SHT_STRTAB;
    sh[1].sh_flags = SHF_ALLOC;
    sh[1].sh_addr = L.dynstr_offset;
    sh[1].sh_offset = L.dynstr_offset;
    sh[1].sh_size = dynstr.size();
    sh[1].sh_addralign = 1;
    sh[2].sh_name = 9;
    sh[2].sh_type = SHT_DYNAMIC;
    sh[2].sh_flags = SHF_ALLOC | SHF_WRITE;
    sh[2].sh_addr = L.dynamic_offset;
    sh[2].sh_offset = L.dynamic_offset;
    sh[2].sh_size = spec.with_dynamic ? dyn.size() * sizeof(Dyn_) : 0;
    sh[2].sh_link = 1;
    sh[2].sh_entsize = sizeof(Dyn_);
    sh[2].sh_addralign = 8;
    sh[3].sh_name = 18;
    sh[3].sh_type = SHT_STRTAB;
    sh[3].sh_offset = shstrtab_off;
    sh[3].sh_size = shstrtab.size();
    sh[3].sh_addralign = 1;
  }
  return {std::move(bytes), L};
}

}  // namespace

std::vector<ElfFlavour> every_elf_flavour() { return {{true, false}, {true, true}, {false, false}, {false, true}}; }

std::string flavour_name(const ElfFlavour& flavour) {
  return std::string(flavour.is64 ? "Elf64" : "Elf32") + (flavour.big ? "BE" : "LE");
}

SyntheticElf build_synthetic_elf(const SyntheticSpec& spec) {
  if (spec.is64) return spec.big_endian ? build<Elf64BE>(spec) : build<Elf64LE>(spec);
  return spec.big_endian ? build<Elf32BE>(spec) : build<Elf32LE>(spec);
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

namespace {
void set_field(std::vector<uint8_t>& bytes, uint64_t header, const ElfFlavour& flavour, HeaderField field,
               uint64_t value) {
  uint64_t at = header + uint64_t(flavour.is64 ? field.offset64 : field.offset32);
  poke(bytes, at, flavour.is64 ? field.width64 : field.width32, flavour.big, value);
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
