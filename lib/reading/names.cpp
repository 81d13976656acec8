// Human names for ELF enumerations; unknown values print as numbers.
#include <fmt/format.h>

#include "runpatch/elf_info.hpp"
#include "runpatch/elf_types.hpp"

namespace runpatch {

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case elf::EM_386: return "i386";
    case elf::EM_X86_64: return "x86-64";
    case elf::EM_AARCH64: return "aarch64";
    case elf::EM_ARM: return "arm";
    case elf::EM_PPC: return "ppc";
    case elf::EM_PPC64: return "ppc64";
    case elf::EM_RISCV: return "riscv";
    case elf::EM_S390: return "s390";
    case elf::EM_MIPS: return "mips";
    case elf::EM_SPARCV9: return "sparcv9";
    case elf::EM_LOONGARCH: return "loongarch";
    default: return fmt::format("machine-{}", machine);
  }
}

std::string osabi_name(uint8_t osabi) {
  switch (osabi) {
    case 0: return "SYSV";
    case 3: return "GNU";
    case 6: return "Solaris";
    case 9: return "FreeBSD";
    case 97: return "ARM";
    case 255: return "standalone";
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
      {0x1, "NOW"},           {0x2, "GLOBAL"},        {0x4, "GROUP"},     {0x8, "NODELETE"},
      {0x10, "LOADFLTR"},     {0x20, "INITFIRST"},    {0x40, "NOOPEN"},   {0x80, "ORIGIN"},
      {0x100, "DIRECT"},      {0x400, "INTERPOSE"},   {0x800, "NODEFLIB"}, {0x1000, "NODUMP"},
      {0x8000000, "PIE"},
  };
  std::vector<std::string> names;
  for (auto [bit, name] : kNames)
    if (flags_1 & bit) flags_1 &= ~bit, names.emplace_back(name);
  if (flags_1) names.push_back(fmt::format("{:#x}", flags_1));
  return names;
}

}  // namespace runpatch
