// runpatch-patchelf answers like patchelf (Debian's, as the oracle) and its
// edits read back identically through patchelf itself.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "readelf_oracle.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

#include <cstring>
#include <fstream>

namespace runpatch {
namespace {

namespace fs = std::filesystem;
using test::run_command;

const std::string kOurs = test::runpatch_patchelf_path();

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
  EXPECT_EQ(run_command({kOurs, "--version"}).output.rfind("patchelf 0.19.0", 0), 0u);
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
      // A name already needed gets a second entry, first; several names go in sorted order, each once.
      {"--add-needed", "libc.so.6"},
      {"--add-needed", "libz.so.1", "--add-needed", "libm.so.6", "--add-needed", "libz.so.1"},
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
      if (edit[0] == "--add-needed") {  // the file named twice: edited twice
        theirs_cmd.push_back(theirs_file.string());
        ours_cmd.push_back(ours_file.string());
      }
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

// ---- patchelf 0.19 options: error paths, read-only options, fixed-size edits ----

void write_text(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

test::CommandResult ours(std::vector<std::string> args) {
  args.insert(args.begin(), kOurs);
  return run_command(args, true);
}

// The flags readelf prints for PT_GNU_STACK ("RW", "RWE"), "" without one.
std::string readelf_stack_flags(const fs::path& file) {
  auto out = run_command({"readelf", "-lW", file.string()}).output;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string type, word, flags;
    words >> type;
    if (type != "GNU_STACK") continue;
    for (int i = 0; i < 5; ++i) words >> word;  // offset vaddr paddr filesz memsz
    // The flags column ("RW ", "RWE") may split into words; the alignment follows.
    while (words >> word && word.rfind("0x", 0) != 0) flags += word;
    return flags;
  }
  return "";
}

// The dynamic symbol lines readelf prints for name (with their @version, if any).
std::string readelf_dynsym(const fs::path& file, const std::string& name) {
  auto out = run_command({"readelf", "--dyn-syms", "-W", file.string()}).output;
  std::istringstream lines(out);
  std::string found;
  for (std::string line; std::getline(lines, line);) {
    std::string last = line.substr(line.find_last_of(' ') + 1);
    if (last == name || last.rfind(name + "@", 0) == 0) found += last + "\n";
  }
  return found;
}

// Error paths that Debian's patchelf also has: same exit status, same message.
// A longer interpreter moves only itself: Debian's patchelf 0.14.3 then edits
// the program as it edits a linker's output. (With .dynstr and .dynamic moved
// too, it wrote .dynamic into the read-only first page without a shift and the
// program crashed in the loader's DT_DEBUG write: exit 139.)
TEST_F(PatchelfCompat, PatchelfEditsAProgramAfterOurLongerInterpreter) {
  auto host = test::fixture_arches().at(0);
  if (host.name != "x86_64") GTEST_SKIP() << "the interpreter path below is x86-64's";
  fs::path dir = test::scratch_dir("patchelf_after_interpreter");
  fs::create_directories(dir / "lib");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "lib/libgreet.so");
  const std::string longer = "/lib64/../lib64/../lib64/ld-linux-x86-64.so.2";
  const std::string long_rpath = "$ORIGIN/lib:/some/long/path/" + std::string(200, 'x');
  // (Both in one run is 0.14.3's own failure on a linker's output too: the runpath reads "libm.so.6".)
  std::vector<std::vector<std::string>> later = {{"--set-rpath", long_rpath}, {"--add-needed", "libm.so.6"}};
  int n = 0;
  for (const auto& edit : later) {
    fs::path file = dir / ("prog-" + std::to_string(n++));
    fs::copy_file(host.dir / "prog-nopie", file);
    auto ours = run_command({kOurs, "--set-interpreter", longer, file.string()}, true);
    ASSERT_EQ(ours.exit_code, 0) << ours.output;
    auto info = read_elf_info(file);
    ASSERT_TRUE(info);
    std::vector<std::string> theirs = {"patchelf"};
    theirs.insert(theirs.end(), edit.begin(), edit.end());
    theirs.push_back(file.string());
    auto r = run_command(theirs, true);
    ASSERT_EQ(r.exit_code, 0) << fmt::format("{}: {}", fmt::join(edit, " "), r.output);
    auto ran = run_command({file.string()}, true);
    EXPECT_EQ(ran.exit_code, 0) << fmt::format("after patchelf {}: {}", fmt::join(edit, " "), ran.output);
    EXPECT_EQ(ran.output, "hello from lib\n") << fmt::format("{}", fmt::join(edit, " "));
  }
}

// After a runpath of ours moved an executable's dynamic strings, Debian's
// patchelf 0.14.3 grows them again: the bytes they left keep a section
// (.dynstr.old), so it shifts the file as for a linker's output instead of
// writing .dynamic into the read-only first page (exit 139 before).
TEST_F(PatchelfCompat, PatchelfGrowsAProgramAfterOurLongerRunpath) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_after_runpath");
  fs::create_directories(dir / "lib");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "lib/libgreet.so");
  const std::string ours_runpath = "$ORIGIN/lib:/ours/" + std::string(120, 'o');
  std::vector<std::vector<std::string>> later = {{"--add-needed", "libm.so.6"},
                                                 {"--set-rpath", ours_runpath + ":/theirs/" + std::string(200, 't')}};
  int n = 0;
  for (const auto& edit : later) {
    fs::path file = dir / ("prog-" + std::to_string(n++));
    fs::copy_file(host.dir / "prog-nopie", file);
    auto ours = run_command({RUNPATCH_CLI, "set", "--runpath", ours_runpath, file.string()}, true);
    ASSERT_EQ(ours.exit_code, 0) << ours.output;
    std::vector<std::string> theirs = {"patchelf"};
    theirs.insert(theirs.end(), edit.begin(), edit.end());
    theirs.push_back(file.string());
    auto r = run_command(theirs, true);
    ASSERT_EQ(r.exit_code, 0) << fmt::format("{}: {}", fmt::join(edit, " "), r.output);
    for (const char* step : {"", "strip"}) {
      if (*step) {
        ASSERT_EQ(run_command({step, file.string()}, true).exit_code, 0);
      }
      auto ran = run_command({file.string()}, true);
      EXPECT_EQ(ran.output, "hello from lib\n") << fmt::format("patchelf {} {}", fmt::join(edit, " "), step);
    }
  }
}

// Debian's python3.11 (non-PIE, no free byte in its .dynstr): a runpath grows
// the string table where it lies, the tables after it moved up into its
// segment's last page (issue 48, item 6: patchelf 0.19 adds 8,192 bytes, an
// appended segment carrying a copy of the table 42,736). The program runs,
// strips and takes a later patchelf; the driver hook's edit after it, inside a
// build, is written into the file.
TEST_F(PatchelfCompat, AProgramsFullStringTableGrowsWhereItLies) {
  const fs::path python = "/usr/bin/python3.11";
  if (!fs::exists(python)) GTEST_SKIP() << "no " << python << " to edit a copy of";
  fs::path dir = test::scratch_dir("grown_string_table");
  fs::path ours = dir / "python", theirs = dir / "python-patchelf";
  fs::copy_file(python, ours);
  fs::copy_file(python, theirs);
  const std::string deps = "/nix/store/0000000000000000000000000000000-deps/lib";
  auto r = run_command({kOurs, "--set-rpath", deps, ours.string()}, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(run_command({"patchelf", "--set-rpath", deps, theirs.string()}, true).exit_code, 0);
  EXPECT_EQ(fs::file_size(ours), fs::file_size(python));
  EXPECT_LE(fs::file_size(ours), fs::file_size(theirs));
  EXPECT_EQ(read_elf_info(ours)->runpath, deps);
  auto output_of = [](const fs::path& program) {
    return run_command({program.string(), "-c", "import json; print(json.dumps([1]))"}, true).output;
  };
  EXPECT_EQ(output_of(ours), "[1]\n");
  const std::string with_driver = "/run/opengl-driver/lib:" + deps;
  auto driver = run_command(
      {"env", "NIX_BUILD_TOP=" + dir.string(), RUNPATCH_CLI, "set", "--runpath", with_driver, ours.string()}, true);
  ASSERT_EQ(driver.exit_code, 0) << driver.output;
  EXPECT_NE(driver.output.find("written into the file"), std::string::npos) << driver.output;
  EXPECT_EQ(fs::file_size(ours), fs::file_size(python));
  EXPECT_EQ(read_elf_info(ours)->runpath, with_driver);
  EXPECT_EQ(output_of(ours), "[1]\n");
  const std::vector<std::vector<std::string>> later = {{"strip"}, {"patchelf", "--add-needed", "libm.so.6"}};
  for (const auto& tool : later) {
    fs::path copy = dir / ("after-" + tool[0]);
    fs::copy_file(ours, copy);
    std::vector<std::string> command = tool;
    command.push_back(copy.string());
    auto after = run_command(command, true);
    ASSERT_EQ(after.exit_code, 0) << fmt::format("{}: {}", fmt::join(command, " "), after.output);
    EXPECT_EQ(output_of(copy), "[1]\n") << tool[0];
  }
}

// An executable whose dynamic strings move ends, as a linker's output and
// patchelf's do, with its section header table (patchelf's suite pads such a
// file to a page before its next edit: build-resolution-cache-no-pie). A
// later edit that rebuilds the segment moves the table after it again: the
// bytes are those of one edit, and the file still runs and strips.
TEST_F(PatchelfCompat, AnExecutableEndsWithItsSectionHeadersAfterEveryEdit) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_section_headers_last");
  fs::create_directories(dir / "lib");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "lib/libgreet.so");
  auto ends_with_section_headers = [](const fs::path& file) {
    using Ehdr = elf::Ehdr<elf::Elf64LE>;
    auto bytes = test::read_file(file);
    if (bytes.size() < sizeof(Ehdr)) return false;
    Ehdr eh;
    std::memcpy(&eh, bytes.data(), sizeof eh);
    return uint64_t(eh.e_shoff) + uint64_t(eh.e_shnum) * uint64_t(eh.e_shentsize) == bytes.size();
  };
  const std::string first = "$ORIGIN/lib:/first/" + std::string(100, 'a');
  const std::string second = first + ":/second/" + std::string(300, 'b');
  fs::path chain = dir / "chain", once = dir / "once";
  fs::copy_file(host.dir / "prog-nopie", chain);
  fs::copy_file(host.dir / "prog-nopie", once);
  // runpatch set: its bytes depend on the final content only (patchelf's front end marks a replaced runpath).
  for (const auto& [file, runpath] : {std::pair{chain, first}, {chain, second}, {once, second}}) {
    auto r = run_command({RUNPATCH_CLI, "set", "--runpath", runpath, file.string()}, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(ends_with_section_headers(file)) << file << " with " << runpath.size() << " bytes of runpath";
  }
  EXPECT_EQ(test::read_file(chain), test::read_file(once));
  for (const auto& step : std::vector<std::vector<std::string>>{{}, {"strip", chain.string()}}) {
    if (!step.empty()) {
      ASSERT_EQ(run_command(step, true).exit_code, 0);
    }
    auto ran = run_command({chain.string()}, true);
    EXPECT_EQ(ran.output, "hello from lib\n") << (step.empty() ? "edited" : "stripped");
  }
}

// patchelf marks a runpath it replaces in a moved string table with 'X's
// (its suite's shared-rpath test counts them); runpatch-patchelf does too.
// runpatch set zeroes it instead (its bytes depend on the final content only).
// Neither leaves the old text.
TEST_F(PatchelfCompat, AReplacedRunpathIsMarkedWithXsAsPatchelfMarksIt) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_x_mark");
  const std::string longer = "/a/runpath/longer/than/any/room/in/the/table/" + std::string(200, 'r');
  auto has_marked_old_runpath = [](const fs::path& file) {
    auto bytes = test::read_file(file);
    std::string text(bytes.begin(), bytes.end());
    return std::make_pair(text.find(std::string(11, 'X')) != std::string::npos,
                          text.find("$ORIGIN/lib") != std::string::npos);
  };
  for (const std::string& tool : {std::string("patchelf"), kOurs}) {
    fs::path out = dir / ("by-" + fs::path(tool).filename().string() + ".so");
    auto r = run_command({tool, "--set-rpath", longer, "--output", out.string(), (host.dir / "librunpath.so").string()},
                         true);
    ASSERT_EQ(r.exit_code, 0) << tool << ": " << r.output;
    EXPECT_EQ(has_marked_old_runpath(out), std::make_pair(true, false)) << tool;
  }
  fs::path ours = dir / "by-runpatch-set.so";
  fs::copy_file(host.dir / "librunpath.so", ours);
  auto r = run_command({RUNPATCH_CLI, "set", "--runpath", longer, ours.string()}, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(has_marked_old_runpath(ours), std::make_pair(false, false));
}

TEST_F(PatchelfCompat, ErrorPathsMatchPatchelf) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_errors");
  fs::copy_file(host.dir / "prog-pie", dir / "prog");
  write_text(dir / "short", "hello\n");
  write_text(dir / "text", std::string(200, 'x'));
  auto relocatable = test::read_file(host.dir / "prog-pie");
  relocatable[16] = 1;  // e_type = ET_REL (little-endian host fixture)
  test::write_file(dir / "relocatable", relocatable);
  std::string prog = (dir / "prog").string();
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"--set-rpath"},
      {"--replace-needed", "a"},
      {"--page-size", "0", prog},
      {"--page-size", "abc", prog},
      {"--print-rpath", (dir / "missing").string()},
      {"--print-rpath", (dir / "short").string()},
      {"--print-rpath", (dir / "text").string()},
      {"--print-rpath", (dir / "relocatable").string()},
      {"--set-rpath", "/a", "--add-rpath", "/b", prog},
      {"--set-rpath", "@" + (dir / "missing-value").string(), prog},
      {"--output", (dir / "x").string(), prog, prog},
      {"--print-rpath"},
      {"--print-rpath", (host.dir / "prog-static").string()},
      {"--set-rpath", "/x", (host.dir / "prog-static").string()},
      // A directory to edit, an --output in a missing directory or onto a directory: open(2)'s words.
      {"--set-rpath", "/x", dir.string()},
      {"--set-rpath", "/x", "--output", (dir / "missing-dir/out").string(), prog},
      {"--set-rpath", "/x", "--output", dir.string(), prog},
  };
  for (const auto& args : cases) {
    std::vector<std::string> theirs_cmd = {"patchelf"}, ours_cmd = {kOurs};
    theirs_cmd.insert(theirs_cmd.end(), args.begin(), args.end());
    ours_cmd.insert(ours_cmd.end(), args.begin(), args.end());
    auto theirs = run_command(theirs_cmd, true), mine = run_command(ours_cmd, true);
    std::string what = fmt::format("{}", fmt::join(args, " "));
    EXPECT_EQ(mine.exit_code, theirs.exit_code) << what << "\n" << mine.output << theirs.output;
    // The usage text differs (ours lists every 0.19 option); every other message is patchelf's.
    if (!args.empty()) {
      EXPECT_EQ(mine.output, theirs.output) << what;
    }
  }
}

// A file the user may not write: patchelf's open(2) words, and the file left
// alone (as root, run as nobody through setpriv, for whom mode 444 is closed).
TEST_F(PatchelfCompat, AReadOnlyFileIsRefusedInPatchelfsWords) {
  std::vector<std::string> as_user;
  if (::geteuid() == 0) {
    if (!test::have_program("setpriv")) GTEST_SKIP() << "needs setpriv to run as an unprivileged user";
    as_user = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  }
  fs::path dir = test::scratch_dir("patchelf_read_only");
  fs::permissions(dir, fs::perms::all, fs::perm_options::add);  // nobody may write the directory, not the file
  fs::copy_file(test::fixture_arches().at(0).dir / "prog-pie", dir / "prog", fs::copy_options::overwrite_existing);
  fs::permissions(dir / "prog", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  auto before = test::read_file(dir / "prog");
  for (const std::string& tool : {std::string("patchelf"), kOurs}) {
    std::vector<std::string> argv = as_user;
    for (const std::string& a : {tool, std::string("--set-rpath"), std::string("/x"), (dir / "prog").string()})
      argv.push_back(a);
    auto r = run_command(argv, true);
    EXPECT_EQ(r.exit_code, 1) << tool << "\n" << r.output;
    EXPECT_EQ(r.output, "patchelf: open: Permission denied\n") << tool;
  }
  EXPECT_EQ(test::read_file(dir / "prog"), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "debris beside the file";
}

// What patchelf 0.19 answers but Debian's patchelf (0.14) does not know: written expectations.
TEST_F(PatchelfCompat, ErrorPathsOfNewerOptions) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_new_errors");
  fs::copy_file(host.dir / "prog-pie", dir / "prog");
  write_text(dir / "one-word.map", "old_name\n");
  write_text(dir / "twice.map", "a b\na c\n");
  write_text(dir / "versioned.map", "a@V1 b\n");
  std::string prog = (dir / "prog").string(), map = (dir / "one-word.map").string();
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string output;
  };
  const std::vector<Case> cases = {
      {{"--frobnicate", prog}, 1, "patchelf: unrecognized option '--frobnicate'\n"},
      {{"-x", prog}, 1, "patchelf: unrecognized option '-x'\n"},
      {{"--set-os-abi", "plan9", prog}, 1, "patchelf: unrecognized OS ABI\n"},
      {{"--set-os-abi"}, 1, "patchelf: missing argument\n"},
      {{"--clear-symbol-version"}, 1, "patchelf: missing argument\n"},
      {{"--rename-dynamic-symbols"}, 1, "patchelf: missing argument\n"},
      {{"--rename-dynamic-symbols", (dir / "no.map").string(), prog},
       1,
       "patchelf: Cannot open map file " + (dir / "no.map").string() + ": No such file or directory\n"},
      {{"--rename-dynamic-symbols", map, prog},
       1,
       "patchelf: " + map + ":1: Map file line is missing the second element\n"},
      {{"--rename-dynamic-symbols", (dir / "twice.map").string(), prog},
       1,
       "patchelf: " + (dir / "twice.map").string() + ":2: Name 'a' appears twice in the map file\n"},
      {{"--rename-dynamic-symbols", (dir / "versioned.map").string(), prog},
       1,
       "patchelf: " + (dir / "versioned.map").string() + ":1: Name pair contains version tag: a@V1 b\n"},
      {{"--print-os-abi", (dir / "missing").string()},
       1,
       "patchelf: getting info about '" + (dir / "missing").string() + "': No such file or directory\n"},
      {{"--add-debug-tag", (host.dir / "prog-static").string()},
       1,
       "patchelf: cannot find section '.dynamic'. The input file is most likely statically linked\n"},
      {{"--help"}, 0, ""},
      {{"--version"}, 0, ""},
  };
  for (const auto& c : cases) {
    auto r = ours(c.args);
    std::string what = fmt::format("{}", fmt::join(c.args, " "));
    EXPECT_EQ(r.exit_code, c.exit_code) << what << "\n" << r.output;
    if (!c.output.empty()) {
      EXPECT_EQ(r.output, c.output) << what;
    }
  }
  // A well-formed map is accepted and applied (tests/integration/rename_symbols_test.cpp runs the results).
  write_text(dir / "good.map", "greet hello\n");
  auto rename = ours({"--rename-dynamic-symbols", (dir / "good.map").string(), prog});
  EXPECT_EQ(rename.exit_code, 0) << rename.output;
  auto symbols = test::run_command({"readelf", "-W", "--dyn-syms", prog});
  EXPECT_NE(symbols.output.find(" hello\n"), std::string::npos) << symbols.output;
}

// Every option of patchelf 0.19 is known: none is taken for a file name, and --help names each.
TEST_F(PatchelfCompat, EveryPatchelf019OptionIsAccepted) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_every_option");
  auto help = ours({"--help"}).output;
  const std::vector<std::vector<std::string>> options = {
      {"--set-interpreter", "/lib64/ld-linux-x86-64.so.2"},
      {"--interpreter", "/lib64/ld-linux-x86-64.so.2"},
      {"--page-size", "4096"},
      {"--print-interpreter"},
      {"--print-os-abi"},
      {"--set-os-abi", "linux"},
      {"--print-soname"},
      {"--set-soname", "libx.so"},
      {"--set-rpath", "/a"},
      {"--add-rpath", "/b"},
      {"--remove-rpath"},
      {"--shrink-rpath"},
      {"--allowed-rpath-prefixes", "/nix"},
      {"--print-rpath"},
      {"--force-rpath"},
      {"--add-needed", "libm.so.6"},
      {"--remove-needed", "libm.so.6"},
      {"--replace-needed", "libm.so.6", "libm.so.6"},
      {"--print-needed"},
      {"--no-default-lib"},
      {"--no-sort"},
      {"--clear-symbol-version", "printf"},
      {"--add-debug-tag"},
      {"--print-execstack"},
      {"--clear-execstack"},
      {"--set-execstack"},
      {"--no-clobber-old-sections"},
      {"--output", (dir / "out").string()},
      {"--debug"},
      {"--build-resolution-cache"},
  };
  int number = 0;
  for (const auto& option : options) {
    EXPECT_NE(help.find(option[0]), std::string::npos) << option[0] << " is missing from --help";
    fs::path file = dir / ("f" + std::to_string(number++));
    fs::copy_file(host.dir / "prog-pie", file);
    auto args = option;
    args.push_back(file.string());
    auto r = ours(args);
    EXPECT_EQ(r.exit_code, 0) << option[0] << ": " << r.output;
    EXPECT_EQ(r.output.find("getting info about '--"), std::string::npos) << option[0];
  }
  for (const char* word : {"--rename-dynamic-symbols", "--version", "--help"})
    EXPECT_NE(help.find(word), std::string::npos) << word;
}

// `@file` values are the file's whole contents (a trailing newline included), as patchelf reads them.
TEST_F(PatchelfCompat, AtFileArgumentsMatchPatchelf) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_at_file");
  write_text(dir / "rpath", "/from/a/file");
  write_text(dir / "rpath-newline", "/from/a/file\n");
  write_text(dir / "needed", "libm.so.6");
  const std::vector<std::vector<std::string>> edits = {
      {"--set-rpath", "@" + (dir / "rpath").string()},       {"--set-rpath", "@" + (dir / "rpath-newline").string()},
      {"--add-rpath", "@" + (dir / "rpath").string()},       {"--add-needed", "@" + (dir / "needed").string()},
      {"--set-interpreter", "@" + (dir / "rpath").string()},
  };
  int number = 0;
  for (const auto& edit : edits) {
    fs::path theirs_file = dir / ("theirs" + std::to_string(number)),
             ours_file = dir / ("ours" + std::to_string(number));
    ++number;
    fs::copy_file(host.dir / "prog-pie", theirs_file);
    fs::copy_file(host.dir / "prog-pie", ours_file);
    std::vector<std::string> theirs_cmd = {"patchelf"}, ours_cmd = {kOurs};
    for (const auto& a : edit) theirs_cmd.push_back(a), ours_cmd.push_back(a);
    theirs_cmd.push_back(theirs_file.string());
    ours_cmd.push_back(ours_file.string());
    std::string what = fmt::format("{}", fmt::join(edit, " "));
    ASSERT_EQ(run_command(ours_cmd, true).exit_code, run_command(theirs_cmd, true).exit_code) << what;
    for (const char* print : {"--print-rpath", "--print-needed", "--print-interpreter"})
      EXPECT_EQ(run_command({"patchelf", print, ours_file.string()}).output,
                run_command({"patchelf", print, theirs_file.string()}).output)
          << what << " " << print;
  }
}

// --no-default-lib and --clear-symbol-version, which Debian's patchelf has: the same result.
TEST_F(PatchelfCompat, FlagAndVersionEditsMatchPatchelf) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_flags");
  struct Case {
    std::vector<std::string> edit;
    std::string file;
  };
  const std::vector<Case> cases = {
      {{"--no-default-lib"}, "prog-pie"},         // DT_FLAGS_1 there: the bit is added
      {{"--no-default-lib"}, "lib/libgreet.so"},  // no DT_FLAGS_1: a spare DT_NULL slot takes it
      {{"--no-default-lib"}, "prog-nodeflib"},    // already set
      {{"--clear-symbol-version", "printf"}, "prog-pie"},
      {{"--clear-symbol-version", "printf", "--clear-symbol-version", "__cxa_finalize"}, "prog-nopie"},
      {{"--clear-symbol-version", "no_such_symbol"}, "prog-pie"},
  };
  int number = 0;
  for (const auto& c : cases) {
    fs::path theirs_file = dir / ("theirs" + std::to_string(number)),
             ours_file = dir / ("ours" + std::to_string(number));
    ++number;
    fs::copy_file(host.dir / c.file, theirs_file);
    fs::copy_file(host.dir / c.file, ours_file);
    std::vector<std::string> theirs_cmd = {"patchelf"}, ours_cmd = {kOurs};
    for (const auto& a : c.edit) theirs_cmd.push_back(a), ours_cmd.push_back(a);
    theirs_cmd.push_back(theirs_file.string());
    ours_cmd.push_back(ours_file.string());
    std::string what = fmt::format("{} on {}", fmt::join(c.edit, " "), c.file);
    auto theirs = run_command(theirs_cmd, true), mine = run_command(ours_cmd, true);
    ASSERT_EQ(mine.exit_code, theirs.exit_code) << what << "\n" << mine.output << theirs.output;
    auto a = test::readelf_facts(theirs_file), b = test::readelf_facts(ours_file);
    ASSERT_TRUE(a && b) << what;
    EXPECT_EQ(b->flags_1, a->flags_1) << what;
    for (const char* symbol : {"printf", "__cxa_finalize", "__libc_start_main"})
      EXPECT_EQ(readelf_dynsym(ours_file, symbol), readelf_dynsym(theirs_file, symbol)) << what << " " << symbol;
    EXPECT_EQ(test::readelf_warnings(ours_file), "") << what;
  }
}

// patchelf's OS ABI names and aliases, as data: what --set-os-abi takes, the byte, what --print-os-abi says.
TEST_F(PatchelfCompat, OsAbiNamesAndAliases) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_osabi");
  struct Case {
    std::string name;
    uint8_t value;
    std::string printed;
  };
  const std::vector<Case> cases = {
      {"System V", 0, "System V"}, {"system-v", 0, "System V"}, {"sysv", 0, "System V"},   {"HP-UX", 1, "HP-UX"},
      {"NetBSD", 2, "NetBSD"},     {"Linux", 3, "Linux"},       {"gnu", 3, "Linux"},       {"  LINUX ", 3, "Linux"},
      {"GNU Hurd", 4, "GNU Hurd"}, {"gnu-hurd", 4, "GNU Hurd"}, {"hurd", 4, "GNU Hurd"},   {"Solaris", 6, "Solaris"},
      {"AIX", 7, "AIX"},           {"IRIX", 8, "IRIX"},         {"FreeBSD", 9, "FreeBSD"}, {"Tru64", 10, "Tru64"},
      {"OpenBSD", 12, "OpenBSD"},  {"OpenVMS", 13, "OpenVMS"},
  };
  fs::path file = dir / "prog";
  fs::copy_file(host.dir / "prog-pie", file);
  for (const auto& c : cases) {
    auto r = ours({"--set-os-abi", c.name, file.string()});
    ASSERT_EQ(r.exit_code, 0) << c.name << ": " << r.output;
    EXPECT_EQ(test::read_file(file).at(7), c.value) << c.name;
    EXPECT_EQ(ours({"--print-os-abi", file.string()}).output, c.printed + "\n") << c.name;
  }
  // A value patchelf has no name for is printed in hex.
  auto bytes = test::read_file(file);
  bytes[7] = 0x61;
  test::write_file(file, bytes);
  EXPECT_EQ(ours({"--print-os-abi", file.string()}).output, "0x61\n");
  // Setting the value the file has already writes nothing.
  auto before = test::read_file(host.dir / "prog-pie");
  fs::copy_file(host.dir / "prog-pie", dir / "same");
  EXPECT_EQ(ours({"--set-os-abi", "sysv", (dir / "same").string()}).exit_code, 0);
  EXPECT_EQ(test::read_file(dir / "same"), before);
}

// --print-execstack/--set-execstack/--clear-execstack, following patchelf's modify-execstack test:
// set, set again (no-op), clear gives back the original bytes.
TEST_F(PatchelfCompat, ExecstackRoundTrips) {
  for (const auto& arch : test::fixture_arches()) {
    fs::path dir = test::scratch_dir("patchelf_execstack_" + arch.name);
    for (const char* name : {"prog-pie", "lib/libgreet.so"}) {
      fs::path file = dir / fs::path(name).filename();
      fs::copy_file(arch.dir / name, file);
      auto original = test::read_file(file);
      std::string what = arch.name + " " + name;
      if (readelf_stack_flags(file).empty()) {
        // ppc64 (ELFv1) links without PT_GNU_STACK: a program header is added, as patchelf does
        // (RW, plus X to set), and the edited program still runs.
        EXPECT_EQ(ours({"--print-execstack", file.string()}).output, "execstack: ?\n") << what;
        auto cleared = ours({"--clear-execstack", file.string()});
        EXPECT_EQ(cleared.exit_code, 0) << what << ": " << cleared.output;
        EXPECT_EQ(ours({"--print-execstack", file.string()}).output, "execstack: -\n") << what;
        EXPECT_EQ(ours({"--set-execstack", file.string()}).exit_code, 0) << what;
        EXPECT_EQ(ours({"--print-execstack", file.string()}).output, "execstack: X\n") << what;
        EXPECT_EQ(test::readelf_warnings(file), "") << what;
        if (std::string(name) == "prog-pie" && test::can_run(arch)) {
          fs::create_directories(dir / "lib");
          fs::copy_file(arch.dir / "lib/libgreet.so", dir / "lib/libgreet.so", fs::copy_options::overwrite_existing);
          EXPECT_EQ(test::run_program(arch, file).output, "hello from lib\n") << what;
        }
        continue;
      }
      EXPECT_EQ(ours({"--print-execstack", file.string()}).output, "execstack: -\n") << what;
      EXPECT_EQ(ours({"--clear-execstack", file.string()}).exit_code, 0) << what;
      EXPECT_EQ(test::read_file(file), original) << what << ": a no-op clear changed bytes";
      EXPECT_EQ(ours({"--set-execstack", file.string()}).exit_code, 0) << what;
      EXPECT_EQ(ours({"--print-execstack", file.string()}).output, "execstack: X\n") << what;
      EXPECT_NE(readelf_stack_flags(file).find('E'), std::string::npos) << what;
      EXPECT_NE(test::read_file(file), original) << what;
      EXPECT_EQ(ours({"--set-execstack", file.string()}).exit_code, 0) << what;
      // --print-execstack wins over --clear-execstack, as in patchelf: nothing changes.
      EXPECT_EQ(ours({"--print-execstack", "--clear-execstack", file.string()}).output, "execstack: X\n") << what;
      EXPECT_EQ(ours({"--clear-execstack", file.string()}).exit_code, 0) << what;
      EXPECT_EQ(ours({"--print-execstack", file.string()}).output, "execstack: -\n") << what;
      EXPECT_EQ(test::read_file(file), original) << what << ": set then clear is not the original";
    }
  }
}

// Without PT_GNU_STACK patchelf prints '?' and adds one; we turn a PT_NULL entry into it, or add one.
TEST_F(PatchelfCompat, ExecstackWithoutGnuStack) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_execstack_none");
  auto bytes = test::read_file(host.dir / "prog-pie");
  uint64_t phoff = 0, phnum = 0;
  std::memcpy(&phoff, &bytes[32], 8);
  std::memcpy(&phnum, &bytes[56], 2);
  std::optional<uint64_t> stack_entry;
  for (uint64_t i = 0; i < phnum; ++i) {
    uint32_t type = 0;
    std::memcpy(&type, &bytes[phoff + i * 56], 4);
    if (type == 0x6474e551) stack_entry = phoff + i * 56;
  }
  ASSERT_TRUE(stack_entry);
  struct Case {
    uint32_t replaced_type;
    int exit_code;
    std::string printed_after;
  };
  // PT_NULL: a free entry, becomes PT_GNU_STACK. PT_LOOS: nothing to take, a program header is added.
  fs::create_directories(dir / "lib");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "lib/libgreet.so", fs::copy_options::overwrite_existing);
  for (const Case& c : {Case{0, 0, "execstack: X\n"}, Case{0x60000000, 0, "execstack: X\n"}}) {
    auto changed = bytes;
    test::poke(changed, *stack_entry, 4, false, c.replaced_type);
    fs::path file = dir / fmt::format("prog-{:x}", c.replaced_type);
    test::write_file(file, changed);
    fs::permissions(file, fs::perms::owner_all);
    EXPECT_EQ(ours({"--print-execstack", file.string()}).output, "execstack: ?\n");
    auto r = ours({"--set-execstack", file.string()});
    EXPECT_EQ(r.exit_code, c.exit_code) << r.output;
    if (c.exit_code) {
      EXPECT_NE(r.output.find("not supported yet"), std::string::npos) << r.output;
      EXPECT_EQ(test::read_file(file), changed);
    }
    EXPECT_EQ(ours({"--print-execstack", file.string()}).output, c.printed_after);
    EXPECT_EQ(test::run_program(host, file).output, "hello from lib\n") << file;
  }
}

// --add-debug-tag and --no-default-lib need a DT_NULL slot when the tag is absent.
TEST_F(PatchelfCompat, DynamicTagsAreAddedWithOrWithoutASpareSlot) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_debug_tag");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "libgreet.so");
  auto r = ours({"--add-debug-tag", (dir / "libgreet.so").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(run_command({"readelf", "-dW", (dir / "libgreet.so").string()}).output.find("(DEBUG)"), std::string::npos);
  EXPECT_EQ(test::readelf_warnings(dir / "libgreet.so"), "");
  // A program has DT_DEBUG already: nothing is written.
  fs::copy_file(host.dir / "prog-pie", dir / "prog");
  EXPECT_EQ(ours({"--add-debug-tag", (dir / "prog").string()}).exit_code, 0);
  EXPECT_EQ(test::read_file(dir / "prog"), test::read_file(host.dir / "prog-pie"));
  // No spare slot: the planner lays the dynamic section out anew, as for any entry it adds.
  for (auto [option, shown] : {std::pair{"--add-debug-tag", "(DEBUG)"}, std::pair{"--no-default-lib", "NODEFLIB"}}) {
    test::SyntheticSpec spec;
    spec.soname = "libfull.so";
    auto image = test::build_synthetic_elf(spec);
    fs::path file = dir / (std::string("full") + option);
    test::write_file(file, image.bytes);
    auto added = ours({option, file.string()});
    EXPECT_EQ(added.exit_code, 0) << option << ": " << added.output;
    EXPECT_NE(run_command({"readelf", "-dW", file.string()}).output.find(shown), std::string::npos) << option;
    EXPECT_EQ(runpatch::read_elf_info(file)->soname, "libfull.so") << option;
  }
  // And on a library that runs: its program still prints through it.
  fs::create_directories(dir / "run/lib");
  fs::copy_file(host.dir / "prog-pie", dir / "run/prog-pie");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "run/lib/libgreet.so");
  ASSERT_EQ(ours({"--no-default-lib", "--add-debug-tag", (dir / "run/lib/libgreet.so").string()}).exit_code, 0);
  auto flags = run_command({"readelf", "-dW", (dir / "run/lib/libgreet.so").string()}).output;
  EXPECT_NE(flags.find("NODEFLIB"), std::string::npos) << flags;
  EXPECT_NE(flags.find("(DEBUG)"), std::string::npos) << flags;
  EXPECT_EQ(test::run_program(host, dir / "run/prog-pie").output, "hello from lib\n");
}

// Read-only options need only the program headers: a file without section
// headers answers like the file it was stripped from.
TEST_F(PatchelfCompat, ReadOnlyOptionsWithoutSectionHeaders) {
  for (const auto& arch : test::fixture_arches()) {
    for (const char* option : {"--print-rpath", "--print-needed", "--print-interpreter", "--print-soname",
                               "--print-os-abi", "--print-execstack"}) {
      auto stripped = ours({option, (arch.dir / "prog-stripped").string()});
      auto full = ours({option, (arch.dir / "prog-pie").string()});
      EXPECT_EQ(stripped.exit_code, 0) << arch.name << " " << option << ": " << stripped.output;
      EXPECT_EQ(stripped.output, full.output) << arch.name << " " << option;
    }
  }
}

// A separate debug file (objcopy --only-keep-debug) keeps PT_DYNAMIC without contents.
TEST_F(PatchelfCompat, SeparateDebugFile) {
  if (!test::have_program("objcopy")) GTEST_SKIP() << "objcopy is not installed";
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_debug_file");
  fs::path debug = dir / "prog.debug";
  ASSERT_EQ(run_command({"objcopy", "--only-keep-debug", (host.dir / "prog-pie").string(), debug.string()}).exit_code,
            0);
  // patchelf reads the empty .dynamic's offset for --print-needed (and prints what lies there); we print nothing.
  EXPECT_EQ(ours({"--print-needed", debug.string()}).output, "");
  for (const char* option : {"--print-rpath", "--print-soname"}) {
    auto theirs = run_command({"patchelf", option, debug.string()}, true);
    auto mine = ours({option, debug.string()});
    EXPECT_EQ(mine.exit_code, theirs.exit_code) << option << ": " << mine.output;
    EXPECT_EQ(mine.output, theirs.output) << option;
  }
  // patchelf prints whatever lies at the empty .interp's offset; the interpreter is not in the file.
  auto interpreter = ours({"--print-interpreter", debug.string()});
  EXPECT_EQ(interpreter.exit_code, 0);
  EXPECT_EQ(interpreter.output, "\n");
}

// --no-sort, --no-clobber-old-sections and --debug change nothing in what is written.
TEST_F(PatchelfCompat, LayoutOptionsAreNoOps) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("patchelf_noops");
  std::string long_runpath = "/" + std::string(300, 'r') + ":$ORIGIN/lib";
  fs::copy_file(host.dir / "prog-pie", dir / "plain");
  ASSERT_EQ(ours({"--set-rpath", long_runpath, (dir / "plain").string()}).exit_code, 0);
  for (const char* option : {"--no-sort", "--no-clobber-old-sections", "--debug"}) {
    fs::path file = dir / (std::string("with") + option);
    fs::copy_file(host.dir / "prog-pie", file);
    ASSERT_EQ(ours({option, "--set-rpath", long_runpath, file.string()}).exit_code, 0) << option;
    EXPECT_EQ(test::read_file(file), test::read_file(dir / "plain")) << option;
  }
}

// Every header edit leaves programs that run, natively and under qemu-user.
TEST_F(PatchelfCompat, HeaderEditedProgramsRunOnEveryArch) {
  for (const auto& arch : test::runnable_arches()) {
    fs::path dir = test::scratch_dir("patchelf_header_run_" + arch.name);
    fs::create_directories(dir / "lib");
    fs::copy_file(arch.dir / "prog-pie", dir / "prog");
    fs::copy_file(arch.dir / "lib/libgreet.so", dir / "lib/libgreet.so");
    // Where the linker wrote no PT_GNU_STACK (ppc64), the execstack edit is refused (ExecstackRoundTrips).
    bool has_stack = !readelf_stack_flags(dir / "prog").empty();
    auto edit_prog = ours({"--set-os-abi", "linux", has_stack ? "--set-execstack" : "--debug", "--clear-symbol-version",
                           "printf", "--add-debug-tag", (dir / "prog").string()});
    ASSERT_EQ(edit_prog.exit_code, 0) << arch.name << ": " << edit_prog.output;
    EXPECT_EQ(readelf_dynsym(dir / "prog", "printf"), "printf\n") << arch.name;
    auto edit_lib = ours({"--set-os-abi", "gnu", "--add-debug-tag", "--no-default-lib",
                          has_stack ? "--clear-execstack" : "--debug", (dir / "lib/libgreet.so").string()});
    ASSERT_EQ(edit_lib.exit_code, 0) << arch.name << ": " << edit_lib.output;
    auto facts = test::readelf_facts(dir / "lib/libgreet.so");
    ASSERT_TRUE(facts);
    EXPECT_NE(std::find(facts->flags_1.begin(), facts->flags_1.end(), "NODEFLIB"), facts->flags_1.end()) << arch.name;
    EXPECT_EQ(test::readelf_warnings(dir / "prog"), "") << arch.name;
    test::expect_greets(arch, dir / "prog");
  }
}

// The same edits through `runpatch set`.
TEST_F(PatchelfCompat, RunpatchSetHeaderOptions) {
  auto host = test::fixture_arches().at(0);
  fs::path dir = test::scratch_dir("runpatch_set_headers");
  fs::create_directories(dir / "lib");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "lib/libgreet.so");
  fs::copy_file(host.dir / "prog-pie", dir / "prog");
  std::string prog = (dir / "prog").string();
  auto r = run_command(
      {RUNPATCH_CLI, "set", "--os-abi", "GNU", "--execstack", "--clear-symbol-version", "printf", prog}, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ours({"--print-os-abi", "--print-execstack", prog}).output, "Linux\nexecstack: X\n");
  EXPECT_EQ(readelf_dynsym(dir / "prog", "printf"), "printf\n");
  test::expect_greets(host, dir / "prog");
  r = run_command({RUNPATCH_CLI, "set", "--no-execstack", "--no-default-lib", (dir / "lib/libgreet.so").string()},
                  true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto facts = test::readelf_facts(dir / "lib/libgreet.so");
  ASSERT_TRUE(facts);
  EXPECT_EQ(facts->flags_1, std::vector<std::string>{"NODEFLIB"});
  EXPECT_EQ(run_command({RUNPATCH_CLI, "set", "--os-abi", "plan9", prog}, true).exit_code, 2);
  EXPECT_EQ(run_command({RUNPATCH_CLI, "set", "--execstack", "--no-execstack", prog}, true).exit_code, 2);
  // A header edit together with a runpath edit, written to --output.
  r = run_command(
      {RUNPATCH_CLI, "set", "--runpath", "$ORIGIN/lib", "--os-abi", "sysv", "-o", (dir / "out").string(), prog}, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::read_file(dir / "out").at(7), 0);
  test::expect_greets(host, dir / "out");
}

}  // namespace
}  // namespace runpatch
