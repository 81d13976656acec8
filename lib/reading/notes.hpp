// Walks the notes of every PT_NOTE segment, the way the loader and readelf
// see them. A truncated or malformed note ends the walk of its segment.
#pragma once

#include <cstring>
#include <span>
#include <string_view>

#include "reading/elf_view.hpp"

namespace runpatch {

struct NoteRef {
  size_t segment = 0;   // index of the PT_NOTE program header
  uint64_t offset = 0;  // of the note header in the file
  uint64_t size = 0;    // header, name and descriptor with their padding (may end past the segment)
  uint32_t type = 0;
  std::string_view name;  // n_namesz bytes, NUL included when the writer put one
  std::span<const uint8_t> descriptor;
  bool alone = false;  // the only note of its segment
};

// segment_type: PT_NOTE (what the loader walks), or PT_GNU_PROPERTY, which holds notes too.
template <class E, class Visit>
void for_each_note(const ElfView<E>& view, Visit&& visit, uint32_t segment_type = elf::PT_NOTE) {
  auto phdrs = view.phdrs();
  for (size_t index = 0; index < phdrs.size(); ++index) {
    const auto& ph = phdrs[index];
    if (ph.p_type != segment_type || !view.in_file(ph.p_offset, ph.p_filesz)) continue;
    uint64_t align = ph.p_align == 8 ? 8 : 4;
    uint64_t at = ph.p_offset, end = uint64_t(ph.p_offset) + uint64_t(ph.p_filesz);
    // at may pass end when the last descriptor's padding is cut off: check before subtracting.
    while (at <= end && end - at >= sizeof(elf::Nhdr<E>)) {
      const auto* header = reinterpret_cast<const elf::Nhdr<E>*>(view.data_at(at, sizeof(elf::Nhdr<E>)));
      if (!header) break;
      uint64_t namesz = header->n_namesz, descsz = header->n_descsz;
      uint64_t name_at = at + sizeof(elf::Nhdr<E>);
      uint64_t desc_at = name_at + ((namesz + align - 1) & ~(align - 1));
      if (namesz > end - name_at || desc_at > end || descsz > end - desc_at) break;
      uint64_t next = desc_at + ((descsz + align - 1) & ~(align - 1));
      NoteRef note;
      note.segment = index;
      note.offset = at;
      note.size = next - at;
      note.type = header->n_type;
      const uint8_t* body = view.data_at(name_at, desc_at + descsz - name_at);
      if (!body) break;
      note.name = std::string_view(reinterpret_cast<const char*>(body), namesz);
      note.descriptor = std::span<const uint8_t>(body + (desc_at - name_at), descsz);
      note.alone = at == ph.p_offset && next >= end;
      visit(note);
      if (next <= at) break;
      at = next;
    }
  }
}

inline bool note_named(const NoteRef& note, std::string_view name) {
  // The name is stored with its NUL; a writer that left it out is still recognised.
  return note.name == name ||
         (note.name.size() == name.size() + 1 && note.name.substr(0, name.size()) == name && note.name.back() == '\0');
}

}  // namespace runpatch
