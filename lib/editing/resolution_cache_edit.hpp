// What an edit does to the .note.nixos.ldcache note: the note the edited
// file must carry (built from its final DT_NEEDED and runpath), the one it
// carries now, and the bytes of a note.
#pragma once

#include <fmt/format.h>

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
  std::vector<EditWarning> warnings;

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

// What the loader's search for the note's entries depends on: DT_NEEDED in
// order, and the search path (DT_RUNPATH, else DT_RPATH).
struct SearchInputs {
  std::vector<std::string> needed;
  std::optional<std::string> path;
  bool operator==(const SearchInputs&) const = default;
};

inline SearchInputs search_inputs(const DynamicModel& model) {
  SearchInputs inputs;
  const DynamicEntry *runpath = nullptr, *rpath = nullptr;
  for (const auto& e : model.entries) {
    if (e.tag == elf::DT_NEEDED && e.text) inputs.needed.push_back(*e.text);
    // ld.so uses the first of each and ignores DT_RPATH when DT_RUNPATH is present.
    if (e.text && e.tag == elf::DT_RUNPATH && !runpath) runpath = &e;
    if (e.text && e.tag == elf::DT_RPATH && !rpath) rpath = &e;
  }
  if (runpath || rpath) inputs.path = *(runpath ? runpath : rpath)->text;
  return inputs;
}

// The sections named .note.nixos.ldcache (an objcopy --add-section copy, a
// malformed note): a writer that adds one more would leave two of one name.
template <class E>
std::vector<size_t> resolution_cache_sections(const ElfView<E>& view) {
  std::vector<size_t> found;
  auto shdrs = view.shdrs();
  uint32_t names = view.shstrndx();
  if (names == 0 || names >= shdrs.size() || !view.in_file(shdrs[names].sh_offset, shdrs[names].sh_size)) return found;
  const uint8_t* names_at = view.data_at(shdrs[names].sh_offset, shdrs[names].sh_size);
  if (!names_at) return found;
  std::span<const uint8_t> table(names_at, size_t(shdrs[names].sh_size));
  for (size_t i = 1; i < shdrs.size(); ++i) {
    uint64_t at = shdrs[i].sh_name;
    if (at + kResolutionCacheSection.size() >= table.size()) continue;
    if (std::equal(kResolutionCacheSection.begin(), kResolutionCacheSection.end(), table.begin() + at) &&
        table[at + kResolutionCacheSection.size()] == 0)
      found.push_back(i);
  }
  return found;
}

template <class E>
void locate_existing_note(const ElfView<E>& view, const ElfInfo& info, NoteChange& change) {
  // The reader already knows whether there is a note; only then walk the notes for its segment and neighbours.
  if (info.resolution_cache) change.existing = find_resolution_cache_note(view);
  if (!change.existing) return;
  auto shdrs = view.shdrs();
  for (size_t i = 0; i < shdrs.size(); ++i)
    if (shdrs[i].sh_type == elf::SHT_NOTE && shdrs[i].sh_offset == change.existing->offset) change.existing_section = i;
}

// patchelf builds a note once: an earlier one (or any section of the note's
// name) that this edit does not drop must already be the note it would write.
inline constexpr std::string_view kNoteAlreadyPresent =
    "--build-resolution-cache: a resolution cache note is already present; rebuild from an unpatched binary";

template <class E>
Expected<NoteChange> plan_note_change(const ElfView<E>& view, const ElfInfo& info, const DynamicModel& original,
                                      const DynamicModel& model, const EditRequest& request) {
  NoteChange change;
  locate_existing_note(view, info, change);
  const ResolutionCacheMode mode = request.resolution_cache;
  // patchelf drops the note with any runpath operation on a file without one, as with every change.
  bool changed = search_inputs(original) != search_inputs(model) ||
                 (request.runpath && !info.runpath && !info.rpath && mode != ResolutionCacheMode::Refresh);
  if (mode == ResolutionCacheMode::Remove || (mode == ResolutionCacheMode::DropOnChange && changed)) {
    if (change.existing) change.action = NoteChange::Action::Remove;
    return change;
  }
  if (mode == ResolutionCacheMode::DropOnChange || (mode == ResolutionCacheMode::Refresh && !change.existing))
    return change;

  std::vector<size_t> named = resolution_cache_sections(view);
  bool earlier = change.existing || !named.empty();
  bool once = mode == ResolutionCacheMode::WriteOnce;
  SearchInputs now = search_inputs(model);
  ResolutionCacheInputs inputs{now.needed, now.path.value_or(""), info.identity};
  ResolutionCache cache = build_resolution_cache(inputs, request.resolution_root);
  if (std::string reason = resolution_cache_unavailable_reason(inputs, cache); !reason.empty()) {
    if (once && earlier && !changed)
      return view.error(ErrorCode::ResolutionCacheExists, std::string(kNoteAlreadyPresent));
    if (once)  // in patchelf's words
      change.warnings.push_back(
          {EditWarningKind::ResolutionCacheNotWritten,
           std::string("--build-resolution-cache: ") +
               (inputs.needed.empty() || inputs.runpath.empty() ? "no DT_NEEDED entries or run path to resolve"
                                                                : "no libraries resolved against the run path") +
               "; no cache written"});
    else
      change.warnings.push_back(
          change.existing
              ? EditWarning{EditWarningKind::ResolutionCacheRemoved, "resolution cache removed: " + reason}
              : EditWarning{EditWarningKind::ResolutionCacheNotWritten, "no resolution cache written: " + reason});
    if (change.existing) change.action = NoteChange::Action::Remove;
    return change;
  }
  change.bytes = resolution_cache_note_bytes<E>(encode_resolution_cache(cache));
  bool same =
      change.existing && change.existing->size == change.bytes.size() &&
      view.in_file(change.existing->offset, change.bytes.size()) &&
      std::equal(change.bytes.begin(), change.bytes.end(), view.data_at(change.existing->offset, change.bytes.size()));
  if (same) return change;
  if (once && earlier && !changed)
    return view.error(ErrorCode::ResolutionCacheExists, std::string(kNoteAlreadyPresent));
  // Only the note this edit replaces may carry the name.
  for (size_t index : named)
    if (index != change.existing_section)
      return view.error(
          ErrorCode::Unsupported,
          fmt::format("section [{}] is named {} but holds no resolution-cache note this edit can replace; "
                      "remove it (objcopy --remove-section) and edit again",
                      index, kResolutionCacheSection));
  change.action = NoteChange::Action::Write;
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
