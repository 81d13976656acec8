// The names pyelftools gives machines and OS ABIs: auto-patchelf.py compares
// architectures by these names (so an x32 file is "x64" too) and prints them
// in its skip messages.
#pragma once

#include <cstdint>
#include <string>

namespace runpatch::pyelftools {

std::string machine_arch(uint16_t machine);  // ELFFile.get_machine_arch(): "x64", "AArch64", "<unknown>"
std::string osabi(uint8_t osabi);            // e_ident[EI_OSABI]: "ELFOSABI_SYSV"; unknown values as numbers

// osabi_are_compatible(wanted, got): SYSV on either side goes with anything.
bool osabi_compatible(uint8_t wanted, uint8_t got);

}  // namespace runpatch::pyelftools
