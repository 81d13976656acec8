// Independent checks of an edited file: binutils/elfutils verdicts, running it,
// stripping it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "process.hpp"

namespace runpatch::test {

// What `readelf -a -W` writes to stderr (warnings); "" when clean.
std::string readelf_warnings(const std::filesystem::path& file);

// nullopt when eu-elflint is missing; else whether `eu-elflint --gnu-ld` passes.
std::optional<bool> elflint_passes(const std::filesystem::path& file);

// Runs the program natively or under qemu-user; stdout+stderr merged.
CommandResult run_program(const FixtureArch& arch, const std::filesystem::path& program);

// The arch's strip (host strip for x86_64).
std::string strip_tool(const FixtureArch& arch);

// Runs a fixture program (natively or under qemu-user) and expects libgreet's greeting.
void expect_greets(const FixtureArch& arch, const std::filesystem::path& program);

// The arch can run programs here (host, or qemu-user installed).
bool can_run(const FixtureArch& arch);

// The fixture arches whose programs can run here. Each one left out is
// named in the test's output (a missing emulator must not pass unseen), and
// a test that gets none fails: the host's own arch always runs.
std::vector<FixtureArch> runnable_arches();

}  // namespace runpatch::test
