// FDO dlopen metadata (https://systemd.io/ELF_DLOPEN_METADATA/): PT_NOTE
// entries named "FDO" of type 0x407c0c0a whose descriptor is a JSON array of
// {"soname": [...], "feature": ..., "priority": ...}. Malformed notes are
// skipped: they never make a file unreadable.
#pragma once

#include <nlohmann/json.hpp>

#include "reading/notes.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

template <class E>
void read_dlopen_notes(const ElfView<E>& view, ElfInfo& info) {
  for_each_note(view, [&](const NoteRef& note) {
    if (note.type != elf::NT_FDO_DLOPEN_METADATA || !note_named(note, "FDO")) return;
    const char* desc = reinterpret_cast<const char*>(note.descriptor.data());
    std::string text(desc, strnlen(desc, note.descriptor.size()));
    auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!json.is_array()) return;
    for (const auto& item : json) {
      if (!item.is_object() || !item.contains("soname") || !item["soname"].is_array()) continue;
      DlopenDependency dep;
      for (const auto& s : item["soname"])
        if (s.is_string()) dep.sonames.push_back(s.get<std::string>());
      if (item.contains("feature") && item["feature"].is_string()) dep.feature = item["feature"].get<std::string>();
      if (item.contains("priority") && item["priority"].is_string()) dep.priority = item["priority"].get<std::string>();
      if (!dep.sonames.empty()) info.dlopen.push_back(std::move(dep));
    }
  });
}

}  // namespace runpatch
