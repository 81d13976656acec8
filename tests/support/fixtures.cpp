#include "fixtures.hpp"

#include <fstream>
#include <sstream>

#include "process.hpp"

namespace runpatch::test {

namespace fs = std::filesystem;

fs::path fixtures_dir() { return RUNPATCH_FIXTURES_DIR; }

std::vector<FixtureArch> fixture_arches() {
  std::vector<FixtureArch> arches;
  std::ifstream in(fixtures_dir() / "arches.tsv");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    FixtureArch arch;
    fields >> arch.name >> arch.compiler >> arch.qemu >> arch.sysroot;
    arch.dir = fixtures_dir() / arch.name;
    // An arch we can build but not run (qemu missing) is still read-tested.
    arches.push_back(arch);
  }
  return arches;
}

std::vector<std::string> skipped_arches() {
  std::vector<std::string> skipped;
  std::ifstream in(fixtures_dir() / "skipped.tsv");
  for (std::string line; std::getline(in, line);) skipped.push_back(line);
  return skipped;
}

const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names = {
      "lib/libgreet.so", "libnosoname.so",   "librunpath.so", "prog-pie",      "prog-nopie",    "prog-rpath",
      "prog-norunpath",  "prog-longrunpath", "prog-static",   "prog-stripped", "prog-nodeflib", "libplugin-host.so"};
  return names;
}

std::vector<std::string> runner(const FixtureArch& arch) {
  if (arch.qemu == "-") return {};
  return {arch.qemu, "-L", arch.sysroot};
}

fs::path scratch_dir(const std::string& name) {
  fs::path dir = fs::path(RUNPATCH_TEST_SCRATCH_DIR) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace runpatch::test
