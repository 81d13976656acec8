#include "pyelftools_names.hpp"

#include <map>

namespace runpatch::pyelftools {

std::string machine_arch(uint16_t machine) {
  // The machines Nixpkgs builds for or meets in binary packages (pyelftools 0.29 names).
  static const std::map<uint16_t, std::string> names = {
      {2, "SPARC"},
      {3, "x86"},
      {4, "Motorola 68000"},
      {8, "MIPS"},
      {15, "Hewlett-Packard PA-RISC"},
      {18, "Enhanced SPARC"},
      {20, "PowerPC"},
      {21, "64-bit PowerPC"},
      {22, "IBM System/390"},
      {40, "ARM"},
      {41, "Digital Alpha"},
      {42, "Hitachi SH"},
      {43, "SPARC Version 9"},
      {50, "Intel IA-64"},
      {62, "x64"},
      {94, "Tensilica Xtensa"},
      {113, "Altera Nios II"},
      {183, "AArch64"},
      {189, "Xilinx MicroBlaze 32-bit RISC"},
      {190, "NVIDIA CUDA"},
      {224, "AMD GPU"},
      {243, "RISC-V"},
      {247, "Linux BPF - in-kernel virtual machine"},
      {252, "C-SKY"},
  };
  auto it = names.find(machine);
  return it == names.end() ? "<unknown>" : it->second;
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
