// The project's own command-line tools as tests run them, and the checks of
// their results that many test files share.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "process.hpp"

namespace runpatch::test {

// The x86-64 loader, for tests of host files (they skip elsewhere).
inline constexpr const char* kHostLoader = "/lib64/ld-linux-x86-64.so.2";

// The `runpatch-patchelf` binary under test, beside `runpatch` (RUNPATCH_CLI).
std::string runpatch_patchelf_path();

// Runs `runpatch ARGS...`; stderr joins stdout unless merge_stderr is false.
CommandResult cli(std::vector<std::string> args, bool merge_stderr = true);

// The host's own fixtures (fixture_arches() lists them first).
FixtureArch host();

// The file's DT_RUNPATH, or its DT_RPATH when it has no DT_RUNPATH.
std::string runpath(const std::filesystem::path& file);

bool contains(const std::string& text, const std::string& part);

}  // namespace runpatch::test
