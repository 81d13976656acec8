// The dynamic section as an editable list: entries keep their raw value, and
// string-valued ones also their text; edits mark the entries they change.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "editing/string_refs.hpp"
#include "runpatch/editing/edit_request.hpp"

namespace runpatch {

struct DynamicEntry {
  uint64_t tag = 0;
  uint64_t value = 0;               // string entries: offset in the current table
  std::optional<std::string> text;  // string-valued entries only
  bool changed = false;             // text (or tag) differs from the file: needs a new string
};

struct DynamicModel {
  std::vector<DynamicEntry> entries;  // without the DT_NULL terminator

  template <class E>
  static Expected<DynamicModel> load(const ElfView<E>& view, const DynamicTable<E>& table) {
    DynamicModel model;
    for (const auto& d : table.entries()) {
      DynamicEntry e{d.d_tag, d.d_val, std::nullopt, false};
      if (is_string_tag(e.tag)) {
        RUNPATCH_TRY(auto text, dynamic_string(view, table, e.value, "dynamic entry"));
        e.text = std::string(text);
      }
      model.entries.push_back(std::move(e));
    }
    return model;
  }

  bool any_changed(const DynamicModel& original) const {
    if (entries.size() != original.entries.size()) return true;
    for (size_t i = 0; i < entries.size(); ++i)
      if (entries[i].changed || entries[i].tag != original.entries[i].tag ||
          entries[i].value != original.entries[i].value)
        return true;
    return false;
  }

  bool any_changed_tag(const DynamicModel& original) const {
    if (entries.size() != original.entries.size()) return true;
    for (size_t i = 0; i < entries.size(); ++i)
      if (entries[i].tag != original.entries[i].tag) return true;
    return false;
  }

  void set_runpath(const std::string& value, uint64_t tag) {
    auto first = std::find_if(entries.begin(), entries.end(), is_runpath_entry);
    if (first == entries.end()) {
      entries.push_back({tag, 0, value, true});
      return;
    }
    if (first->text == value)
      first->tag = tag;  // only the tag switches: the string stays where it is, one entry write
    else
      *first = {tag, 0, value, true};
    // Only one runpath tag may remain: a second one would be ignored or win unexpectedly.
    entries.erase(std::remove_if(first + 1, entries.end(), is_runpath_entry), entries.end());
  }

  void remove_runpath() {
    entries.erase(std::remove_if(entries.begin(), entries.end(), is_runpath_entry), entries.end());
  }

  void set_soname(const std::string& value) {
    for (auto& e : entries)
      if (e.tag == elf::DT_SONAME) {
        if (e.text != value) e = {elf::DT_SONAME, 0, value, true};
        return;
      }
    entries.push_back({elf::DT_SONAME, 0, value, true});
  }

  void replace_needed(const std::string& from, const std::string& to) {
    for (auto& e : entries)
      if (e.tag == elf::DT_NEEDED && e.text == from && from != to) e = {elf::DT_NEEDED, 0, to, true};
  }

  void remove_needed(const std::string& name) {
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [&](const DynamicEntry& e) { return e.tag == elf::DT_NEEDED && e.text == name; }),
                  entries.end());
  }

  // New DT_NEEDED entries go first, as patchelf puts them; present ones are
  // not duplicated unless even_if_present (patchelf's way).
  void add_needed(const std::vector<std::string>& names, bool even_if_present = false) {
    std::vector<DynamicEntry> added;
    for (const auto& name : names) {
      bool present = (!even_if_present &&
                      std::any_of(entries.begin(), entries.end(),
                                  [&](const DynamicEntry& e) { return e.tag == elf::DT_NEEDED && e.text == name; })) ||
                     std::any_of(added.begin(), added.end(), [&](const DynamicEntry& e) { return e.text == name; });
      if (!present) added.push_back({elf::DT_NEEDED, 0, name, true});
    }
    entries.insert(entries.begin(), added.begin(), added.end());
  }

  // Sets bits in DT_FLAGS_1 (a new entry when there is none).
  void set_flags_1(uint64_t bits) {
    for (auto& e : entries)
      if (e.tag == elf::DT_FLAGS_1) {
        e.value |= bits;
        return;
      }
    entries.push_back({elf::DT_FLAGS_1, bits, std::nullopt, true});
  }

  // A non-string entry, unless one with this tag is there.
  void add_once(uint64_t tag, uint64_t value) {
    if (std::none_of(entries.begin(), entries.end(), [&](const DynamicEntry& e) { return e.tag == tag; }))
      entries.push_back({tag, value, std::nullopt, true});
  }

  static bool is_runpath_entry(const DynamicEntry& e) { return e.tag == elf::DT_RUNPATH || e.tag == elf::DT_RPATH; }
};

}  // namespace runpatch
