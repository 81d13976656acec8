// The resolution-cache note under patchelf 0.19's rules (its tests
// build-resolution-cache-edits and -stale, read as facts): in
// runpatch-patchelf an edit that changes DT_NEEDED or the runpath drops the
// note, one that changes neither keeps it, and --build-resolution-cache
// refuses to replace a note (or any section of its name) the edit keeps.
// runpatch set keeps refreshing instead. No front end leaves two sections
// named .note.nixos.ldcache.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "process.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

fs::path host_dir() {
  for (const auto& arch : test::fixture_arches())
    if (arch.qemu == "-") return arch.dir;
  return {};
}

int note_sections(const fs::path& file) {
  auto sections = test::run_command({"readelf", "-SW", file.string()});
  int count = 0;
  for (size_t at = 0; (at = sections.output.find(".note.nixos.ldcache", at)) != std::string::npos; ++at) ++count;
  return count;
}

// One case: edits after the note was built from the runpath {dir}/libsA.
// Words: {dir} is the scratch directory, {file} the program; a step starting
// with "objcopy" runs objcopy, one starting with "set" runs runpatch, others
// runpatch-patchelf. The last step's exit status and output are checked.
struct LdcacheCase {
  std::string name;
  std::vector<std::vector<std::string>> steps;
  int exit_code;
  int sections_after;       // named .note.nixos.ldcache
  std::string output_part;  // in the last step's output ("" = anything)
};

const std::vector<LdcacheCase> kLdcacheCases = {
    {"set-rpath elsewhere drops", {{"--set-rpath", "{dir}/libsC", "{file}"}}, 0, 0, ""},
    {"add-rpath drops", {{"--add-rpath", "{dir}/libsC", "{file}"}}, 0, 0, ""},
    {"remove-rpath drops", {{"--remove-rpath", "{file}"}}, 0, 0, ""},
    {"add-needed drops", {{"--add-needed", "libextra.so", "{file}"}}, 0, 0, ""},
    {"replace-needed drops", {{"--replace-needed", "libgreet.so", "libgreet2.so", "{file}"}}, 0, 0, ""},
    {"set-rpath to the same value keeps", {{"--set-rpath", "{dir}/libsA", "{file}"}}, 0, 1, ""},
    {"shrink-rpath that keeps every entry keeps", {{"--shrink-rpath", "{file}"}}, 0, 1, ""},
    {"remove-needed of an absent entry keeps", {{"--remove-needed", "libabsent.so", "{file}"}}, 0, 1, ""},
    {"a second build of the same note succeeds", {{"--build-resolution-cache", "{file}"}}, 0, 1, ""},
    {"set-rpath then build writes a fresh note",
     {{"--set-rpath", "{dir}/libsC", "--build-resolution-cache", "{file}"}},
     0,
     1,
     ""},
    {"a stale objcopy section refuses the build",
     {{"--remove-rpath", "{file}"},
      {"objcopy", "--add-section", ".note.nixos.ldcache={dir}/stale", "{file}"},
      {"--build-resolution-cache", "{file}"}},
     1,
     1,
     "a resolution cache note is already present; rebuild from an unpatched binary"},
    {"a stale section with libraries to resolve refuses the build",
     {{"--set-rpath", "{dir}/libsC", "{file}"},
      {"objcopy", "--add-section", ".note.nixos.ldcache={dir}/stale", "{file}"},
      {"--build-resolution-cache", "{file}"}},
     1,
     1,
     "already present"},
    {"runpatch set --ldcache names the stray section",
     {{"--set-rpath", "{dir}/libsC", "{file}"},
      {"objcopy", "--add-section", ".note.nixos.ldcache={dir}/stale", "{file}"},
      {"set", "--ldcache", "{file}"}},
     1,
     1,
     "holds no resolution-cache note this edit can replace"},
    {"runpatch set refreshes the note", {{"set", "--runpath", "{dir}/libsC", "{file}"}}, 0, 1, ""},
    {"nothing to resolve warns in patchelf's words",
     {{"--remove-rpath", "{file}"}, {"--build-resolution-cache", "{file}"}},
     0,
     0,
     "--build-resolution-cache: no DT_NEEDED entries or run path to resolve; no cache written"},
};

std::string expand(std::string word, const fs::path& dir, const fs::path& file) {
  for (auto [from, to] : {std::pair<std::string, std::string>{"{dir}", dir.string()}, {"{file}", file.string()}})
    for (size_t at; (at = word.find(from)) != std::string::npos;) word.replace(at, from.size(), to);
  return word;
}

test::CommandResult run_step(const std::vector<std::string>& step, const fs::path& dir, const fs::path& file) {
  std::vector<std::string> argv;
  if (step[0] == "objcopy")
    argv.push_back("objcopy");
  else if (step[0] == "set")
    argv.push_back(RUNPATCH_CLI);
  else
    argv.push_back(test::runpatch_patchelf_path());
  for (size_t i = step[0] == "objcopy" ? 1 : 0; i < step.size(); ++i) argv.push_back(expand(step[i], dir, file));
  return test::run_command(argv, true);
}

TEST(PatchelfLdcacheRules, EachEditKeepsDropsOrRefusesAsPatchelf) {
  fs::path host = host_dir();
  if (host.empty()) GTEST_SKIP() << "no host fixtures";
  for (const auto& c : kLdcacheCases) {
    SCOPED_TRACE(c.name);
    fs::path dir = test::scratch_dir("patchelf-ldcache/" + std::to_string(&c - kLdcacheCases.data()));
    fs::create_directories(dir / "libsA");
    fs::create_directories(dir / "libsC");
    fs::copy_file(host / "lib/libgreet.so", dir / "libsA/libgreet.so");
    fs::copy_file(host / "lib/libgreet.so", dir / "libsC/libgreet.so");
    test::write_file(dir / "stale", {'s', 't', 'a', 'l', 'e'});
    fs::path file = dir / "prog";
    fs::copy_file(host / "prog-pie", file);
    ASSERT_EQ(run_step({"--set-rpath", "{dir}/libsA", "{file}"}, dir, file).exit_code, 0);
    auto built = run_step({"--build-resolution-cache", "{file}"}, dir, file);
    ASSERT_EQ(built.exit_code, 0) << built.output;
    ASSERT_EQ(note_sections(file), 1);

    test::CommandResult last;
    for (const auto& step : c.steps) last = run_step(step, dir, file);
    EXPECT_EQ(last.exit_code, c.exit_code) << last.output;
    EXPECT_NE(last.output.find(c.output_part), std::string::npos) << last.output;
    EXPECT_EQ(note_sections(file), c.sections_after);
    if (c.sections_after == 1 && c.exit_code == 0) {
      auto notes = test::run_command({"readelf", "-nW", file.string()});
      EXPECT_NE(notes.output.find("NixOS"), std::string::npos) << notes.output;
    }
    if (last.exit_code == 0 && c.name.find("drops") != std::string::npos) {
      auto notes = test::run_command({"readelf", "-nW", file.string()});
      EXPECT_EQ(notes.output.find("NixOS"), std::string::npos) << "the note still is in PT_NOTE\n" << notes.output;
    }
  }
}

}  // namespace
}  // namespace runpatch
