// Everything the library knows per machine (e_machine), in one table: our
// name for it, pyelftools' (auto-patchelf's messages), the page binutils lays
// segments out by, and the loader facts glibc and musl build in.
#pragma once

#include <cstdint>
#include <string_view>

#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

// What one byte order of a machine's Linux ABI fixes ("" where none).
struct MachineAbi {
  std::string_view interpreter;  // PT_INTERP of glibc programs
  std::string_view multiarch;    // Debian triplet
  std::string_view platform;     // $PLATFORM
  std::string_view musl_arch;    // ARCH of musl's ld-musl-ARCH.so.1
};

struct MachineFacts {
  uint16_t machine;
  std::string_view name;        // what print and scan call it; "" for machine-N
  std::string_view pyelftools;  // pyelftools 0.29's get_machine_arch(); "" for <unknown>
  uint64_t binutils_page;       // binutils' ELF_MAXPAGESIZE (strip and objcopy lay segments out by it)
  MachineAbi little, big;

  const MachineAbi& abi(ByteOrder order) const { return order == ByteOrder::Big ? big : little; }
};

// The row of `machine`, or nullptr for a machine the table does not know.
const MachineFacts* machine_facts(uint16_t machine);

}  // namespace runpatch
