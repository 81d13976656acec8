// Picks the ElfView<E> matching a file's class and byte order and calls f with
// it: a MappedElfView<E> for bytes in memory, an ElfView<E> for a FileReader.
#pragma once

#include <fmt/format.h>

#include <span>
#include <string>
#include <utility>

#include "reading/elf_view.hpp"

namespace runpatch {

namespace detail {
// The class and byte order of an image whose first bytes (up to 16) are ident.
template <template <class> class View, class Parse, class F>
auto visit_ident(std::span<const uint8_t> ident, const std::string& path, Parse&& parse, F&& f)
    -> decltype(f(std::declval<View<elf::Elf64LE>&>())) {
  if (ident.size() < 4 || ident[0] != 0x7f || ident[1] != 'E' || ident[2] != 'L' || ident[3] != 'F')
    return make_error(ErrorCode::NotElf, path, "not an ELF file (bad magic)", 0);
  if (ident.size() < 16) return make_error(ErrorCode::NotElf, path, "truncated ELF identification", 0);
  uint8_t cls = ident[elf::EI_CLASS], data = ident[elf::EI_DATA];
  auto run = [&]<class E>() -> decltype(f(std::declval<View<elf::Elf64LE>&>())) {
    RUNPATCH_TRY(View<E> view, parse.template operator()<E>());
    return f(view);
  };
  if (data != elf::ELFDATA2LSB && data != elf::ELFDATA2MSB)
    return make_error(ErrorCode::NotElf, path, fmt::format("unknown ELF byte order {}", data), elf::EI_DATA);
  bool big = data == elf::ELFDATA2MSB;
  if (cls == elf::ELFCLASS64)
    return big ? run.template operator()<elf::Elf64BE>() : run.template operator()<elf::Elf64LE>();
  if (cls == elf::ELFCLASS32)
    return big ? run.template operator()<elf::Elf32BE>() : run.template operator()<elf::Elf32LE>();
  return make_error(ErrorCode::NotElf, path, fmt::format("unknown ELF class {}", cls), elf::EI_CLASS);
}
}  // namespace detail

// f: (MappedElfView<E>&) -> Expected<R> for every target E; returns that Expected<R>.
template <class F>
auto visit_elf(std::span<const uint8_t> bytes, const std::string& path, F&& f)
    -> decltype(f(std::declval<MappedElfView<elf::Elf64LE>&>())) {
  auto parse = [&]<class E>() { return MappedElfView<E>::parse(bytes, path); };
  return detail::visit_ident<MappedElfView>(bytes.first(std::min<size_t>(bytes.size(), 16)), path, parse,
                                            std::forward<F>(f));
}

// The same over a file read on demand.
template <class F>
auto visit_elf(const FileReader& reader, F&& f) -> decltype(f(std::declval<ElfView<elf::Elf64LE>&>())) {
  uint64_t ident_size = std::min<uint64_t>(reader.size(), 16);
  const uint8_t* ident = reader.at(0, ident_size);
  if (!ident) return make_error(ErrorCode::SystemCall, reader.path(), "cannot read the ELF identification", 0);
  auto parse = [&]<class E>() { return ElfView<E>::parse(reader); };
  return detail::visit_ident<ElfView>(std::span<const uint8_t>(ident, ident_size), reader.path(), parse,
                                      std::forward<F>(f));
}

}  // namespace runpatch
