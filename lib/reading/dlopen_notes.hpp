// FDO dlopen metadata (https://systemd.io/ELF_DLOPEN_METADATA/): PT_NOTE
// entries named "FDO" of type 0x407c0c0a whose descriptor is a JSON array of
// {"soname": [...], "feature": ..., "priority": ...}. Malformed notes are
// skipped: they never make a file unreadable.
#pragma once

#include <nlohmann/json.hpp>

#include "reading/elf_view.hpp"
#include "runpatch/elf_info.hpp"

namespace runpatch {

inline constexpr uint32_t kNoteFdoDlopen = 0x407c0c0a;

template <class E>
void read_dlopen_notes(const ElfView<E>& view, ElfInfo& info) {
  for (const auto& ph : view.phdrs()) {
    if (ph.p_type != elf::PT_NOTE || !view.in_file(ph.p_offset, ph.p_filesz)) continue;
    uint64_t align = ph.p_align == 8 ? 8 : 4;
    uint64_t at = ph.p_offset, end = uint64_t(ph.p_offset) + uint64_t(ph.p_filesz);
    // at may pass end when the last descriptor's padding is cut off: check before subtracting.
    while (at <= end && end - at >= sizeof(elf::Nhdr<E>)) {
      const auto& nh = *reinterpret_cast<const elf::Nhdr<E>*>(view.bytes().data() + at);
      uint64_t namesz = nh.n_namesz, descsz = nh.n_descsz;
      uint64_t name_at = at + sizeof(elf::Nhdr<E>);
      uint64_t desc_at = name_at + ((namesz + align - 1) & ~(align - 1));
      uint64_t next = desc_at + ((descsz + align - 1) & ~(align - 1));
      if (namesz > end - name_at || desc_at > end || descsz > end - desc_at) break;
      const char* name = reinterpret_cast<const char*>(view.bytes().data() + name_at);
      if (nh.n_type == kNoteFdoDlopen && namesz == 4 && std::memcmp(name, "FDO", 4) == 0) {
        const char* desc = reinterpret_cast<const char*>(view.bytes().data() + desc_at);
        std::string text(desc, strnlen(desc, descsz));
        auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (json.is_array())
          for (const auto& item : json) {
            if (!item.is_object() || !item.contains("soname") || !item["soname"].is_array()) continue;
            DlopenDependency dep;
            for (const auto& s : item["soname"])
              if (s.is_string()) dep.sonames.push_back(s.get<std::string>());
            if (item.contains("feature") && item["feature"].is_string()) dep.feature = item["feature"].get<std::string>();
            if (item.contains("priority") && item["priority"].is_string()) dep.priority = item["priority"].get<std::string>();
            if (!dep.sonames.empty()) info.dlopen.push_back(std::move(dep));
          }
      }
      if (next <= at) break;
      at = next;
    }
  }
}

}  // namespace runpatch
