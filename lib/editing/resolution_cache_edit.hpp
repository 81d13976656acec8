// What an edit does to the .note.nixos.ldcache note: the note the edited
// file must carry (built from its final DT_NEEDED and runpath), the one it
// carries now, and the bytes of a note.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "editing/byte_buffer.hpp"
#include "editing/dynamic_model.hpp"
#include "reading/resolution_cache_note.hpp"
#include "runpatch/resolving/resolution_cache.hpp"

namespace runpatch {

struct NoteChange {
  enum class Action { None, Write, Remove };
  Action action = Action::None;
  std::vector<uint8_t> bytes;              // Write: the whole note, padded to 4
  std::optional<NoteRef> existing;         // the note the file has now
  std::optional<size_t> existing_section;  // its section header
  std::vector<std::string> warnings;

  bool writes() const { return action == Action::Write; }
  bool moves_or_drops_existing_segment() const { return existing && existing->alone && action != Action::None; }
};

template <class E>
std::vector<uint8_t> resolution_cache_note_bytes(const std::vector<uint8_t>& descriptor) {
  std::string name(kResolutionCacheNoteName);
  uint64_t name_size = name.size() + 1;
  std::vector<uint8_t> bytes(sizeof(elf::Nhdr<E>) + align_up(name_size, 4) + align_up(descriptor.size(), 4), 0);
  auto* header = struct_at<elf::Nhdr<E>>(bytes, 0);
  header->n_namesz = uint32_t(name_size);
  header->n_descsz = uint32_t(descriptor.size());
  header->n_type = kResolutionCacheNoteType;
  std::copy(name.begin(), name.end(), bytes.begin() + sizeof(elf::Nhdr<E>));
  std::copy(descriptor.begin(), descriptor.end(), bytes.begin() + sizeof(elf::Nhdr<E>) + align_up(name_size, 4));
  return bytes;
}

// The note header with a type no reader knows: how a note that shares its
// segment with others stops being a resolution cache without moving them.
template <class E>
std::vector<uint8_t> neutralized_note_header(const ElfView<E>& view, const NoteRef& note) {
  elf::Nhdr<E> header = *reinterpret_cast<const elf::Nhdr<E>*>(view.data_at(note.offset, sizeof header));
  header.n_type = 0;
  return bytes_of(std::span<const elf::Nhdr<E>>(&header, 1));
}

template <class E>
NoteChange plan_note_change(const ElfView<E>& view, const ElfInfo& info, const DynamicModel& model,
                            const EditRequest& request) {
  NoteChange change;
  // The reader already knows whether there is a note; only then walk the notes for its segment and neighbours.
  if (info.resolution_cache) change.existing = find_resolution_cache_note(view);
  if (change.existing) {
    auto shdrs = view.shdrs();
    for (size_t i = 0; i < shdrs.size(); ++i)
      if (shdrs[i].sh_type == elf::SHT_NOTE && shdrs[i].sh_offset == change.existing->offset)
        change.existing_section = i;
  }
  if (request.resolution_cache == ResolutionCacheMode::Remove) {
    if (change.existing) change.action = NoteChange::Action::Remove;
    return change;
  }
  if (request.resolution_cache == ResolutionCacheMode::Refresh && !change.existing) return change;

  ResolutionCacheInputs inputs;
  inputs.identity = info.identity;
  const DynamicEntry *runpath = nullptr, *rpath = nullptr;
  for (const auto& e : model.entries) {
    if (e.tag == elf::DT_NEEDED && e.text) inputs.needed.push_back(*e.text);
    // ld.so uses the first of each and ignores DT_RPATH when DT_RUNPATH is present.
    if (e.text && e.tag == elf::DT_RUNPATH && !runpath) runpath = &e;
    if (e.text && e.tag == elf::DT_RPATH && !rpath) rpath = &e;
  }
  if (runpath || rpath) inputs.runpath = *(runpath ? runpath : rpath)->text;
  ResolutionCache cache = build_resolution_cache(inputs, request.resolution_root);
  if (std::string reason = resolution_cache_unavailable_reason(inputs, cache); !reason.empty()) {
    change.warnings.push_back(change.existing ? "resolution cache removed: " + reason
                                              : "no resolution cache written: " + reason);
    if (change.existing) change.action = NoteChange::Action::Remove;
    return change;
  }
  change.bytes = resolution_cache_note_bytes<E>(encode_resolution_cache(cache));
  bool same =
      change.existing && change.existing->size == change.bytes.size() &&
      view.in_file(change.existing->offset, change.bytes.size()) &&
      std::equal(change.bytes.begin(), change.bytes.end(), view.data_at(change.existing->offset, change.bytes.size()));
  if (!same) change.action = NoteChange::Action::Write;
  return change;
}

// Where name lies in a string table (a suffix of a longer string counts), if anywhere.
inline std::optional<uint64_t> find_string_in_table(std::span<const uint8_t> table, std::string_view name) {
  std::string needle(name);
  needle.push_back('\0');
  auto it = std::search(table.begin(), table.end(), needle.begin(), needle.end());
  if (it == table.end()) return std::nullopt;
  return uint64_t(it - table.begin());
}

}  // namespace runpatch
