#include "runpatch/reading/section_audit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>

#include "runpatch/reading/elf_types.hpp"
#include "runpatch/reading/mapped_file.hpp"

namespace runpatch {

namespace {

// Walks the headers in patchelf's order; each step returns false at the first
// defect, which it records. Records are byte arrays: any offset is aligned.
template <class E>
class Auditor {
 public:
  explicit Auditor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  SectionAudit run() {
    if (bytes_.size() < sizeof(elf::Ehdr<E>)) return {};
    const auto& eh = *record<elf::Ehdr<E>>(0);
    if (eh.e_shnum == 0) return {};  // no section headers: runpatch works from the program headers
    if (headers_fit(eh) && name_table_fits(eh) && names_fit() && dynamic_fits() && strings_fit() && gnu_hash_fits())
      find_unnamed_symbol_sections();
    return std::move(audit_);
  }

 private:
  using Shdr = elf::Shdr<E>;

  template <class T>
  const T* record(uint64_t offset) const {
    return reinterpret_cast<const T*>(bytes_.data() + offset);
  }
  bool fits(uint64_t offset, uint64_t size) const { return offset <= bytes_.size() && size <= bytes_.size() - offset; }
  bool fail(SectionDefect defect, std::string detail) {
    audit_.defect = SectionAuditFinding{defect, std::move(detail)};
    return false;
  }

  bool headers_fit(const elf::Ehdr<E>& eh) {
    uint64_t phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
    if (phnum && (phoff > bytes_.size() || phnum * phentsize > bytes_.size() - phoff))
      return fail(SectionDefect::ProgramHeadersOutOfBounds,
                  fmt::format("{} program headers of {} bytes at offset {:#x} end past the file's {} bytes", phnum,
                              phentsize, phoff, bytes_.size()));
    uint64_t shoff = eh.e_shoff, shnum = eh.e_shnum, shentsize = eh.e_shentsize;
    if (!fits(shoff, shnum * shentsize))
      return fail(SectionDefect::SectionHeadersOutOfBounds,
                  fmt::format("{} section headers of {} bytes at offset {:#x} end past the file's {} bytes", shnum,
                              shentsize, shoff, bytes_.size()));
    if (phnum && phentsize != sizeof(elf::Phdr<E>))
      return fail(SectionDefect::ProgramHeaderSize,
                  fmt::format("program header size is {} bytes, expected {}", phentsize, sizeof(elf::Phdr<E>)));
    if (shentsize != sizeof(Shdr))
      return fail(SectionDefect::SectionHeaderSize,
                  fmt::format("section header size is {} bytes, expected {}", shentsize, sizeof(Shdr)));
    shdrs_ = std::span<const Shdr>(record<Shdr>(shoff), shnum);
    return true;
  }

  bool name_table_fits(const elf::Ehdr<E>& eh) {
    uint64_t index = eh.e_shstrndx;
    if (index >= shdrs_.size())
      return fail(SectionDefect::NameTableIndex,
                  fmt::format("e_shstrndx {} names no section ({} sections)", index, shdrs_.size()));
    uint64_t offset = shdrs_[index].sh_offset, size = shdrs_[index].sh_size;
    if (offset > bytes_.size())
      return fail(SectionDefect::NameTableOffset,
                  fmt::format("section name table at offset {:#x} starts past the end", offset));
    if (!fits(offset, size))
      return fail(SectionDefect::NameTablePastEnd,
                  fmt::format("section name table ({} bytes at offset {:#x}) ends past the end", size, offset));
    if (size == 0) return fail(SectionDefect::NameTableEmpty, "section name table is empty");
    if (bytes_[offset + size - 1] != 0)
      return fail(SectionDefect::NameTableUnterminated, "section name table does not end with a NUL byte");
    names_ = std::string_view(reinterpret_cast<const char*>(bytes_.data() + offset), size);
    return true;
  }

  bool names_fit() {
    for (size_t i = 0; i < shdrs_.size(); ++i)
      if (uint64_t(shdrs_[i].sh_name) >= names_.size())
        return fail(SectionDefect::SectionNameOutOfBounds,
                    fmt::format("section [{}]'s name offset {} lies past the section name table ({} bytes)", i,
                                uint64_t(shdrs_[i].sh_name), names_.size()));
    return true;
  }

  // The section of that name with contents in the file (a separate debug
  // file keeps .dynamic as SHT_NOBITS: nothing to check there).
  const Shdr* section(std::string_view name) const {
    for (const auto& sh : shdrs_)
      if (std::string_view(names_.data() + uint64_t(sh.sh_name)) == name)
        return sh.sh_type == elf::SHT_NOBITS ? nullptr : &sh;
    return nullptr;
  }

  bool section_fits(const Shdr& sh, std::string_view name) {
    if (!fits(sh.sh_offset, sh.sh_size))
      return fail(SectionDefect::SectionPastEnd,
                  fmt::format("{} ({} bytes at offset {:#x}) ends past the end of the file", name, uint64_t(sh.sh_size),
                              uint64_t(sh.sh_offset)));
    return true;
  }

  bool dynamic_fits() {
    dynamic_ = section(".dynamic");
    if (!dynamic_) return true;
    if (!section_fits(*dynamic_, ".dynamic")) return false;
    if (uint64_t(dynamic_->sh_offset) % sizeof(typename E::Addr) != 0)
      return fail(SectionDefect::DynamicUnaligned,
                  fmt::format(".dynamic at offset {:#x} is not aligned to {} bytes", uint64_t(dynamic_->sh_offset),
                              sizeof(typename E::Addr)));
    return true;
  }

  std::span<const elf::Dyn<E>> dynamic_entries() const {
    if (!dynamic_) return {};
    return {record<elf::Dyn<E>>(dynamic_->sh_offset), size_t(dynamic_->sh_size / sizeof(elf::Dyn<E>))};
  }

  bool strings_fit() {
    const Shdr* dynstr = section(".dynstr");
    if (!dynstr) return true;
    if (!section_fits(*dynstr, ".dynstr")) return false;
    uint64_t offset = dynstr->sh_offset, size = dynstr->sh_size;
    if (size == 0 || bytes_[offset + size - 1] != 0)
      return fail(SectionDefect::StringsUnterminated, ".dynstr does not end with a NUL byte");
    bool terminated = false;
    for (const auto& d : dynamic_entries()) {
      uint64_t tag = d.d_tag;
      if (tag == elf::DT_NULL) {
        terminated = true;
        break;
      }
      bool names = tag == elf::DT_NEEDED || tag == elf::DT_SONAME || tag == elf::DT_RPATH || tag == elf::DT_RUNPATH;
      if (names && uint64_t(d.d_val) >= size)
        return fail(
            SectionDefect::StringIndexOutOfBounds,
            fmt::format("dynamic entry {:#x} names string {} of a {}-byte .dynstr", tag, uint64_t(d.d_val), size));
    }
    if (dynamic_ && !terminated)
      return fail(SectionDefect::DynamicUnterminated, ".dynamic has no DT_NULL entry within its section");
    return version_needs_fit(size);
  }

  bool version_needs_fit(uint64_t strings_size) {
    const Shdr* needs = section(".gnu.version_r");
    if (!needs || !fits(needs->sh_offset, needs->sh_size)) return true;
    uint64_t at = needs->sh_offset, end = at + uint64_t(needs->sh_size);
    for (size_t count = 0; count < 4096 && at + sizeof(elf::Verneed<E>) <= end; ++count) {
      const auto& need = *record<elf::Verneed<E>>(at);
      if (uint64_t(need.vn_file) >= strings_size)
        return fail(SectionDefect::StringIndexOutOfBounds,
                    fmt::format("version need at offset {:#x} names string {} of a {}-byte .dynstr", at,
                                uint64_t(need.vn_file), strings_size));
      if (need.vn_next == 0) break;
      at += uint64_t(need.vn_next);
    }
    return true;
  }

  bool gnu_hash_fits() {
    const Shdr* hash = section(".gnu.hash");
    if (!hash || !fits(hash->sh_offset, hash->sh_size)) return true;
    constexpr uint64_t kHeader = 16;
    uint64_t size = hash->sh_size;
    if (size < kHeader)
      return fail(SectionDefect::GnuHashTooSmall, fmt::format(".gnu.hash has {} bytes, less than its header", size));
    const auto* words = record<typename E::Word>(hash->sh_offset);
    uint64_t buckets = words[0], bloom_words = words[2], available = size - kHeader;
    if (buckets == 0 || bloom_words == 0 || bloom_words > available / sizeof(typename E::Addr) ||
        buckets > (available - bloom_words * sizeof(typename E::Addr)) / 4)
      return fail(SectionDefect::GnuHashHeader,
                  fmt::format(".gnu.hash says {} buckets and {} bloom words in {} bytes", buckets, bloom_words, size));
    return true;
  }

  void find_unnamed_symbol_sections() {
    for (const auto& sh : shdrs_) {
      if ((sh.sh_type != elf::SHT_SYMTAB && sh.sh_type != elf::SHT_DYNSYM) || !fits(sh.sh_offset, sh.sh_size)) continue;
      size_t count = size_t(sh.sh_size / sizeof(elf::Sym<E>));
      const auto* symbols = record<elf::Sym<E>>(sh.sh_offset);
      for (size_t i = 0; i < count; ++i) {
        uint64_t index = symbols[i].st_shndx;
        if (index == 0 || index >= elf::SHN_LORESERVE || index >= shdrs_.size() || names_[shdrs_[index].sh_name] != 0)
          continue;
        if (std::find(audit_.unnamed_symbol_sections.begin(), audit_.unnamed_symbol_sections.end(), index) ==
            audit_.unnamed_symbol_sections.end())
          audit_.unnamed_symbol_sections.push_back(index);
      }
    }
  }

  std::span<const uint8_t> bytes_;
  std::span<const Shdr> shdrs_;
  std::string_view names_;
  const Shdr* dynamic_ = nullptr;
  SectionAudit audit_;
};

template <class E>
SectionAudit audit(std::span<const uint8_t> bytes) {
  return Auditor<E>(bytes).run();
}

}  // namespace

Expected<SectionAudit> audit_section_headers(const std::filesystem::path& path) {
  RUNPATCH_TRY(MappedFile file, MappedFile::open(path));
  return audit_section_headers(file.bytes());
}

SectionAudit audit_section_headers(std::span<const uint8_t> bytes) {
  if (bytes.size() < 16) return SectionAudit{};
  bool big = bytes[elf::EI_DATA] == elf::ELFDATA2MSB;
  switch (bytes[elf::EI_CLASS]) {
    case elf::ELFCLASS32: return big ? audit<elf::Elf32BE>(bytes) : audit<elf::Elf32LE>(bytes);
    case elf::ELFCLASS64: return big ? audit<elf::Elf64BE>(bytes) : audit<elf::Elf64LE>(bytes);
    default: return SectionAudit{};
  }
}

}  // namespace runpatch
