// runpatch-patchelf answers like patchelf (Debian's, as the oracle) and its
// edits read back identically through patchelf itself.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "readelf_oracle.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;
using test::run_command;

const std::string kOurs = fs::path(RUNPATCH_CLI).parent_path() / "runpatch-patchelf";

class PatchelfCompat : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_program("patchelf")) GTEST_SKIP() << "patchelf is not installed (scripts/install-deps)";
  }
};

TEST_F(PatchelfCompat, PrintOptionsMatchOnEveryFixtureWithSections) {
  int compared = 0;
  for (const auto& arch : test::fixture_arches()) {
    for (const auto& name : test::fixture_names()) {
      if (name == "prog-stripped") continue;  // patchelf refuses files without section headers; we read them
      fs::path file = arch.dir / name;
      for (const char* option : {"--print-rpath", "--print-needed", "--print-interpreter", "--print-soname"}) {
        auto theirs = run_command({"patchelf", option, file.string()}, true);
        auto ours = run_command({kOurs, option, file.string()}, true);
        EXPECT_EQ(ours.exit_code, theirs.exit_code) << option << " " << file << "\n" << ours.output << theirs.output;
        if (theirs.exit_code == 0) {
          EXPECT_EQ(ours.output, theirs.output) << option << " " << file;
        }
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 36);
}

TEST_F(PatchelfCompat, UsageAndMissingFiles) {
  EXPECT_EQ(run_command({kOurs}, true).exit_code, run_command({"patchelf"}, true).exit_code);
  auto theirs = run_command({"patchelf", "--print-rpath", "/nonexistent/x"}, true);
  auto ours = run_command({kOurs, "--print-rpath", "/nonexistent/x"}, true);
  EXPECT_EQ(ours.exit_code, theirs.exit_code);
  EXPECT_EQ(ours.output, theirs.output);
  EXPECT_EQ(run_command({kOurs, "--version"}).output.rfind("patchelf 0.18.0", 0), 0u);
  EXPECT_EQ(run_command({kOurs, "--output", "x", "a", "b"}, true).exit_code, 1);
}

// The same edit through both tools gives files that readelf describes identically.
TEST_F(PatchelfCompat, EditsAgreeWithPatchelf) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_compat");
  fs::create_directories(dir / "moved");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "moved/libgreet.so");
  std::string moved = (dir / "moved").string();
  std::vector<std::vector<std::string>> edits = {
      {"--set-rpath", moved},
      {"--set-rpath", moved + ":/a/b/c/" + std::string(100, 'x')},
      {"--force-rpath", "--set-rpath", moved},
      {"--add-rpath", moved},
      {"--remove-rpath"},
      {"--set-rpath", "/nonexistent:" + moved + ":/usr/lib:" + moved, "--shrink-rpath"},
      {"--shrink-rpath", "--allowed-rpath-prefixes", "/usr"},
      {"--replace-needed", "libgreet.so", "libgreet-other.so"},
      {"--add-needed", "libm.so.6"},
      {"--remove-needed", "libgreet.so"},
      {"--set-interpreter", "/lib64/../lib64/ld-linux-x86-64.so.2"},
  };
  int case_number = 0;
  for (const auto& edit : edits) {
    for (const char* program : {"prog-pie", "prog-rpath", "prog-nopie"}) {
      std::string tag = std::to_string(case_number++);
      fs::path theirs_file = dir / ("theirs-" + tag), ours_file = dir / ("ours-" + tag);
      fs::copy_file(host.dir / program, theirs_file);
      fs::copy_file(host.dir / program, ours_file);
      // --shrink-rpath on its own operates on the runpath set by the previous step in patchelf's order.
      std::vector<std::string> theirs_cmd = {"patchelf"}, ours_cmd = {kOurs};
      for (const auto& a : edit) theirs_cmd.push_back(a), ours_cmd.push_back(a);
      theirs_cmd.push_back(theirs_file.string());
      ours_cmd.push_back(ours_file.string());
      auto theirs = run_command(theirs_cmd, true);
      auto ours = run_command(ours_cmd, true);
      std::string what = fmt::format("{} on {}", fmt::join(edit, " "), program);
      ASSERT_EQ(ours.exit_code, theirs.exit_code) << what << "\n" << ours.output << theirs.output;
      auto a = test::readelf_facts(theirs_file), b = test::readelf_facts(ours_file);
      ASSERT_TRUE(a && b) << what;
      EXPECT_EQ(b->runpath, a->runpath) << what;
      EXPECT_EQ(b->rpath, a->rpath) << what;
      EXPECT_EQ(b->needed, a->needed) << what;
      EXPECT_EQ(b->interpreter, a->interpreter) << what;
      // patchelf can read what we wrote.
      EXPECT_EQ(run_command({"patchelf", "--print-rpath", ours_file.string()}).output,
                run_command({"patchelf", "--print-rpath", theirs_file.string()}).output)
          << what;
    }
  }
}

}  // namespace
}  // namespace runpatch
