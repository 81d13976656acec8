#include "resolving/machine_defaults.hpp"

#include "runpatch/reading/elf_types.hpp"

namespace runpatch {

MachineDefaults machine_defaults(const ElfIdentity& id) {
  bool big = id.byte_order == ByteOrder::Big;
  MachineDefaults d;
  switch (id.machine) {
    case elf::EM_X86_64: d = {"/lib64/ld-linux-x86-64.so.2", "x86_64-linux-gnu", "x86_64", {}}; break;
    case elf::EM_386: d = {"/lib/ld-linux.so.2", "i386-linux-gnu", "i686", {}}; break;
    case elf::EM_AARCH64: d = {"/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu", "aarch64", {}}; break;
    case elf::EM_ARM: d = {"/lib/ld-linux-armhf.so.3", "arm-linux-gnueabihf", "v7l", {}}; break;
    case elf::EM_PPC64:
      d = big ? MachineDefaults{"/lib64/ld64.so.1", "powerpc64-linux-gnu", "power8", {}}
              : MachineDefaults{"/lib64/ld64.so.2", "powerpc64le-linux-gnu", "power8", {}};
      break;
    case elf::EM_RISCV: d = {"/lib/ld-linux-riscv64-lp64d.so.1", "riscv64-linux-gnu", "riscv64", {}}; break;
    default: break;
  }
  switch (id.machine) {
    case elf::EM_X86_64: d.musl_arch = "x86_64"; break;
    case elf::EM_386: d.musl_arch = "i386"; break;
    case elf::EM_AARCH64: d.musl_arch = big ? "aarch64_be" : "aarch64"; break;
    case elf::EM_ARM: d.musl_arch = "armhf"; break;
    case elf::EM_PPC64: d.musl_arch = big ? "powerpc64" : "powerpc64le"; break;
    case elf::EM_RISCV: d.musl_arch = "riscv64"; break;
    default: break;
  }
  if (!d.multiarch.empty()) d.default_dirs = {"/lib/" + d.multiarch, "/usr/lib/" + d.multiarch};
  d.default_dirs.push_back("/lib");
  d.default_dirs.push_back("/usr/lib");
  return d;
}

}  // namespace runpatch
