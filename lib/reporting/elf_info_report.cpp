#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runpatch/reading/elf_types.hpp"
#include "runpatch/reporting/elf_info_report.hpp"
#include "runpatch/reporting/utf8.hpp"
#include "runpatch/resolving/resolution_cache.hpp"

namespace runpatch {

namespace {
std::string class_text(const ElfIdentity& id) {
  return fmt::format("ELF{} {}", id.elf_class == ElfClass::Elf64 ? 64 : 32,
                     id.byte_order == ByteOrder::Big ? "big-endian" : "little-endian");
}
nlohmann::json dlopen_json(const std::vector<DlopenDependency>& deps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : deps) out.push_back({{"soname", d.sonames}, {"feature", d.feature}, {"priority", d.priority}});
  return out;
}
nlohmann::json resolution_cache_json(const std::optional<ResolutionCacheNote>& note) {
  if (!note) return nullptr;
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : note->entries) entries.push_back({{"needed", e.needed}, {"locations", e.locations}});
  nlohmann::json out = {{"offset", note->offset}, {"size", note->size}, {"entries", entries}};
  if (!note->defect.empty()) out["defect"] = note->defect;
  return out;
}
std::string or_dash(const std::optional<std::string>& value) {
  return value ? (value->empty() ? "\"\"" : *value) : "-";
}
}  // namespace

std::string format_elf_info(const ElfInfo& info) {
  // ELF strings and names are bytes: a newline or an ESC in one must not forge a line or colour the terminal.
  std::string out = fmt::format("{}:\n", escape_controls(info.path));
  auto line = [&](std::string_view key, const std::string& value) {
    out += fmt::format("  {:<12} {}\n", std::string(key) + ":", escape_controls(value));
  };
  line("class", class_text(info.identity));
  line("type", fmt::format("{} ({})", info.kind(), type_name(info.type)));
  line("machine", fmt::format("{} ({})", machine_name(info.identity.machine), info.identity.machine));
  line("os/abi", fmt::format("{} ({})", osabi_name(info.identity.osabi), info.identity.osabi));
  line("interpreter", or_dash(info.interpreter));
  if (!info.has_dynamic) {
    line("dynamic",
         info.type == elf::ET_REL ? "none (a relocatable object: not linked yet)" : "none (statically linked)");
    return out;
  }
  line("soname", or_dash(info.soname));
  line("runpath", or_dash(info.runpath));
  line("rpath", or_dash(info.rpath));
  line("needed", info.needed.empty() ? "-" : fmt::format("{}", fmt::join(info.needed, " ")));
  auto flags = flags_1_names(info.flags_1);
  line("flags_1", flags.empty() ? "-" : fmt::format("{}", fmt::join(flags, " ")));
  for (const auto& d : info.dlopen)
    line("dlopen",
         fmt::format("{} ({}{})", fmt::join(d.sonames, " | "), d.priority.empty() ? "" : d.priority + ", ", d.feature));
  if (const auto& note = info.resolution_cache) {
    if (!note->defect.empty())
      line("ldcache", "unreadable: " + note->defect);
    else if (note->entries.empty())
      line("ldcache", "empty");
    for (const auto& e : note->entries) line("ldcache", format_resolution_cache_entry(e));
  }
  if (!info.duplicate_tags.empty())
    line("duplicates", fmt::format("{} (the loader uses the first)", fmt::join(info.duplicate_tags, " ")));
  return out;
}

std::string format_scan_line(const ElfInfo& info) {
  std::string out = fmt::format("{}: {} {}", info.path, info.kind(), machine_name(info.identity.machine));
  if (info.has_dynamic) {
    if (info.runpath) out += fmt::format(" runpath={}", *info.runpath);
    if (info.rpath) out += fmt::format(" rpath={}", *info.rpath);
    out += fmt::format(" needed={}", fmt::join(info.needed, ","));
  }
  return escape_controls(out);  // one line per file, whatever the names hold
}

nlohmann::json elf_info_json(const ElfInfo& info) {
  auto optional = [](const std::optional<std::string>& v) -> nlohmann::json {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  const auto& id = info.identity;
  return {
      {"path", info.path},
      {"class", id.elf_class == ElfClass::Elf64 ? 64 : 32},
      {"byte_order", id.byte_order == ByteOrder::Big ? "big" : "little"},
      {"machine", id.machine},
      {"machine_name", machine_name(id.machine)},
      {"osabi", id.osabi},
      {"type", type_name(info.type)},
      {"kind", info.kind()},
      {"static", info.is_static()},
      {"pie", info.is_pie()},
      {"shared_library", info.is_shared_library()},
      {"interpreter", optional(info.interpreter)},
      {"soname", optional(info.soname)},
      {"runpath", optional(info.runpath)},
      {"rpath", optional(info.rpath)},
      {"needed", info.needed},
      {"flags", info.flags},
      {"flags_1", flags_1_names(info.flags_1)},
      {"nodeflib", info.nodeflib()},
      {"section_headers", info.shnum},
      {"program_headers", info.phnum},
      {"duplicate_tags", info.duplicate_tags},
      {"dlopen", dlopen_json(info.dlopen)},
      {"resolution_cache", resolution_cache_json(info.resolution_cache)},
  };
}

}  // namespace runpatch
