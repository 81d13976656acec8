// Finds the .note.nixos.ldcache note of an image (the first one, as the loader does).
#pragma once

#include <optional>

#include "reading/notes.hpp"
#include "runpatch/reading/resolution_cache_format.hpp"

namespace runpatch {

template <class E>
std::optional<NoteRef> find_resolution_cache_note(const ElfView<E>& view) {
  std::optional<NoteRef> found;
  for_each_note(view, [&](const NoteRef& note) {
    if (!found && note.type == kResolutionCacheNoteType && note_named(note, kResolutionCacheNoteName)) found = note;
  });
  return found;
}

template <class E>
void read_resolution_cache_note(const ElfView<E>& view, ElfInfo& info) {
  auto note = find_resolution_cache_note(view);
  if (!note) return;
  ResolutionCacheNote out;
  out.offset = note->offset;
  out.size = note->size;
  if (auto decoded = decode_resolution_cache(note->descriptor))
    out.entries = std::move(*decoded);
  else
    out.defect = decoded.error().what;
  info.resolution_cache = std::move(out);
}

}  // namespace runpatch
