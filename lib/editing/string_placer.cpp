#include "editing/string_placer.hpp"

#include <algorithm>
#include <cstring>

#include "editing/layout_math.hpp"
#include "editing/string_space.hpp"

namespace runpatch {

template <class E>
std::optional<PlacedStrings> StringPlacer<E>::in_unused_bytes(const std::vector<ByteRange>& used_now,
                                                              std::optional<uint64_t> table_size) const {
  PlacedStrings placed{in_.model, in_.copy_range(in_.table.strtab_offset, in_.table.strtab_size), {}};
  placed.strtab.resize(std::max<uint64_t>(table_size.value_or(0), in_.table.strtab_size), 0);
  StringSpace space(placed.strtab.size(), used_now);
  auto place = [&](const std::string& text) -> std::optional<uint64_t> {
    if (auto it = placed.offsets.find(text); it != placed.offsets.end()) return it->second;
    auto at = space.allocate(text.size() + 1);
    if (!at) return std::nullopt;
    std::memcpy(placed.strtab.data() + *at, text.c_str(), text.size() + 1);
    placed.offsets[text] = *at;
    return at;
  };
  for (auto& e : placed.model.entries) {
    if (!e.changed || !e.text) continue;
    auto at = place(*e.text);
    if (!at) return std::nullopt;
    e.value = *at;
  }
  for (const auto& rename : in_.version_need_renames)
    if (!place(rename.text)) return std::nullopt;
  for (const auto& name : in_.renamer.new_names())
    if (!place(name)) return std::nullopt;
  return placed;
}

// Index of the only changed entry when the edit is "this one string, same place in the table".
template <class E>
std::optional<size_t> StringPlacer<E>::single_changed_entry() const {
  const auto &now = in_.model.entries, &before = in_.original.entries;
  if (now.size() != before.size() || !in_.version_need_renames.empty() || !in_.renamer.empty()) return std::nullopt;
  std::optional<size_t> only;
  for (size_t i = 0; i < now.size(); ++i) {
    if (!now[i].changed) continue;
    // DT_RPATH and DT_RUNPATH may switch (--force-rpath, or --set-rpath on DT_RPATH): their string is the same kind.
    bool same_kind = now[i].tag == before[i].tag ||
                     (DynamicModel::is_runpath_entry(now[i]) && DynamicModel::is_runpath_entry(before[i]));
    if (only || !same_kind || !before[i].text) return std::nullopt;
    only = i;
  }
  return only;
}

template <class E>
std::optional<PlacedStrings> StringPlacer<E>::over_own_bytes(const std::vector<ByteRange>& survives,
                                                             OldTail old_tail) const {
  auto single = single_changed_entry();
  if (!single) return std::nullopt;
  if (old_tail == OldTail::Kept && placed_tag_changes(*single)) return std::nullopt;
  PlacedStrings placed{in_.model, in_.copy_range(in_.table.strtab_offset, in_.table.strtab_size), {}};
  auto& entry = placed.model.entries[*single];
  uint64_t at = in_.original.entries[*single].value;
  StringSpace reusable(in_.table.strtab_size, survives);
  if (!reusable.claim(at, entry.text->size() + 1)) return std::nullopt;
  if (old_tail == OldTail::Zeroed) in_.zero_replaced_strings(placed.strtab);  // no tail of the old string stays
  std::memcpy(placed.strtab.data() + at, entry.text->c_str(), entry.text->size() + 1);
  entry.value = at;
  placed.offsets[*entry.text] = at;
  return placed;
}

template <class E>
bool StringPlacer<E>::placed_tag_changes(size_t entry) const {
  return in_.model.entries[entry].tag != in_.original.entries[entry].tag;
}

template <class E>
PlacedStrings StringPlacer<E>::in_extended_table(uint64_t kept_size) const {
  PlacedStrings placed{in_.model, {}, {}};
  std::vector<std::string> added;
  for (const auto& e : placed.model.entries)
    if (e.changed && e.text && !DynamicModel::is_runpath_entry(e)) added.push_back(*e.text);
  for (const auto& rename : in_.version_need_renames) added.push_back(rename.text);
  for (const auto& name : in_.renamer.new_names()) added.push_back(name);
  for (const auto& e : placed.model.entries)
    if (e.changed && e.text && DynamicModel::is_runpath_entry(e)) added.push_back(*e.text);
  std::vector<uint8_t> kept = in_.copy_range(in_.table.strtab_offset, kept_size);
  if (in_.options.mark_replaced_runpath) {
    in_.zero_replaced_strings(kept, uint8_t('X'));  // patchelf marks the one it replaces, keeps the rest
  } else if (auto live = in_.surviving_string_refs()) {
    in_.zero_unreferenced_strings(kept, std::move(*live));
  }
  auto table = layout::extended_string_table(kept, added, kStringSlack);
  placed.strtab = std::move(table.bytes);
  placed.offsets = std::move(table.offsets);
  for (auto& e : placed.model.entries)
    if (e.changed && e.text) e.value = placed.offsets[*e.text];
  return placed;
}

#define RUNPATCH_INSTANTIATE(E) template class StringPlacer<E>;
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
