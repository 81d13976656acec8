#include "runpatch/reading/machines.hpp"

#include <algorithm>
#include <array>

#include "runpatch/reading/elf_types.hpp"

namespace runpatch {

namespace {

constexpr uint64_t k4K = 0x1000, k64K = 0x10000, k1M = 0x100000;

// The machines Nixpkgs builds for or meets in binary packages. glibc's and
// musl's facts only for the machines the tests run (under qemu-user).
constexpr MachineAbi kX86_64 = {"/lib64/ld-linux-x86-64.so.2", "x86_64-linux-gnu", "x86_64", "x86_64"};
constexpr MachineAbi kI386 = {"/lib/ld-linux.so.2", "i386-linux-gnu", "i686", "i386"};
constexpr MachineAbi kAarch64 = {"/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu", "aarch64", "aarch64"};
constexpr MachineAbi kAarch64Be = {"/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu", "aarch64", "aarch64_be"};
constexpr MachineAbi kArmhf = {"/lib/ld-linux-armhf.so.3", "arm-linux-gnueabihf", "v7l", "armhf"};
constexpr MachineAbi kPpc64le = {"/lib64/ld64.so.2", "powerpc64le-linux-gnu", "power8", "powerpc64le"};
constexpr MachineAbi kPpc64 = {"/lib64/ld64.so.1", "powerpc64-linux-gnu", "power8", "powerpc64"};
constexpr MachineAbi kRiscv64 = {"/lib/ld-linux-riscv64-lp64d.so.1", "riscv64-linux-gnu", "riscv64", "riscv64"};
constexpr MachineAbi kNone = {};

constexpr std::array<MachineFacts, 26> kMachines = {{
    {2, "", "SPARC", k4K, kNone, kNone},
    {elf::EM_386, "i386", "x86", k4K, kI386, kI386},
    {4, "", "Motorola 68000", k4K, kNone, kNone},
    {elf::EM_MIPS, "mips", "MIPS", k64K, kNone, kNone},
    {15, "", "Hewlett-Packard PA-RISC", k4K, kNone, kNone},
    {18, "", "Enhanced SPARC", k4K, kNone, kNone},
    {elf::EM_PPC, "ppc", "PowerPC", k64K, kNone, kNone},
    {elf::EM_PPC64, "ppc64", "64-bit PowerPC", k64K, kPpc64le, kPpc64},
    {elf::EM_S390, "s390", "IBM System/390", k4K, kNone, kNone},
    {elf::EM_ARM, "arm", "ARM", k4K, kArmhf, kArmhf},
    {41, "", "Digital Alpha", k4K, kNone, kNone},
    {42, "", "Hitachi SH", k4K, kNone, kNone},
    {elf::EM_SPARCV9, "sparcv9", "SPARC Version 9", k1M, kNone, kNone},
    {50, "", "Intel IA-64", k4K, kNone, kNone},
    {elf::EM_X86_64, "x86-64", "x64", k4K, kX86_64, kX86_64},
    {94, "", "Tensilica Xtensa", k4K, kNone, kNone},
    {113, "", "Altera Nios II", k4K, kNone, kNone},
    {elf::EM_AARCH64, "aarch64", "AArch64", k64K, kAarch64, kAarch64Be},
    {189, "", "Xilinx MicroBlaze 32-bit RISC", k4K, kNone, kNone},
    {190, "", "NVIDIA CUDA", k4K, kNone, kNone},
    {224, "", "AMD GPU", k4K, kNone, kNone},
    {elf::EM_RISCV, "riscv", "RISC-V", k4K, kRiscv64, kRiscv64},
    {247, "", "Linux BPF - in-kernel virtual machine", k4K, kNone, kNone},
    {252, "", "C-SKY", k4K, kNone, kNone},
    {elf::EM_LOONGARCH, "loongarch", "", k64K, kNone, kNone},
    {0, "", "", k4K, kNone, kNone},  // EM_NONE
}};

}  // namespace

const MachineFacts* machine_facts(uint16_t machine) {
  auto it =
      std::find_if(kMachines.begin(), kMachines.end(), [&](const MachineFacts& m) { return m.machine == machine; });
  return it == kMachines.end() ? nullptr : &*it;
}

}  // namespace runpatch
