// Human names for ELF enumerations; unknown values print as numbers.
#include <fmt/format.h>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/reading/machines.hpp"

namespace runpatch {

std::string machine_name(uint16_t machine) {
  const MachineFacts* facts = machine_facts(machine);
  if (facts && !facts->name.empty()) return std::string(facts->name);
  return fmt::format("machine-{}", machine);
}

std::string osabi_name(uint8_t osabi) {
  switch (osabi) {
    case elf::ELFOSABI_SYSV: return "SYSV";
    case elf::ELFOSABI_GNU: return "GNU";
    case elf::ELFOSABI_SOLARIS: return "Solaris";
    case elf::ELFOSABI_FREEBSD: return "FreeBSD";
    case elf::ELFOSABI_ARM: return "ARM";
    case elf::ELFOSABI_STANDALONE: return "standalone";
    default: return fmt::format("osabi-{}", osabi);
  }
}

std::string type_name(uint16_t type) {
  switch (type) {
    case elf::ET_NONE: return "ET_NONE";
    case elf::ET_REL: return "ET_REL";
    case elf::ET_EXEC: return "ET_EXEC";
    case elf::ET_DYN: return "ET_DYN";
    case elf::ET_CORE: return "ET_CORE";
    default: return fmt::format("ET_{:#x}", type);
  }
}

std::vector<std::string> flags_1_names(uint64_t flags_1) {
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {elf::DF_1_NOW, "NOW"},           {elf::DF_1_GLOBAL, "GLOBAL"},
      {elf::DF_1_GROUP, "GROUP"},       {elf::DF_1_NODELETE, "NODELETE"},
      {elf::DF_1_LOADFLTR, "LOADFLTR"}, {elf::DF_1_INITFIRST, "INITFIRST"},
      {elf::DF_1_NOOPEN, "NOOPEN"},     {elf::DF_1_ORIGIN, "ORIGIN"},
      {elf::DF_1_DIRECT, "DIRECT"},     {elf::DF_1_INTERPOSE, "INTERPOSE"},
      {elf::DF_1_NODEFLIB, "NODEFLIB"}, {elf::DF_1_NODUMP, "NODUMP"},
      {elf::DF_1_PIE, "PIE"},
  };
  std::vector<std::string> names;
  for (auto [bit, name] : kNames)
    if (flags_1 & bit) flags_1 &= ~bit, names.emplace_back(name);
  if (flags_1) names.push_back(fmt::format("{:#x}", flags_1));
  return names;
}

}  // namespace runpatch
