#include "malformed_corpus.hpp"

#include "runpatch/reading/elf_types.hpp"
#include "synthetic_elf.hpp"

namespace runpatch::test {

namespace {

// Header field offsets for each class: {e_phoff, e_shoff, e_phentsize, e_phnum, e_shentsize, e_shnum}.
struct HeaderFields {
  uint64_t phoff, shoff, phentsize, phnum, shentsize, shnum;
  int word;  // size of an address/offset field
};
constexpr HeaderFields kFields64{32, 40, 54, 56, 58, 60, 8};
constexpr HeaderFields kFields32{28, 32, 42, 44, 46, 48, 4};

SyntheticElf base(bool is64, bool big) {
  SyntheticSpec s;
  s.is64 = is64;
  s.big_endian = big;
  s.interpreter = "/lib/ld.so";
  s.needed = {"libfoo.so", "libbar.so"};
  s.runpath = "/opt/lib";
  return build_synthetic_elf(s);
}

void add_variant(std::vector<MalformedCase>& out, bool is64, bool big) {
  const HeaderFields& f = is64 ? kFields64 : kFields32;
  const std::string tag = std::string(is64 ? "64" : "32") + (big ? "be" : "le");
  const SyntheticElf good = base(is64, big);
  const auto& L = good.layout;
  const uint64_t dyn_size = is64 ? 16 : 8, word = f.word;
  // Most cases are ELF that contradicts itself; code says otherwise.
  auto mutate = [&](const std::string& name, const std::string& error, auto&& change,
                    ErrorCode code = ErrorCode::Malformed) {
    SyntheticElf elf = good;
    change(elf.bytes);
    out.push_back({tag + "-" + name, std::move(elf.bytes), error, code});
  };
  auto set = [&](std::vector<uint8_t>& b, uint64_t at, int width, uint64_t v) { poke(b, at, width, big, v); };
  uint64_t strtab_value = L.dynamic_offset + L.strtab_tag_index * dyn_size + word;
  uint64_t strsz_value = strtab_value + dyn_size;

  const uint64_t kIdentSize = 16;  // e_ident: shorter is not even an ELF identification
  for (uint64_t size : {uint64_t(10), uint64_t(f.phoff + 2), L.phoff + L.phentsize + 3, L.dynamic_offset + 5})
    mutate(
        "truncated-" + std::to_string(size), "", [&](auto& b) { b.resize(size); },
        size < kIdentSize ? ErrorCode::NotElf : ErrorCode::Malformed);  // not even the identification
  mutate("phdrs-past-eof", "program header table", [&](auto& b) { set(b, f.phoff, f.word, b.size() - 8); });
  mutate("phoff-overflow", "program header table", [&](auto& b) { set(b, f.phoff, f.word, ~uint64_t(0) - 10); });
  mutate("huge-phnum", "program header table", [&](auto& b) { set(b, f.phnum, 2, 0xfffe); });
  mutate("shdrs-past-eof", "section header table", [&](auto& b) { set(b, f.shoff, f.word, b.size() + 100); });
  mutate("huge-shnum", "section header table", [&](auto& b) { set(b, f.shnum, 2, 5000); });
  mutate("wrong-phentsize", "program header size", [&](auto& b) { set(b, f.phentsize, 2, L.phentsize - 8); });
  mutate("wrong-shentsize", "section header size", [&](auto& b) { set(b, f.shentsize, 2, L.shentsize + 8); });
  // PN_XNUM: the real count lives in section 0's sh_info; make it absurd.
  uint64_t sh_info0 = L.shoff + (is64 ? 44 : 28);
  mutate("pn-xnum-huge", "program header table", [&](auto& b) {
    set(b, f.phnum, 2, elf::PN_XNUM);
    set(b, sh_info0, 4, 0x7fffffff);
  });
  mutate("pn-xnum-no-sections", "PN_XNUM", [&](auto& b) {
    set(b, f.phnum, 2, elf::PN_XNUM);
    set(b, f.shoff, f.word, 0);
    set(b, f.shnum, 2, 0);
  });
  mutate("strtab-outside-segments", "dynamic string table", [&](auto& b) { set(b, strtab_value, f.word, 0x10000000); });
  mutate("strsz-past-segment", "no loadable segment", [&](auto& b) { set(b, strsz_value, f.word, 1u << 30); });
  mutate("missing-nul", "not NUL-terminated", [&](auto& b) { set(b, strsz_value, f.word, L.dynstr_size - 1); });
  mutate("needed-index-out-of-range", "outside the string table",
         [&](auto& b) { set(b, L.dynamic_offset + word, f.word, 99999); });
  // PT_DYNAMIC is the builder's last program header; p_offset follows p_type (and p_flags on ELF64).
  uint64_t dyn_phdr = L.phoff + (L.phnum - 1) * L.phentsize;
  uint64_t p_offset_at = dyn_phdr + (is64 ? 8 : 4);
  mutate("dynamic-past-eof", "dynamic section", [&](auto& b) { set(b, p_offset_at, f.word, b.size() - 4); });
  // Overlapping tables: the dynamic section placed over the program header table.
  mutate("dynamic-over-phdrs", "", [&](auto& b) { set(b, p_offset_at, f.word, L.phoff); });
  // The header claims the other byte order than every table is written in.
  mutate("byte-order-mismatch", "", [&](auto& b) { b[elf::EI_DATA] = big ? elf::ELFDATA2LSB : elf::ELFDATA2MSB; });
  mutate(
      "unknown-class", "unknown ELF class", [&](auto& b) { b[elf::EI_CLASS] = 3; }, ErrorCode::NotElf);
}

}  // namespace

std::vector<MalformedCase> malformed_corpus() {
  std::vector<MalformedCase> out;
  out.push_back({"not-elf", {'#', '!', '/', 'b', 'i', 'n', '/', 's', 'h', '\n'}, "not an ELF file", ErrorCode::NotElf});
  // "file is empty" from a file (NotRegularFile), "not an ELF file" from bytes.
  out.push_back({"empty", {}, "", ErrorCode::NotElf});
  for (bool is64 : {true, false})
    for (bool big : {false, true}) add_variant(out, is64, big);
  return out;
}

}  // namespace runpatch::test
