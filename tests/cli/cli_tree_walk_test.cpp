// Trees are walked as Nixpkgs' hooks walk them (`find -type f`): a command
// given out/ never reads or edits through a symlink into another store path
// or /usr/lib; a symlink named on the command line is followed, as patchelf
// follows it.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "strict_json.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::cli;
using test::runpath;

namespace fs = std::filesystem;

// Every regular file under dir with its bytes (the links themselves by target).
std::map<std::string, std::vector<uint8_t>> snapshot(const fs::path& dir) {
  std::map<std::string, std::vector<uint8_t>> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink()) files[e.path().string()] = test::read_file(e.path());
  return files;
}

// Two Nix outputs: out/ links into dep/ by a directory symlink and a file
// symlink, and to the system's libraries.
fs::path stage(const std::string& name) {
  fs::path root = fs::absolute(test::scratch_dir("cli_tree_walk/" + name));
  fs::path pkg = test::fixture_arches().at(0).dir / "cuda-pkg";
  fs::create_directories(root / "out/lib");
  fs::create_directories(root / "dep/lib");
  fs::copy_file(pkg / "lib/libcudart.so.13", root / "out/lib/libcudart.so.13");
  fs::copy_file(pkg / "lib/libcudart.so.13", root / "dep/lib/libcudart.so.13");
  fs::copy_file(pkg / "bin/cuda-prog", root / "dep/lib/libother.so");
  fs::create_symlink("../../dep/lib", root / "out/lib/deplink");
  fs::create_symlink("../../dep/lib/libother.so", root / "out/lib/libother.so");
  // Stands for /usr/lib: a test that links the real one would rewrite system
  // libraries the day the walk follows links again.
  fs::create_directories(root / "system/lib");
  fs::copy_file(pkg / "lib/libcudart.so.13", root / "system/lib/libsystem.so");
  fs::create_symlink(root / "system/lib", root / "out/sys");
  return root;
}

TEST(CliTreeWalk, DriverInPlaceLeavesTheOutputItLinksToByteIdentical) {
  fs::path root = stage("driver");
  auto dep_before = snapshot(root / "dep");
  auto system_before = snapshot(root / "system");
  auto r = cli({"driver", "--in-place", (root / "out").string() + "/"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(snapshot(root / "dep"), dep_before);
  EXPECT_EQ(snapshot(root / "system"), system_before);
  EXPECT_EQ(runpath(root / "out/lib/libcudart.so.13"), "/run/opengl-driver/lib");
  EXPECT_NE(r.output.find("driver: 1 edited"), std::string::npos) << r.output;
}

TEST(CliTreeWalk, DryRunOverATreeLinkingToSystemLibrariesListsOnlyTheTreesOwnFiles) {
  fs::path root = stage("dry-run");
  for (const char* command : {"driver", "compat"}) {
    std::vector<std::string> args = {command, "-n", (root / "out").string()};
    if (std::string(command) == "compat") args.insert(args.end(), {"--libcuda", "/opt/compat"});
    auto r = cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find((root / "out/lib/libcudart.so.13").string() + ":"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("/sys/"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("deplink"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("libother"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(": 1 would change"), std::string::npos) << r.output;
  }
}

TEST(CliTreeWalk, ApplyScanCheckAndDoctorSeeOnlyTheTreesOwnFiles) {
  fs::path root = stage("readers");
  auto dep_before = snapshot(root / "dep");
  test::write_file(root / "policy.json", {'{', '"', 'd', 'r', 'i', 'v', 'e', 'r', '"', ':', 't', 'r', 'u', 'e', '}'});
  auto apply = cli({"apply", "--policy", (root / "policy.json").string(), (root / "out").string()});
  EXPECT_EQ(apply.exit_code, 0) << apply.output;
  EXPECT_NE(apply.output.find("apply: 1 edited"), std::string::npos) << apply.output;
  EXPECT_EQ(snapshot(root / "dep"), dep_before);

  auto scan = cli({"scan", "--dynamic-paths", (root / "out").string()});
  EXPECT_EQ(scan.exit_code, 0) << scan.output;
  EXPECT_EQ(scan.output, (root / "out/lib/libcudart.so.13").string() + "\n");

  auto check = cli({"check", "--ignore-environment", "--json", (root / "out").string()});
  EXPECT_EQ(test::parse_json(check.output.substr(check.output.find('{')))["files_checked"], 1) << check.output;

  auto doctor = cli({"doctor", "--json", "--proc-root", root.string(), (root / "out").string()});
  auto files = test::parse_json(doctor.output.substr(doctor.output.find('{')))["files"];
  for (const auto& f : files) EXPECT_EQ(f.dump().find("deplink"), std::string::npos) << f.dump();
}

TEST(CliTreeWalk, ASymlinkNamedOnTheCommandLineIsFollowedAsPatchelfDoes) {
  fs::path root = stage("named");
  auto r = cli({"driver", (root / "out/lib/libother.so").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(root / "out/lib/libother.so")) << "the link stays a link";
  EXPECT_EQ(runpath(root / "dep/lib/libother.so").rfind("/run/opengl-driver/lib", 0), 0u);
  auto dir = cli({"scan", "--dynamic-paths", (root / "out/lib/deplink").string()});
  EXPECT_NE(dir.output.find((root / "out/lib/deplink/libcudart.so.13").string()), std::string::npos) << dir.output;

  for (const char* command : {"scan", "driver", "compat", "apply", "check", "doctor"}) {
    auto help = cli({command, "--help"});
    EXPECT_NE(help.output.find("find -type f"), std::string::npos) << command << "\n" << help.output;
    EXPECT_NE(help.output.find("A symlink named on the command line is followed"), std::string::npos) << command;
  }
}

// tree of a symlink (python3 -> python3.11) titles the name given, then the
// file it resolves to: the one whose directory is $ORIGIN.
TEST(CliTreeWalk, TreeOfASymlinkTitlesTheNameGivenAndItsTarget) {
  fs::path dir = fs::absolute(test::scratch_dir("tree_walk/symlink-title"));
  fs::copy_file(test::fixture_arches().at(0).dir / "prog-norunpath", dir / "prog-1.0");
  fs::create_symlink("prog-1.0", dir / "prog");
  auto r = cli({"tree", (dir / "prog").string()});
  EXPECT_EQ(r.output.rfind((dir / "prog").string() + " -> " + (dir / "prog-1.0").string() + "  (", 0), 0u) << r.output;
  auto plain = cli({"tree", (dir / "prog-1.0").string()});
  EXPECT_EQ(plain.output.rfind((dir / "prog-1.0").string() + "  (", 0), 0u) << plain.output;
}

}  // namespace
}  // namespace runpatch
