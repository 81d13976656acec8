// Where the build put the fixture ELF files, and which arches it could build.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace runpatch::test {

struct FixtureArch {
  std::string name;  // x86_64, aarch64, ...
  std::string compiler;
  std::string qemu;     // "-" for the host
  std::string sysroot;  // "-" for the host
  std::filesystem::path dir;
};

std::filesystem::path fixtures_dir();
std::vector<FixtureArch> fixture_arches();
// "arch: reason" for each arch the fixture build skipped.
std::vector<std::string> skipped_arches();

// The names every arch directory holds (see fixtures/build-fixtures.sh).
const std::vector<std::string>& fixture_names();

// argv prefix that runs a program of this arch here (qemu-user for foreign ones).
std::vector<std::string> runner(const FixtureArch& arch);

// A fresh, empty directory under the build tree for one test.
std::filesystem::path scratch_dir(const std::string& name);

}  // namespace runpatch::test

namespace runpatch::test {
inline void PrintTo(const FixtureArch& arch, std::ostream* os) { *os << arch.name; }
}  // namespace runpatch::test
