// What the CLI says at its edges: quiet runs, colour, paths that are missing
// or not ELF, edits that do nothing or write empty entries, advice that must
// be usable as given, and runpath entries spelled with extra slashes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::cli;
using test::contains;
using test::runpath;

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) { return test::fixture_arches().at(0).dir / name; }

fs::path copy_of(const std::string& name, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(fixture(name), to, fs::copy_options::overwrite_existing);
  return to;
}

TEST(CliEdges, TrailingSlashesNameTheSameDirectoryAndTheFilesSpellingIsKept) {
  fs::path dir = fs::absolute(test::scratch_dir("cli_edges/slashes"));
  fs::path lib = copy_of("lib/libgreet.so", dir / "lib/libgreet.so");
  std::string compat = (dir / "store/aaa-cuda_compat-12.8/compat").string();
  ASSERT_EQ(cli({"compat", "--libcuda", compat + "/", lib.string()}).exit_code, 0);
  auto again = cli({"compat", "--libcuda", compat, lib.string()});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(contains(again.output, "0 edited, 1 unchanged")) << again.output;
  EXPECT_EQ(runpath(lib), compat + "/");

  ASSERT_EQ(cli({"set", "--runpath", "/run/opengl-driver/lib/:/opt/x", lib.string()}).exit_code, 0);
  auto driver = cli({"driver", lib.string()});
  EXPECT_TRUE(contains(driver.output, "0 edited, 1 unchanged")) << driver.output;
  EXPECT_EQ(runpath(lib), "/run/opengl-driver/lib/:/opt/x");
}

// A compat layer is known by the libcuda it holds, wherever it lies
// (l4t-cuda's cuda_compat/, /usr/local/cuda-12.8/compat): the driver hook run
// after compat keeps it ahead of the driver, and check sees the wrong order.
TEST(CliEdges, CompatLayerByContentStaysAheadOfTheDriverInEitherOrder) {
  fs::path dir = fs::absolute(test::scratch_dir("cli_edges/compat-content"));
  for (std::string layer : {"l4t-cuda/cuda_compat", "usr/local/cuda-12.8/compat"}) {
    SCOPED_TRACE(layer);
    fs::path compat = dir / layer;
    copy_of("cuda-pkg/driver/libcuda.so.1", compat / "libcuda.so.1");
    std::string expected = compat.string() + ":/run/opengl-driver/lib";
    for (bool compat_first : {true, false}) {
      fs::path lib = copy_of("lib/libgreet.so", dir / "out" / (compat_first ? "a" : "b") / "libgreet.so");
      std::vector<std::vector<std::string>> steps = {{"compat", "--libcuda", compat.string(), lib.string()},
                                                     {"driver", lib.string()}};
      if (!compat_first) std::swap(steps[0], steps[1]);
      for (const auto& step : steps) ASSERT_EQ(cli(step).exit_code, 0) << step[0];
      EXPECT_EQ(runpath(lib), expected) << (compat_first ? "compat, then driver" : "driver, then compat");
    }
    // The dry run prints the runpath the edit computes and the real run writes.
    fs::path dry = copy_of("lib/libgreet.so", dir / "out/dry/libgreet.so");
    ASSERT_EQ(cli({"set", "--runpath", compat.string(), dry.string()}).exit_code, 0);
    auto preview = cli({"driver", "-n", dry.string()});
    EXPECT_TRUE(contains(preview.output, "-> '" + expected + "'")) << preview.output;
    ASSERT_EQ(cli({"driver", dry.string()}).exit_code, 0);
    EXPECT_EQ(runpath(dry), expected);
    fs::path wrong = copy_of("lib/libgreet.so", dir / "out/wrong/libgreet.so");
    ASSERT_EQ(cli({"set", "--runpath", "/run/opengl-driver/lib:" + compat.string(), wrong.string()}).exit_code, 0);
    auto check = cli({"check", "--ignore-environment", wrong.string()});
    EXPECT_EQ(check.exit_code, 1) << check.output;
    EXPECT_TRUE(contains(check.output, "compat-after-driver")) << check.output;
    fs::remove_all(dir / "out");
  }
}

// A compat directory the patching machine lacks (cuda_compat of the target,
// warned "written anyway") stays ahead of the driver whichever hook runs first.
TEST(CliEdges, AMissingCompatDirectoryStaysAheadOfTheDriverInEitherOrder) {
  fs::path dir = fs::absolute(test::scratch_dir("cli_edges/compat-missing"));
  std::string compat = "/nonexistent/usr/local/cuda-12.8/compat";
  std::string expected = compat + ":/run/opengl-driver/lib";
  for (bool compat_first : {true, false}) {
    fs::path lib = copy_of("lib/libgreet.so", dir / (compat_first ? "a" : "b") / "libgreet.so");
    std::vector<std::vector<std::string>> steps = {{"compat", "--libcuda", compat, lib.string()},
                                                   {"driver", lib.string()}};
    if (!compat_first) std::swap(steps[0], steps[1]);
    for (const auto& step : steps) ASSERT_EQ(cli(step).exit_code, 0) << step[0];
    EXPECT_EQ(runpath(lib), expected) << (compat_first ? "compat, then driver" : "driver, then compat");
  }
  EXPECT_EQ(test::read_file(dir / "a/libgreet.so"), test::read_file(dir / "b/libgreet.so"))
      << "the bytes do not depend on the hooks' order";
}

// A command line CLI11 cannot parse is one error naming the tool, exit 2.
TEST(CliEdges, ParserErrorsNameTheTool) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"set", "--bogus", "x"}, std::vector<std::string>{"check", "--fail-on"}}) {
    auto r = cli(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(r.output.rfind("runpatch: ", 0), 0u) << r.output;
  }
  EXPECT_EQ(cli({"set", "--help"}).exit_code, 0);
}

TEST(CliEdges, QuietSetAndCheckPrintProblemsOnly) {
  fs::path dir = test::scratch_dir("cli_edges/quiet");
  fs::path prog = copy_of("prog-norunpath", dir / "prog");
  auto set = cli({"set", "-q", "--runpath", "/opt/x", prog.string()});
  EXPECT_EQ(set.exit_code, 0);
  EXPECT_EQ(set.output, "");
  EXPECT_EQ(cli({"set", "-q", "--runpath", "/opt/x", prog.string()}).output, "") << "unchanged is not a problem";
  auto check = cli({"check", "-q", "--ignore-environment", prog.string()});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_TRUE(contains(check.output, "unresolved-needed")) << check.output;
  EXPECT_FALSE(contains(check.output, "files checked")) << check.output;
  EXPECT_TRUE(contains(cli({"check", "--ignore-environment", prog.string()}).output, "1 files checked"));
}

TEST(CliEdges, ColourFollowsNoColorAndTerm) {
  if (!test::have_program("script")) GTEST_SKIP() << "script(1) gives the terminal";
  fs::path prog = copy_of("prog-norunpath", test::scratch_dir("cli_edges/colour") / "prog");
  // script runs the command on a pseudo-terminal, as a user's shell would.
  auto on_a_terminal = [&](const std::string& env) {
    std::string command = "env " + env + " " + test::shell_quote(RUNPATCH_CLI) + " check --ignore-environment " +
                          test::shell_quote(prog.string());
    return contains(test::run_command({"script", "-qec", command, "/dev/null"}).output, "\033[");
  };
  EXPECT_TRUE(on_a_terminal("-u NO_COLOR TERM=xterm"));
  EXPECT_TRUE(on_a_terminal("NO_COLOR= TERM=xterm")) << "an empty NO_COLOR does not disable colour";
  EXPECT_FALSE(on_a_terminal("NO_COLOR=1 TERM=xterm"));
  EXPECT_FALSE(on_a_terminal("-u NO_COLOR TERM=dumb"));
}

TEST(CliEdges, ANamedPathThatIsMissingOrNotElfIsAnError) {
  fs::path dir = test::scratch_dir("cli_edges/named");
  test::write_file(dir / "notes.txt", {'h', 'i', '\n'});
  for (const char* command : {"driver", "check", "scan", "doctor"}) {
    for (const fs::path& path : {dir / "missing", dir / "notes.txt"}) {
      auto r = cli({command, path.string()});
      EXPECT_EQ(r.exit_code, 1) << command << " " << path << "\n" << r.output;
      // check: a finding of its report, as every unreadable file is.
      std::string expected = std::string(command) == "check" ? path.string() + ":\n  error   unreadable-file"
                                                             : "runpatch: " + path.string() + ": ";
      EXPECT_TRUE(contains(r.output, expected)) << command << "\n" << r.output;
    }
  }
  EXPECT_TRUE(contains(cli({"driver", (dir / "notes.txt").string()}).output, "not an ELF file"));
}

TEST(CliEdges, SetWithoutAnEditIsAUsageErrorAndEmptyEntriesAreWarnedAbout) {
  fs::path dir = test::scratch_dir("cli_edges/set");
  fs::path prog = copy_of("prog-norunpath", dir / "prog");
  auto before = test::read_file(prog);
  auto nothing = cli({"set", prog.string()});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_TRUE(contains(nothing.output, "nothing to do")) << nothing.output;
  EXPECT_EQ(test::read_file(prog), before);
  for (const char* value : {"/a::/b", "/a:", ":/a"}) {
    auto r = cli({"set", "-n", "--runpath", value, prog.string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "warning: --runpath '" + std::string(value) + "' holds an empty entry")) << r.output;
  }
  EXPECT_FALSE(contains(cli({"set", "-n", "--runpath", "/a:/b", prog.string()}).output, "warning"));
  // An empty runpath holds no entry: glibc searches nothing for it (patchelf --shrink-rpath leaves it).
  EXPECT_FALSE(contains(cli({"set", "-n", "--runpath", "", prog.string()}).output, "warning"));
}

TEST(CliEdges, SetNamesItsOutputAndDryRunShowsOldAndNewValues) {
  fs::path dir = test::scratch_dir("cli_edges/output");
  fs::path prog = copy_of("prog-pie", dir / "prog");
  auto out = cli({"set", "--runpath", "/opt/x", "-o", (dir / "edited").string(), prog.string()}, false);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.output.rfind(prog.string() + " -> " + (dir / "edited").string() + ": ", 0), 0u) << out.output;
  EXPECT_EQ(runpath(dir / "edited"), "/opt/x");
  auto dry = cli({"set", "-n", "--runpath", "/opt/y", "--soname", "libp.so", prog.string()}, false);
  EXPECT_TRUE(contains(dry.output, "  runpath: '$ORIGIN/lib' -> '/opt/y'\n")) << dry.output;
  EXPECT_TRUE(contains(dry.output, "  soname: (none) -> 'libp.so'\n")) << dry.output;
  EXPECT_EQ(runpath(prog), "$ORIGIN/lib");
}

// A writable file in a directory the user cannot write: patchelf edits it,
// so every front end does, writing into the file; only --atomic-copy, which
// must make a copy there, refuses, and says what to drop.
TEST(CliEdges, AWritableFileInAReadOnlyDirectoryIsWrittenIntoUnlessACopyIsDemanded) {
  // root may create files in any directory, so as root the CLI runs as nobody
  // (setpriv); a mode 0555 directory then refuses the edited copy with EACCES.
  std::vector<std::string> as_user;
  if (::geteuid() == 0) {
    if (!test::have_program("setpriv")) GTEST_SKIP() << "running as root and setpriv is missing";
    as_user = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  }
  fs::path dir = fs::absolute(test::scratch_dir("cli_edges/read-only-dir"));
  fs::path prog = copy_of("prog-norunpath", dir / "ro/prog");
  fs::path lib = copy_of("librunpath.so", dir / "ro/librunpath.so");
  for (const auto& file : {prog, lib}) {
    fs::permissions(file, fs::perms::all);  // the file itself stays writable (by nobody too)
    // Owned by the user the CLI runs as, so that a copy could keep its owner and is what the default tries.
    if (::geteuid() == 0) {
      ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
    }
  }
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                  fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  struct Writable {  // restored however the test ends, so that the scratch directory can be removed
    fs::path dir;
    ~Writable() { fs::permissions(dir, fs::perms::owner_write, fs::perm_options::add); }
  } restore{dir / "ro"};
  // A long runpath grows the file: an appended segment, which by default goes through a copy.
  std::string long_runpath = "/opt/" + std::string(300, 'x');
  auto run = [&](const std::string& tool, std::vector<std::string> args) {
    std::vector<std::string> argv = as_user;
    argv.push_back(tool);
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_command(argv, true);
  };
  auto before = test::read_file(prog);
  auto refused = run(RUNPATCH_CLI, {"set", "--atomic-copy", "--runpath", long_runpath, prog.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_TRUE(contains(refused.output, prog.string() + ": cannot create the edited copy in " + (dir / "ro").string() +
                                           " (it is written there, then renamed to prog): Permission denied; "
                                           "without --atomic-copy the file itself is edited"))
      << refused.output;
  EXPECT_EQ(test::read_file(prog), before);
  for (const auto& file : {prog, lib}) {
    auto edited = run(RUNPATCH_CLI, {"set", "--runpath", long_runpath, file.string()});
    EXPECT_EQ(edited.exit_code, 0) << edited.output;
    EXPECT_TRUE(contains(edited.output, "written into the file")) << edited.output;
    EXPECT_EQ(runpath(file), long_runpath);
    auto patchelf = run(test::runpatch_patchelf_path(),
                        {"--set-rpath", long_runpath + ":/opt/" + std::string(200, 'y'), file.string()});
    EXPECT_EQ(patchelf.exit_code, 0) << patchelf.output;
    EXPECT_EQ(runpath(file), long_runpath + ":/opt/" + std::string(200, 'y'));
  }
}

TEST(CliEdges, AdviceIsUsableAsGiven) {
  fs::path dir = fs::absolute(test::scratch_dir("cli_edges/advice"));
  // check: an unused entry inside the file's own package keeps nothing alive,
  // and the tool that drops it exists.
  fs::path lib = copy_of("lib/libgreet.so", dir / "pkg/lib/libgreet.so");
  fs::create_directories(dir / "pkg/lib/empty");
  ASSERT_EQ(cli({"set", "--runpath", "$ORIGIN/empty", lib.string()}).exit_code, 0);
  auto check = cli({"check", "--ignore-environment", lib.string()});
  EXPECT_TRUE(contains(check.output, "unused-entry")) << check.output;
  EXPECT_TRUE(contains(check.output, "runpatch-patchelf --shrink-rpath would drop it")) << check.output;
  EXPECT_FALSE(contains(check.output, "alive")) << check.output;
  // why: the directory to add is absolute even when --search was relative.
  fs::path prog = copy_of("prog-norunpath", dir / "prog");
  copy_of("lib/libgreet.so", dir / "found/libgreet.so");
  std::string relative = fs::relative(dir / "found", fs::current_path()).string();
  auto why = cli({"why", "--ignore-environment", "libgreet.so", prog.string(), "--search", relative});
  EXPECT_TRUE(contains(why.output, "fix: add " + (dir / "found").string() + " to the runpath")) << why.output;
  // doctor: a --proc-root that does not exist is a usage error, not a machine without a driver.
  EXPECT_EQ(cli({"doctor", "--proc-root", (dir / "nonexistent").string(), prog.string()}).exit_code, 2);
}

}  // namespace
}  // namespace runpatch
