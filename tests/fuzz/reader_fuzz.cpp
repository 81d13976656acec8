// Fuzz target: the ELF reader on arbitrary bytes must return a value or an
// error, never crash or read out of bounds; an error names the file.
#include <cstdint>
#include <cstdlib>

#include "runpatch/elf_info.hpp"
#include "runpatch/resolve.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto info = runpatch::read_elf_info(std::span<const uint8_t>(data, size), "fuzz-input");
  if (!info) {
    if (info.error().file != "fuzz-input" || info.error().what.empty()) std::abort();
    return 0;
  }
  // What the tools do next with a parsed file.
  (void)info->kind();
  (void)runpatch::dlopen_dependencies(*info);
  return 0;
}
