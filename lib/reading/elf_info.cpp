#include "runpatch/reading/elf_info.hpp"

#include <fmt/format.h>

#include <cstring>

#include "reading/dlopen_notes.hpp"
#include "reading/resolution_cache_note.hpp"
#include "reading/dynamic_table.hpp"
#include "reading/elf_dispatch.hpp"
#include "reading/elf_info_reader.hpp"

namespace runpatch {

namespace {

const char* string_tag_name(uint64_t tag) {
  switch (tag) {
    case elf::DT_NEEDED: return "DT_NEEDED";
    case elf::DT_SONAME: return "DT_SONAME";
    case elf::DT_RPATH: return "DT_RPATH";
    case elf::DT_RUNPATH: return "DT_RUNPATH";
    default: return nullptr;
  }
}

template <class E>
Status read_interpreter(const ElfView<E>& view, ElfInfo& info) {
  const auto* ph = view.find_phdr(elf::PT_INTERP);
  if (!ph || ph->p_filesz == 0) return {};  // no contents: separate debug info
  if (!view.in_file(ph->p_offset, ph->p_filesz))
    return view.malformed(fmt::format("PT_INTERP ({} bytes) lies outside the file", uint64_t(ph->p_filesz)),
                          ph->p_offset);
  RUNPATCH_TRY(auto interp, view.string_at(ph->p_offset, ph->p_filesz, 0, "interpreter"));
  info.interpreter = std::string(interp);
  return {};
}

// Where the bytes the headers reference end: program and section header
// tables, segments, sections.
template <class E>
uint64_t referenced_end(const ElfView<E>& view) {
  const auto& eh = view.ehdr();
  uint64_t end = std::max<uint64_t>(uint64_t(eh.e_phoff) + view.phdrs().size() * sizeof(elf::Phdr<E>),
                                    uint64_t(eh.e_shoff) + view.shdrs().size() * sizeof(elf::Shdr<E>));
  for (const auto& ph : view.phdrs()) end = std::max<uint64_t>(end, uint64_t(ph.p_offset) + uint64_t(ph.p_filesz));
  for (const auto& sh : view.shdrs())
    if (sh.sh_type != elf::SHT_NOBITS) end = std::max<uint64_t>(end, uint64_t(sh.sh_offset) + uint64_t(sh.sh_size));
  return end;
}

// Any other trailing data (a signature, a payload) does not begin with the
// string table, so it is never taken for an interrupted edit's tail.
template <class E>
std::optional<uint64_t> interrupted_edit_tail(const ElfView<E>& view, const DynamicTable<E>& table) {
  uint64_t end = referenced_end(view), start = (end + 15) / 16 * 16, size = view.size();
  if (table.strtab_size == 0 || start >= size || size - start < table.strtab_size) return std::nullopt;
  const uint8_t* copy = view.data_at(start, table.strtab_size);
  const uint8_t* strings = view.data_at(table.strtab_offset, table.strtab_size);
  if (!copy || !strings || std::memcmp(copy, strings, table.strtab_size) != 0) return std::nullopt;
  return end;
}

template <class E>
Status read_dynamic_facts(const ElfView<E>& view, ElfInfo& info, DynamicSource source) {
  RUNPATCH_TRY(auto table, read_dynamic(view, source));
  if (!table) {
    info.debug_only = view.find_phdr(elf::PT_DYNAMIC) != nullptr;
    return {};
  }
  info.has_dynamic = true;
  info.interrupted_edit_tail = interrupted_edit_tail(view, *table);
  for (size_t i = table->used + 1; i < table->slots.size(); ++i)
    if (table->slots[i].d_tag == elf::DT_NULL) ++info.spare_dynamic_slots;
  for (const auto& d : table->entries()) {
    uint64_t tag = d.d_tag;
    if (tag == elf::DT_FLAGS) info.flags = d.d_val;
    if (tag == elf::DT_FLAGS_1) info.flags_1 = d.d_val;
    const char* name = string_tag_name(tag);
    if (!name) continue;
    RUNPATCH_TRY(auto text, dynamic_string(view, *table, d.d_val, name));
    std::optional<std::string>* slot = tag == elf::DT_RUNPATH  ? &info.runpath
                                       : tag == elf::DT_RPATH  ? &info.rpath
                                       : tag == elf::DT_SONAME ? &info.soname
                                                               : nullptr;
    if (!slot) {
      info.needed.emplace_back(text);
    } else if (slot->has_value()) {
      info.duplicate_tags.emplace_back(name);  // ld.so uses the first; report the rest
    } else {
      *slot = std::string(text);
    }
  }
  return {};
}

template <class E>
Expected<ElfInfo> extract(const ElfView<E>& view, DynamicSource source) {
  const auto& eh = view.ehdr();
  ElfInfo info;
  info.path = view.path();
  info.identity.elf_class = E::is64 ? ElfClass::Elf64 : ElfClass::Elf32;
  info.identity.byte_order = E::big_endian ? ByteOrder::Big : ByteOrder::Little;
  info.identity.machine = eh.e_machine;
  info.identity.osabi = eh.e_ident[elf::EI_OSABI];
  info.identity.abiversion = eh.e_ident[elf::EI_ABIVERSION];
  info.identity.flags = eh.e_flags;
  info.type = eh.e_type;
  info.file_size = view.size();
  info.phnum = view.phdrs().size();
  info.shnum = view.shdrs().size();
  for (const auto& ph : view.phdrs())
    if (ph.p_type == elf::PT_LOAD && (ph.p_flags & elf::PF_X)) info.code_size += uint64_t(ph.p_filesz);
  RUNPATCH_CHECK(read_interpreter(view, info));
  RUNPATCH_CHECK(read_dynamic_facts(view, info, source));
  read_dlopen_notes(view, info);
  read_resolution_cache_note(view, info);
  return info;
}

}  // namespace

Expected<ElfInfo> read_elf_info(std::span<const uint8_t> bytes, const std::string& path, DynamicSource source) {
  return visit_elf(bytes, path, [&](const auto& view) { return extract(view, source); });
}

Expected<ElfInfo> read_elf_info(const std::filesystem::path& path, DynamicSource source) {
  RUNPATCH_TRY(FileReader file, FileReader::open(path));
  return read_elf_info(file, source);
}

Expected<ElfInfo> read_elf_info(const FileReader& file, DynamicSource source) {
  return visit_elf(file, [&](const auto& view) { return extract(view, source); });
}

bool ElfInfo::is_pie() const {
  // Older linkers do not set DF_1_PIE: an ET_DYN with an interpreter and no
  // SONAME is an executable (libc.so.6 has an interpreter but also a SONAME).
  return type == elf::ET_DYN && has_dynamic &&
         ((flags_1 & elf::DF_1_PIE) ? interpreter.has_value() : interpreter && !soname);
}
bool ElfInfo::is_static_pie() const {
  return type == elf::ET_DYN && has_dynamic && !interpreter && (flags_1 & elf::DF_1_PIE);
}
bool ElfInfo::is_shared_library() const { return type == elf::ET_DYN && has_dynamic && !is_pie() && !is_static_pie(); }
bool ElfInfo::is_executable() const { return type == elf::ET_EXEC || is_pie() || is_static_pie(); }
bool ElfInfo::nodeflib() const { return flags_1 & elf::DF_1_NODEFLIB; }

std::string ElfInfo::kind() const {
  if (debug_only) return "debuginfo";
  switch (type) {
    case elf::ET_REL: return "relocatable";
    case elf::ET_CORE: return "core";
    case elf::ET_EXEC: return has_dynamic ? "exec" : "static";
    case elf::ET_DYN:
      if (!has_dynamic) return "static";  // e.g. a kernel-style ET_DYN blob
      if (is_static_pie()) return "static-pie";
      return is_pie() ? "pie" : "shared";
    default: return "other";
  }
}

}  // namespace runpatch
