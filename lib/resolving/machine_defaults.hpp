// Loader facts glibc builds in per architecture, for trees of a machine other
// than the host (a Jetson rootfs on an x86-64 builder).
#pragma once

#include <string>
#include <vector>

#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

struct MachineDefaults {
  std::string interpreter;  // PT_INTERP glibc programs of this machine carry
  std::string multiarch;    // Debian triplet, "" if none
  std::string platform;     // $PLATFORM
  std::vector<std::string> default_dirs;
  std::string musl_arch;  // ARCH of musl's ld-musl-ARCH.so.1, "" if none
};

MachineDefaults machine_defaults(const ElfIdentity& id);

}  // namespace runpatch
