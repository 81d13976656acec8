// Fuzz target: the ELF reader on arbitrary bytes must return a value or an
// error, never crash or read out of bounds; an error names the file. Reading
// the same bytes from a file on demand (pread windows) must say the same.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/section_audit.hpp"
#include "runpatch/reporting/elf_info_report.hpp"
#include "runpatch/resolving/resolve.hpp"

namespace {

// The bytes as a file: one memory file, rewritten for each input.
std::string as_file(const uint8_t* data, size_t size) {
  static int fd = ::memfd_create("fuzz-input", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}

std::string summary(const runpatch::Expected<runpatch::ElfInfo>& info) {
  if (!info) return "error at " + std::to_string(info.error().offset.value_or(~uint64_t(0))) + ": " + info.error().what;
  auto json = runpatch::elf_info_json(*info);
  json.erase("path");
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto info = runpatch::read_elf_info(std::span<const uint8_t>(data, size), "fuzz-input");
  if (!info && (info.error().file != "fuzz-input" || info.error().what.empty())) std::abort();
  if (size > 0 && summary(runpatch::read_elf_info(as_file(data, size))) != summary(info)) std::abort();
  // patchelf's section-header checks (runpatch-patchelf) take any bytes too.
  (void)runpatch::audit_section_headers(std::span<const uint8_t>(data, size));
  if (!info) return 0;
  // What the tools do next with a parsed file.
  (void)info->kind();
  (void)runpatch::dlopen_dependencies(*info);
  return 0;
}
