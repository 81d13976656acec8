// FDO dlopen metadata (https://systemd.io/ELF_DLOPEN_METADATA/): PT_NOTE
// entries named "FDO" of type 0x407c0c0a whose descriptor is a JSON array of
// {"soname": [...], "feature": ..., "priority": ...}. Malformed notes are
// skipped (and said in ElfInfo::dlopen_note_problems): they never make a file
// unreadable.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "reading/notes.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

// One entry of the array; its problem, or "" when it is usable.
inline std::string read_dlopen_entry(const nlohmann::json& item, DlopenDependency& dep) {
  if (!item.is_object()) return "an entry is not a JSON object";
  auto soname = item.find("soname");
  if (soname == item.end()) return "an entry has no \"soname\"";
  if (!soname->is_array()) return "an entry's \"soname\" is not a list";
  for (const auto& s : *soname) {
    if (!s.is_string()) return "an entry's \"soname\" holds a value that is not a string";
    dep.sonames.push_back(s.get<std::string>());
  }
  if (dep.sonames.empty()) return "an entry's \"soname\" list is empty";
  if (item.contains("feature") && item["feature"].is_string()) dep.feature = item["feature"].get<std::string>();
  if (item.contains("priority") && item["priority"].is_string()) dep.priority = item["priority"].get<std::string>();
  return "";
}

template <class E>
void read_dlopen_notes(const ElfView<E>& view, ElfInfo& info) {
  for_each_note(view, [&](const NoteRef& note) {
    if (note.type != elf::NT_FDO_DLOPEN_METADATA || !note_named(note, "FDO")) return;
    const char* desc = reinterpret_cast<const char*>(note.descriptor.data());
    std::string text(desc, strnlen(desc, note.descriptor.size()));
    auto problem = [&](const std::string& what) {
      info.dlopen_note_problems.push_back(".note.dlopen: " + what + "; skipped");
    };
    // nlohmann::json rejects strings that are not UTF-8 as a parse error.
    auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return problem("not valid JSON (or not UTF-8)");
    if (!json.is_array()) return problem("not a JSON array");
    for (const auto& item : json) {
      DlopenDependency dep;
      std::string why = read_dlopen_entry(item, dep);
      if (why.empty())
        info.dlopen.push_back(std::move(dep));
      else
        problem(why);
    }
  });
}

}  // namespace runpatch
