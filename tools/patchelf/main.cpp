// runpatch-patchelf: patchelf 0.19's command line over runpatch's editors, so
// that existing hooks can call it as `patchelf`. Argument handling and output
// only; what one patchelf process does is tools/common/patchelf_run.cpp
// (docs/patchelf-compat.md).
#include <fmt/core.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "../common/exit_codes.hpp"
#include "../common/log.hpp"
#include "../common/patchelf_run.hpp"

int main(int argc, char** argv) {
  using namespace runpatch::cli;
  configure_log("patchelf: ");
  // patchelf without arguments shows its help and fails.
  if (argc == 1) {
    log_text(LogLevel::Error, patchelf_help(argv[0]));
    return kExitProblem;
  }
  PatchelfStreams streams{[](std::string_view text) { fmt::print("{}", text); },
                          [](std::string_view text) { log_text(LogLevel::Error, text); }};
  auto ran = run_patchelf(std::vector<std::string>(argv + 1, argv + argc), argv[0], streams);
  if (!ran) {
    log_error("{}", ran.error().what);
    return kExitProblem;
  }
  return kExitOk;
}
