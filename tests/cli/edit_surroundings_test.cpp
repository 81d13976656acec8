// What an edit does around the bytes it changes: file capabilities survive
// every way of writing, a file we did not create is never removed, an empty
// interpreter is refused (runpatch) or ignored (patchelf), and the per-edit
// line says how the file was written and how many bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::cli;
using test::contains;
using test::runpath;

namespace fs = std::filesystem;

fs::path copy_fixture(const std::string& name, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(test::fixture_arches().at(0).dir / name, to, fs::copy_options::overwrite_existing);
  return to;
}

// The kernel drops security.capability on every write; each way of writing
// (into the file, through a copy, staged, a program) must put it back.
TEST(EditSurroundings, FileCapabilitiesSurviveEveryWayOfWriting) {
  if (!test::have_program("setcap") || !test::have_program("getcap")) GTEST_SKIP() << "setcap/getcap (libcap2-bin)";
  fs::path dir = fs::absolute(test::scratch_dir("edit_surroundings/caps"));
  const std::string grown = "/opt/" + std::string(300, 'c');
  struct Way {
    std::string name;
    std::vector<std::string> command;  // the file is appended
    std::vector<std::string> env;
  };
  std::vector<Way> ways = {
      {"default", {RUNPATCH_CLI, "set", "--runpath", grown}, {}},
      {"in-place", {RUNPATCH_CLI, "set", "--in-place", "--runpath", grown}, {}},
      {"atomic-copy", {RUNPATCH_CLI, "set", "--atomic-copy", "--runpath", grown}, {}},
      {"nix-build", {RUNPATCH_CLI, "set", "--runpath", grown}, {"NIX_BUILD_TOP=/tmp"}},
      {"fits", {RUNPATCH_CLI, "set", "--runpath", "/a"}, {}},
      {"patchelf", {test::runpatch_patchelf_path(), "--set-rpath", grown}, {}},
  };
  for (const std::string fixture : {"prog-pie", "librunpath.so"})
    for (const auto& way : ways) {
      fs::path file = copy_fixture(fixture, dir / (way.name + "-" + fixture));
      auto set = test::run_command({"setcap", "cap_net_bind_service=ep", file.string()}, true);
      if (set.exit_code != 0) GTEST_SKIP() << "this file system or user cannot set capabilities: " << set.output;
      std::vector<std::string> argv = {"env"};
      argv.insert(argv.end(), way.env.begin(), way.env.end());
      argv.insert(argv.end(), way.command.begin(), way.command.end());
      argv.push_back(file.string());
      auto edit = test::run_command(argv, true);
      ASSERT_EQ(edit.exit_code, 0) << way.name << ": " << edit.output;
      auto caps = test::run_command({"getcap", file.string()}, true);
      EXPECT_TRUE(contains(caps.output, "cap_net_bind_service")) << way.name << " " << fixture << ": " << caps.output;
    }
}

// FILE.runpatch-new is the name an edited copy takes first; one that is
// already there is somebody's file (or a leftover) and stays as it is.
TEST(EditSurroundings, AnExistingFileNamedLikeTheCopyIsNeverRemoved) {
  fs::path dir = fs::absolute(test::scratch_dir("edit_surroundings/foreign"));
  for (const std::string mode : {"--atomic-copy", "--runpath"}) {
    fs::path lib = copy_fixture("librunpath.so", dir / (mode.substr(2) + "/librunpath.so"));
    fs::path foreign = lib.string() + ".runpatch-new";
    test::write_file(foreign, {'m', 'i', 'n', 'e'});
    std::vector<std::string> args = {"set"};
    if (mode == "--atomic-copy") args.push_back(mode);
    args.insert(args.end(), {"--runpath", "/opt/" + std::string(300, 'f'), lib.string()});
    auto edit = cli(args);
    ASSERT_EQ(edit.exit_code, 0) << edit.output;
    EXPECT_EQ(runpath(lib), "/opt/" + std::string(300, 'f'));
    EXPECT_EQ(test::read_file(foreign), (std::vector<uint8_t>{'m', 'i', 'n', 'e'})) << mode;
    size_t entries = 0;
    for (const auto& e : fs::directory_iterator(lib.parent_path())) entries += e.is_regular_file();
    EXPECT_EQ(entries, 2u) << mode << ": the edit left a file behind";
  }
}

TEST(EditSurroundings, AnEmptyInterpreterIsRefusedByRunpatchAndIgnoredByPatchelf) {
  fs::path dir = fs::absolute(test::scratch_dir("edit_surroundings/empty-interp"));
  fs::path prog = copy_fixture("prog-pie", dir / "prog");
  auto before = test::read_file(prog);
  auto refused = cli({"set", "--interpreter", "", prog.string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_TRUE(contains(refused.output, "empty interpreter")) << refused.output;
  EXPECT_EQ(test::read_file(prog), before);
  auto ignored = test::run_command({test::runpatch_patchelf_path(), "--set-interpreter", "", prog.string()}, true);
  EXPECT_EQ(ignored.exit_code, 0) << ignored.output;
  EXPECT_EQ(test::read_file(prog), before);
  if (test::have_program("patchelf")) {  // Debian's patchelf, the oracle
    fs::path theirs = copy_fixture("prog-pie", dir / "theirs");
    EXPECT_EQ(test::run_command({"patchelf", "--set-interpreter", "", theirs.string()}, true).exit_code, 0);
    EXPECT_EQ(test::read_file(theirs), before);
  }
}

// An edit of a file runpatch edited before writes its segment over the
// earlier one (through a copy) and drops the strings only that one used: N
// edits that append cost no more than one, in every mode.
TEST(EditSurroundings, RepeatedAppendedEditsDoNotAccumulate) {
  fs::path dir = fs::absolute(test::scratch_dir("edit_surroundings/repeated"));
  for (const std::vector<std::string>& mode : {std::vector<std::string>{}, std::vector<std::string>{"--in-place"},
                                               std::vector<std::string>{"--atomic-copy"}}) {
    std::string name = mode.empty() ? "default" : mode[0].substr(2);
    fs::path lib = copy_fixture("librunpath.so", dir / name / "librunpath.so");
    fs::path once = copy_fixture("librunpath.so", dir / name / "once.so");
    std::vector<uintmax_t> sizes;
    for (char c : {'a', 'b', 'c', 'd'}) {
      std::vector<std::string> args = {"set"};
      args.insert(args.end(), mode.begin(), mode.end());
      // Each longer than the last one's slack: every edit appends.
      args.insert(args.end(), {"--runpath", "/opt/" + std::string(200 + 100 * (c - 'a'), c), lib.string()});
      auto edit = cli(args);
      ASSERT_EQ(edit.exit_code, 0) << edit.output;
      EXPECT_TRUE(contains(edit.output, "appended segment")) << edit.output;
      sizes.push_back(fs::file_size(lib));
    }
    ASSERT_EQ(cli({"set", "--runpath", "/opt/" + std::string(500, 'd'), once.string()}).exit_code, 0);
    EXPECT_LE(sizes.back(), fs::file_size(once)) << name << ": four edits grew the file more than one";
  }
}

// A replaced runpath leaves no dead copy in the file (a Nix output would keep
// a reference to the store path it names: $dev, the build directory), and
// the bytes depend only on the final runpath, not on the edits that led there
// (hooks in either order, one edit or three): in a build and as a copy.
TEST(EditSurroundings, AReplacedRunpathLeavesNoDeadCopyAndTheBytesDependOnlyOnTheResult) {
  fs::path dir = fs::absolute(test::scratch_dir("edit_surroundings/no-dead-copy"));
  const std::string dev = "/nix/store/00000000000000000000000000000000-pkg-dev/lib";
  const std::string build = dir.string() + "/build/source/lib";
  const std::string final_runpath =
      "/nix/store/11111111111111111111111111111111-cuda_compat/compat:/run/opengl-driver/lib";
  const std::vector<std::vector<std::string>> paths = {
      {final_runpath},                                               // one edit
      {build + ":" + dev, "/run/opengl-driver/lib", final_runpath},  // grown, then grown again
      {build + ":" + dev, "/nix/store/11111111111111111111111111111111-cuda_compat/compat",
       final_runpath},  // shorter first
  };
  for (const std::vector<std::string>& env :
       {std::vector<std::string>{"NIX_BUILD_TOP=" + dir.string()}, std::vector<std::string>{}}) {
    std::optional<std::vector<uint8_t>> first;
    for (size_t p = 0; p < paths.size(); ++p) {
      fs::path prog = copy_fixture("prog-pie", dir / (std::to_string(env.size()) + "-" + std::to_string(p)));
      for (const auto& runpath_value : paths[p]) {
        std::vector<std::string> argv = {"env"};
        argv.insert(argv.end(), env.begin(), env.end());
        argv.insert(argv.end(), {RUNPATCH_CLI, "set", "--runpath", runpath_value, prog.string()});
        ASSERT_EQ(test::run_command(argv, true).exit_code, 0) << runpath_value;
      }
      ASSERT_EQ(runpath(prog), final_runpath);
      std::vector<uint8_t> bytes = test::read_file(prog);
      std::string text(bytes.begin(), bytes.end());
      EXPECT_EQ(text.find("-pkg-dev"), std::string::npos) << prog << ": a dead copy of the $dev entry stays";
      EXPECT_EQ(text.find(build), std::string::npos) << prog << ": a dead copy of the build directory entry stays";
      if (!first) first = bytes;
      EXPECT_TRUE(bytes == *first) << prog << ": the edits that led to the runpath changed the bytes";
      std::string fixture_libs = (test::fixture_arches().at(0).dir / "lib").string();
      EXPECT_EQ(test::run_command({"env", "LD_LIBRARY_PATH=" + fixture_libs, prog.string()}, true).exit_code, 0)
          << prog;
    }
  }
}

// A staged commit verifies its interim state as well; a note the edit could
// not write (nothing to resolve) is explained by a warning there too.
TEST(EditSurroundings, AStagedEditThatWritesNoNoteSucceeds) {
  fs::path dir = fs::absolute(test::scratch_dir("edit_surroundings/staged-no-note"));
  fs::path stub = copy_fixture("cuda-pkg/lib/stubs/libcuda.so", dir / "libcuda.so");  // no DT_NEEDED
  auto edit = test::run_command({"env", "NIX_BUILD_TOP=" + dir.string(), RUNPATCH_CLI, "set", "--in-place", "--ldcache",
                                 "--runpath", "/run/opengl-driver/lib:/opt/" + std::string(200, 's'), stub.string()},
                                true);
  EXPECT_EQ(edit.exit_code, 0) << edit.output;
  EXPECT_TRUE(contains(edit.output, "(staged commit)")) << edit.output;
  EXPECT_TRUE(contains(edit.output, "no resolution cache written")) << edit.output;
  EXPECT_EQ(runpath(stub), "/run/opengl-driver/lib:/opt/" + std::string(200, 's'));
}

// "FILE: STRATEGY (how), HOW WRITTEN; OLD -> NEW bytes, +GROWTH (N bytes written)".
TEST(EditSurroundings, TheEditLineSaysHowTheFileWasWrittenAndCountsEveryByte) {
  fs::path dir = fs::absolute(test::scratch_dir("edit_surroundings/line"));
  fs::path lib = copy_fixture("librunpath.so", dir / "librunpath.so");
  auto fits = cli({"set", "--runpath", "/ab", lib.string()});
  EXPECT_TRUE(contains(fits.output, "in place (")) << fits.output;
  EXPECT_TRUE(contains(fits.output, "written into the file; ")) << fits.output;
  EXPECT_TRUE(contains(fits.output, ", +0 (")) << fits.output;
  EXPECT_FALSE(contains(fits.output, "(0 bytes written)")) << "a changed runpath is bytes written: " << fits.output;
  auto copied = cli({"set", "--runpath", "/opt/" + std::string(300, 'l'), lib.string()});
  EXPECT_TRUE(contains(copied.output, "an edited copy replaced the file; ")) << copied.output;
  fs::path out = dir / "out.so";
  auto output = cli({"set", "--runpath", "/x", "-o", out.string(), lib.string()});
  EXPECT_TRUE(contains(output.output, "written to the output; ")) << output.output;
  EXPECT_FALSE(contains(output.output, "written into the file")) << output.output;
}

// DT_RPATH is searched for every object's dependencies, DT_RUNPATH only for
// the file's own: a program whose DT_RPATH finds a library's dependency stops
// working when an edit turns it into DT_RUNPATH (as patchelf's does). The
// edit warns and names what is lost; --force-rpath keeps DT_RPATH, silently.
TEST(EditSurroundings, TurningAnInheritedRpathIntoARunpathWarns) {
  fs::path dir = fs::canonical(test::scratch_dir("edit_surroundings/inherited-rpath"));
  fs::path mid_dir = dir / "mid", greet_dir = dir / "greet";
  copy_fixture("lib/libgreet.so", greet_dir / "libgreet.so");
  fs::path mid = copy_fixture("librunpath.so", mid_dir / "librunpath.so");
  ASSERT_EQ(cli({"set", "--remove-runpath", mid.string()}).exit_code, 0);
  // prog needs librunpath.so, which needs libgreet.so; only prog's DT_RPATH names libgreet's directory.
  auto make_prog = [&](const std::string& name) {
    fs::path prog = copy_fixture("prog-norunpath", dir / name);
    auto r =
        test::run_command({test::runpatch_patchelf_path(), "--replace-needed", "libgreet.so", "librunpath.so",
                           "--force-rpath", "--set-rpath", mid_dir.string() + ":" + greet_dir.string(), prog.string()},
                          true);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return prog;
  };
  fs::path prog = make_prog("prog");
  ASSERT_EQ(test::run_command({prog.string()}, true).exit_code, 0) << "the DT_RPATH program runs";

  auto edit = cli({"set", "--add-runpath", "/opt/more", prog.string()});
  EXPECT_EQ(edit.exit_code, 0) << edit.output;
  EXPECT_TRUE(contains(edit.output, "DT_RPATH becomes DT_RUNPATH")) << edit.output;
  EXPECT_TRUE(contains(edit.output, "libgreet.so (needed by " + mid.string() + ")")) << edit.output;
  EXPECT_TRUE(contains(edit.output, "--force-rpath")) << edit.output;
  // The warning is true: the loader no longer finds libgreet.so.
  auto run = test::run_command({prog.string()}, true);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "libgreet.so")) << run.output;

  fs::path kept = make_prog("prog-forced");
  auto forced = cli({"set", "--force-rpath", "--add-runpath", "/opt/more", kept.string()});
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_FALSE(contains(forced.output, "DT_RPATH becomes")) << forced.output;
  EXPECT_EQ(test::run_command({kept.string()}, true).exit_code, 0);

  // Removing DT_RPATH turns nothing into DT_RUNPATH: no warning (it once
  // warned on every library of a PyTorch venv whose runpaths were stripped).
  fs::path removed = make_prog("prog-removed");
  auto removal = cli({"set", "--remove-runpath", removed.string()});
  EXPECT_EQ(removal.exit_code, 0) << removal.output;
  EXPECT_FALSE(contains(removal.output, "DT_RPATH becomes")) << removal.output;
  EXPECT_EQ(read_elf_info(removed)->rpath, std::nullopt);
}

}  // namespace
}  // namespace runpatch
