#include "pyelftools_names.hpp"

#include <map>

#include "runpatch/reading/machines.hpp"

namespace runpatch::pyelftools {

std::string machine_arch(uint16_t machine) {
  const MachineFacts* facts = machine_facts(machine);
  return facts && !facts->pyelftools.empty() ? std::string(facts->pyelftools) : "<unknown>";
}

std::string osabi(uint8_t value) {
  static const std::map<uint8_t, std::string> names = {
      {0, "ELFOSABI_SYSV"},       {1, "ELFOSABI_HPUX"},         {2, "ELFOSABI_NETBSD"},     {3, "ELFOSABI_LINUX"},
      {4, "ELFOSABI_HURD"},       {6, "ELFOSABI_SOLARIS"},      {7, "ELFOSABI_AIX"},        {8, "ELFOSABI_IRIX"},
      {9, "ELFOSABI_FREEBSD"},    {10, "ELFOSABI_TRU64"},       {11, "ELFOSABI_MODESTO"},   {12, "ELFOSABI_OPENBSD"},
      {13, "ELFOSABI_OPENVMS"},   {14, "ELFOSABI_NSK"},         {15, "ELFOSABI_AROS"},      {16, "ELFOSABI_FENIXOS"},
      {17, "ELFOSABI_CLOUD"},     {53, "ELFOSABI_SORTIX"},      {64, "ELFOSABI_ARM_AEABI"}, {97, "ELFOSABI_ARM"},
      {102, "ELFOSABI_CELL_LV2"}, {255, "ELFOSABI_STANDALONE"},
  };
  auto it = names.find(value);
  return it == names.end() ? std::to_string(value) : it->second;
}

bool osabi_compatible(uint8_t wanted, uint8_t got) { return wanted == 0 || got == 0 || wanted == got; }

}  // namespace runpatch::pyelftools
