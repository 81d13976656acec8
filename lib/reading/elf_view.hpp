// ElfView<E>: bounds-checked, typed access to an ELF image, held in memory (a
// mapping; MappedElfView<E> adds its bytes) or read on demand (FileReader). Construction validates the ELF
// header and both header tables; every later access (vaddr translation,
// tables, strings) checks its range again and returns an Error that names
// the file, the offset and what is wrong.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <cstddef>
#include <cstring>

#include "reading/file_reader.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

// Adds without wrapping; nullopt on overflow.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

template <class E>
class ElfView {
 public:
  using Target = E;
  using Ehdr = elf::Ehdr<E>;
  using Phdr = elf::Phdr<E>;
  using Shdr = elf::Shdr<E>;
  using Dyn = elf::Dyn<E>;

  static Expected<ElfView> parse(std::span<const uint8_t> bytes, std::string path) {
    ElfView view(bytes, nullptr, bytes.size(), std::move(path));
    RUNPATCH_CHECK(view.validate());
    return view;
  }
  // reader must outlive the view.
  static Expected<ElfView> parse(const FileReader& reader) {
    ElfView view({}, &reader, reader.size(), reader.path());
    RUNPATCH_CHECK(view.validate());
    return view;
  }

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // [off, off + len), which the caller has checked with in_file; null only
  // when reading it from the file fails.
  const uint8_t* data_at(uint64_t off, uint64_t len) const {
    return reader_ ? reader_->at(off, len) : bytes_.data() + off;
  }
  const Ehdr& ehdr() const { return *ehdr_; }
  std::span<const Phdr> phdrs() const { return phdrs_; }
  std::span<const Shdr> shdrs() const { return shdrs_; }
  uint32_t shstrndx() const { return shstrndx_; }

  Error error(ErrorCode code, std::string what, std::optional<uint64_t> offset = std::nullopt) const {
    return make_error(code, path_, std::move(what), offset);
  }
  // The common case: a structure of the file lies outside it or contradicts another.
  Error malformed(std::string what, std::optional<uint64_t> offset = std::nullopt) const {
    return error(ErrorCode::Malformed, std::move(what), offset);
  }

  // First program header of the given type, or null.
  const Phdr* find_phdr(uint32_t type) const {
    for (const Phdr& ph : phdrs_)
      if (ph.p_type == type) return &ph;
    return nullptr;
  }

  // File offset of [vaddr, vaddr+size) when one PT_LOAD holds all of it in the file.
  // referenced_at: where in the file the address was read, named by an error
  // when the address lies nowhere in the file.
  Expected<uint64_t> offset_of_vaddr(uint64_t vaddr, uint64_t size, std::string_view what,
                                     std::optional<uint64_t> referenced_at = std::nullopt) const {
    for (const Phdr& ph : phdrs_) {
      if (ph.p_type != elf::PT_LOAD) continue;
      uint64_t start = ph.p_vaddr, filesz = ph.p_filesz;
      if (vaddr < start || vaddr - start > filesz) continue;
      uint64_t off = uint64_t(ph.p_offset) + (vaddr - start);
      uint64_t rel = vaddr - start;
      if (size > filesz - rel && size > mapped_run_from(ph) - rel) continue;
      if (!in_file(off, size))
        return malformed(fmt::format("{} at address {:#x} maps past end of file", what, vaddr), off);
      return off;
    }
    return malformed(fmt::format("{} at address {:#x} (size {}) lies in no loadable segment", what, vaddr, size),
                     referenced_at);
  }

  // Bytes from the start of segment on that the file maps contiguously: its own
  // file size plus that of PT_LOADs following it directly in file and memory
  // (same offset-to-address delta). patchelf's edits of non-PIE executables
  // leave .dynstr spanning two such segments, and the loader reads it fine.
  uint64_t mapped_run_from(const Phdr& segment) const {
    uint64_t run = segment.p_filesz;
    for (size_t hops = 0; hops < phdrs_.size(); ++hops) {
      const Phdr* next = nullptr;
      for (const Phdr& ph : phdrs_)
        if (ph.p_type == elf::PT_LOAD && ph.p_filesz > 0 && &ph != &segment &&
            uint64_t(ph.p_vaddr) - uint64_t(segment.p_vaddr) == run &&
            uint64_t(ph.p_offset) - uint64_t(segment.p_offset) == run)
          next = &ph;
      if (!next || run == 0) break;
      if (uint64_t(next->p_filesz) > UINT64_MAX - run) break;
      run += next->p_filesz;
    }
    return run;
  }

  // count entries of T at off, all inside the file.
  template <class T>
  Expected<std::span<const T>> table_at(uint64_t off, uint64_t count, std::string_view what) const {
    auto bytes = checked_mul(count, sizeof(T));
    std::string_view entries = count == 1 ? "entry" : "entries";
    if (!bytes)
      return malformed(fmt::format("{} ({} {} of {} bytes) is larger than any file", what, count, entries, sizeof(T)),
                       off);
    if (!in_file(off, *bytes))
      return malformed(
          fmt::format("{} ({} {} of {} bytes, {} bytes at offset {:#x}) extends past end of file (size {})", what,
                      count, entries, sizeof(T), *bytes, off, size_),
          off);
    const uint8_t* data = data_at(off, *bytes);
    if (!data) return error(ErrorCode::SystemCall, fmt::format("cannot read {} ({} bytes)", what, *bytes), off);
    return std::span<const T>(reinterpret_cast<const T*>(data), count);
  }

  // The NUL-terminated string at index of the table [table_off, table_off+table_size).
  Expected<std::string_view> string_at(uint64_t table_off, uint64_t table_size, uint64_t index,
                                       std::string_view what) const {
    if (index >= table_size)
      return malformed(fmt::format("{} string index {} is outside the string table (size {})", what, index, table_size),
                       table_off);
    uint64_t rest = table_size - index;
    // Read on demand, a string is looked for in a short piece first: tables
    // are long, names short.
    for (uint64_t piece = reader_ ? std::min<uint64_t>(rest, 256) : rest;; piece = std::min(rest, piece * 4)) {
      const char* begin = reinterpret_cast<const char*>(data_at(table_off + index, piece));
      if (!begin)
        return error(ErrorCode::SystemCall, fmt::format("cannot read {} string at index {}", what, index),
                     table_off + index);
      if (const void* nul = std::memchr(begin, 0, piece))
        return std::string_view(begin, static_cast<const char*>(nul) - begin);
      if (piece == rest)
        return malformed(fmt::format("{} string at index {} is not NUL-terminated", what, index), table_off + index);
    }
  }

  bool in_file(uint64_t off, uint64_t size) const { return off <= size_ && size <= size_ - off; }

 protected:
  // The whole file for a view over memory; empty for one read on demand.
  std::span<const uint8_t> whole_file() const { return bytes_; }

 private:
  ElfView(std::span<const uint8_t> bytes, const FileReader* reader, uint64_t size, std::string path)
      : bytes_(bytes), reader_(reader), size_(size), path_(std::move(path)) {}

  Status validate() {
    if (size_ < sizeof(Ehdr))
      return malformed(fmt::format("truncated ELF header ({} of {} bytes)", size_, sizeof(Ehdr)), size_);
    ehdr_ = reinterpret_cast<const Ehdr*>(data_at(0, sizeof(Ehdr)));
    if (!ehdr_) return malformed("cannot read the ELF header", 0);
    const Ehdr& eh = ehdr();
    if (eh.e_ident[elf::EI_VERSION] != 1)
      return malformed(fmt::format("unsupported ELF version {}", eh.e_ident[elf::EI_VERSION]), 6);
    RUNPATCH_CHECK(read_section_headers());
    return read_program_headers();
  }

  Status read_section_headers() {
    const Ehdr& eh = ehdr();
    uint64_t shoff = eh.e_shoff;
    if (shoff == 0) return {};  // stripped of section headers: allowed
    if (eh.e_shentsize != sizeof(Shdr))
      return malformed(
          fmt::format("section header size is {} bytes, expected {}", uint16_t(eh.e_shentsize), sizeof(Shdr)),
          offsetof(Ehdr, e_shentsize));
    uint64_t count = eh.e_shnum;
    if (count == 0) {  // extended numbering: section header 0 holds the count
      RUNPATCH_TRY(auto first, table_at<Shdr>(shoff, 1, "section header 0 (e_shnum is 0: extended numbering)"));
      count = first[0].sh_size;
      if (count == 0) return {};
    }
    // The whole table at once, so that a truncated one is reported with its real count.
    RUNPATCH_TRY(shdrs_, table_at<Shdr>(shoff, count, "section header table"));
    shstrndx_ = eh.e_shstrndx == elf::SHN_XINDEX ? uint32_t(shdrs_[0].sh_link) : eh.e_shstrndx;
    if (shstrndx_ >= count && shstrndx_ != elf::SHN_UNDEF)
      return malformed(fmt::format("section name table index {} is out of range ({} sections)", shstrndx_, count),
                       offsetof(Ehdr, e_shstrndx));
    return {};
  }

  Status read_program_headers() {
    const Ehdr& eh = ehdr();
    uint64_t count = eh.e_phnum;
    if (count == elf::PN_XNUM) {
      if (shdrs_.empty())
        return malformed("e_phnum is PN_XNUM but there is no section header 0 to hold the count",
                         offsetof(Ehdr, e_phnum));
      count = shdrs_[0].sh_info;
    }
    if (count == 0) return {};
    if (eh.e_phentsize != sizeof(Phdr))
      return malformed(
          fmt::format("program header size is {} bytes, expected {}", uint16_t(eh.e_phentsize), sizeof(Phdr)),
          offsetof(Ehdr, e_phentsize));
    RUNPATCH_TRY(phdrs_, table_at<Phdr>(eh.e_phoff, count, "program header table"));
    return {};
  }

  std::span<const uint8_t> bytes_;      // the whole file, when mapped
  const FileReader* reader_ = nullptr;  // else the file, read on demand
  uint64_t size_ = 0;
  const Ehdr* ehdr_ = nullptr;
  std::string path_;
  std::span<const Phdr> phdrs_;
  std::span<const Shdr> shdrs_;
  uint32_t shstrndx_ = 0;
};

// A view over a whole file held in memory (the editor's read-only mapping):
// ElfView's checked access plus the file's bytes, which code that copies or
// compares raw ranges needs. Only this type has them, so such code cannot be
// handed a view read on demand, which holds no bytes.
template <class E>
class MappedElfView : public ElfView<E> {
 public:
  static Expected<MappedElfView> parse(std::span<const uint8_t> bytes, std::string path) {
    RUNPATCH_TRY(ElfView<E> view, ElfView<E>::parse(bytes, std::move(path)));
    return MappedElfView(std::move(view));
  }
  std::span<const uint8_t> bytes() const { return this->whole_file(); }

 private:
  explicit MappedElfView(ElfView<E> view) : ElfView<E>(std::move(view)) {}
};

}  // namespace runpatch
