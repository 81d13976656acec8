// One patchelf process, as a function: patchelf 0.19's options in its order on
// each file named. runpatch-patchelf is this with the process's own streams;
// `auto-patchelf --extra-args` makes the script's two runs per file through it
// (`--set-interpreter I FILE FLAGS...`, `--set-rpath R FILE FLAGS...`), so each
// flag acts as it does under the script (docs/patchelf-compat.md).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/reading/expected.hpp"

namespace runpatch::cli {

// Where a run writes: `out` is patchelf's stdout (--print-*, --version),
// `err` its stderr without the "patchelf: " prefix (help, warnings, --debug lines).
struct PatchelfStreams {
  std::function<void(std::string_view)> out, err;
};

// Runs patchelf with these words (argv without argv[0]); `program` is the
// name its help text shows. The error is patchelf's message, without "patchelf: ".
Status run_patchelf(const std::vector<std::string>& words, std::string_view program, const PatchelfStreams& streams);

// patchelf's help text (its `syntax:` block).
std::string patchelf_help(std::string_view program);

}  // namespace runpatch::cli
