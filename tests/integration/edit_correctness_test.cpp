// Edits that used to come out silently wrong, on every arch fixture, each
// proven by running the edited program (natively or under qemu-user):
// symbol-version needs follow --replace-needed, an interpreter that fits is
// written even when a segment is appended, files patchelf edited before are
// read and edited, and the file grows by the new bytes only.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "readelf_oracle.hpp"
#include "editing/edit_testing.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;
using test::FixtureArch;
using test::run_command;

const std::string kPatchelfCli = test::runpatch_patchelf_path();

class EditCorrectness : public ::testing::TestWithParam<FixtureArch> {
 protected:
  void SetUp() override {
    if (!test::can_run(arch())) GTEST_SKIP() << arch().qemu << " is not installed: cannot run " << arch().name;
  }
  const FixtureArch& arch() const { return GetParam(); }

  fs::path case_dir(const std::string& name) { return test::scratch_dir("correctness/" + arch().name + "/" + name); }

  // dir/prog (a copy of program) and dir/lib/ with the libraries the fixtures link.
  fs::path prepare(const std::string& case_name, const std::string& program) {
    fs::path dir = case_dir(case_name);
    fs::create_directories(dir / "lib");
    for (const char* lib : {"libgreet.so", "libversioned.so"})
      fs::copy_file(arch().dir / "lib" / lib, dir / "lib" / lib);
    fs::copy_file(arch().dir / program, dir / "prog");
    return dir;
  }

  std::string version_need_files(const fs::path& file) {
    auto r = run_command({"readelf", "-VW", file.string()}, true);
    std::string files;
    for (size_t at = 0; (at = r.output.find("File: ", at)) != std::string::npos; at += 6)
      files += r.output.substr(at + 6, r.output.find(' ', at + 6) - at - 6) + ";";
    return files;
  }

  uint64_t size_of(const fs::path& file) { return fs::file_size(file); }
};

TEST_P(EditCorrectness, ReplaceNeededRenamesTheVersionNeedAndTheProgramRuns) {
  fs::path dir = prepare("replace-needed", "prog-versioned");
  fs::rename(dir / "lib/libversioned.so", dir / "lib/libversioned-renamed.so");
  ASSERT_NE(version_need_files(dir / "prog").find("libversioned.so;"), std::string::npos);
  EditRequest request;
  std::string full = (dir / "lib/libversioned-renamed.so").string();
  request.replace_needed = {{"libversioned.so", full}};
  auto outcome = edit_elf_file(dir / "prog", request);
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(read_elf_info(dir / "prog")->needed[0], full);
  EXPECT_NE(version_need_files(dir / "prog").find(full + ";"), std::string::npos) << version_need_files(dir / "prog");
  auto run = test::run_program(arch(), dir / "prog");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "versioned 42\n");
}

TEST_P(EditCorrectness, ReplaceNeededThroughBothCommandLines) {
  for (std::string tool : {std::string(RUNPATCH_CLI), kPatchelfCli}) {
    fs::path dir = prepare(fs::path(tool).filename().string(), "prog-versioned");
    fs::rename(dir / "lib/libversioned.so", dir / "lib/libv.so");
    std::vector<std::string> argv = {tool};
    if (tool == RUNPATCH_CLI) argv.push_back("set");
    argv.insert(argv.end(), {"--replace-needed", "libversioned.so", "libv.so", (dir / "prog").string()});
    auto r = run_command(argv, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(version_need_files(dir / "prog").find("libv.so;"), std::string::npos);
    auto run = test::run_program(arch(), dir / "prog");
    EXPECT_EQ(run.output, "versioned 42\n") << tool;
  }
}

TEST_P(EditCorrectness, RemoveNeededKeepsVersionNeedsAsPatchelfAndWarns) {
  fs::path dir = prepare("remove-needed", "prog-versioned");
  EditRequest request;
  request.remove_needed = {"libversioned.so"};
  auto outcome = edit_elf_file(dir / "prog", request);
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_NE(version_need_files(dir / "prog").find("libversioned.so;"), std::string::npos);
  ASSERT_EQ(outcome->warnings.size(), 1u);
  EXPECT_EQ(outcome->warnings[0].kind, EditWarningKind::VersionNeedsKept);
  EXPECT_NE(outcome->warnings[0].text.find("libversioned.so still has symbol-version needs"), std::string::npos);
}

// The same file as path, spelled at least extra bytes longer ("/lib/./././ld.so").
std::string spelled_longer(const std::string& path, size_t extra) {
  size_t slash = path.rfind('/');
  std::string dots;
  while (dots.size() < extra) dots += "/.";
  return path.substr(0, slash) + dots + path.substr(slash);
}

// The program's interpreter, and a longer spelling of the same file.
std::pair<std::string, std::string> interpreters(const FixtureArch&, const fs::path& program) {
  std::string interp = *read_elf_info(program)->interpreter;
  return {interp, spelled_longer(interp, 4)};
}

TEST_P(EditCorrectness, InterpreterThatFitsIsWrittenWhenASegmentIsAppended) {
  for (const char* program : {"prog-pie", "prog-nopie", "prog-norunpath"}) {
    fs::path dir = prepare(std::string("interp-fits-") + program, program);
    auto [shorter, longer] = interpreters(arch(), dir / "prog");
    EditRequest grow;
    grow.interpreter = longer;
    ASSERT_TRUE(edit_elf_file(dir / "prog", grow));
    // Back to the shorter path (fits where the longer one is) while a new DT_NEEDED needs an appended segment.
    EditRequest both;
    both.interpreter = shorter;
    both.add_needed = {"libgreet.so"};
    both.runpath = [](const ElfInfo&) -> Expected<RunpathChange> {
      return RunpathChange::set("/nonexistent/" + std::string(5000, 'r') + ":$ORIGIN/lib");  // more than a page
    };
    auto outcome = edit_elf_file(dir / "prog", both);
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_EQ(outcome->strategy, EditStrategy::Appended) << program;
    auto info = read_elf_info(dir / "prog");
    EXPECT_EQ(info->interpreter, shorter) << program;
    test::expect_greets(arch(), dir / "prog");
  }
}

TEST_P(EditCorrectness, SetInterpreterOnAPieWithoutRunpath) {
  fs::path dir = prepare("interp-norunpath", "prog-norunpath");
  auto [shorter, longer] = interpreters(arch(), dir / "prog");
  uint64_t before = size_of(dir / "prog");
  EditRequest request;
  request.interpreter = spelled_longer(shorter, 40);
  auto outcome = edit_elf_file(dir / "prog", request);
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(read_elf_info(dir / "prog")->interpreter, request.interpreter);
  EXPECT_LE(size_of(dir / "prog") - before, 65536u + 4096u) << outcome->layout_description;
  EditRequest runpath;
  runpath.runpath = [](const ElfInfo&) -> Expected<RunpathChange> { return RunpathChange::set("$ORIGIN/lib"); };
  ASSERT_TRUE(edit_elf_file(dir / "prog", runpath));
  test::expect_greets(arch(), dir / "prog");
}

// Programs whose loader sees no dynamic section (PT_DYNAMIC hidden, or
// holding only DT_NULL): patchelf sets their interpreter, and so do we. glibc's
// loader cannot start such a program, so readelf and patchelf are the oracles.
TEST_P(EditCorrectness, InterpreterOfAProgramWithoutAVisibleDynamicSection) {
  for (const char* mode : {"hide", "empty"}) {
    fs::path dir = prepare(std::string("no-dynamic-") + mode, std::string("prog-dynamic-") + mode);
    std::string interp = *read_elf_info(dir / "prog")->interpreter;
    for (const std::string& wanted : {spelled_longer(interp, 40), interp}) {
      EditRequest request;
      request.interpreter = wanted;
      auto outcome = edit_elf_file(dir / "prog", request);
      ASSERT_TRUE(outcome) << mode << ": " << outcome.error().message();
      auto readelf = run_command({"readelf", "-lW", (dir / "prog").string()}, true);
      EXPECT_NE(readelf.output.find("[Requesting program interpreter: " + wanted + "]"), std::string::npos)
          << mode << "\n"
          << readelf.output;
      if (test::have_program("patchelf")) {
        auto theirs = run_command({"patchelf", "--print-interpreter", (dir / "prog").string()}, true);
        EXPECT_EQ(theirs.output, wanted + "\n") << mode;
      }
    }
    EditRequest runpath;
    runpath.runpath = [](const ElfInfo&) -> Expected<RunpathChange> { return RunpathChange::set("/x"); };
    EXPECT_FALSE(edit_elf_file(dir / "prog", runpath)) << "a runpath needs a dynamic section";
  }
}

// patchelf's reading (runpatch-patchelf): a program without PT_DYNAMIC whose
// `.dynamic` section exists gets its runpath in that section, which moves
// with the new string table; the loader's reading still sees no dynamic
// section. patchelf, which reads section headers, is the oracle.
TEST_P(EditCorrectness, RunpathThroughTheDynamicSectionHeader) {
  fs::path dir = prepare("dynamic-section-header", "prog-dynamic-hide");
  EditOptions options;
  options.dynamic_source = DynamicSource::SegmentOrSection;
  for (const std::string& wanted : {std::string("/x"), "/nonexistent/" + std::string(200, 'y')}) {
    EditRequest request;
    request.runpath = [&](const ElfInfo&) -> Expected<RunpathChange> { return RunpathChange::set(wanted); };
    auto outcome = edit_elf_file(dir / "prog", request, options);
    ASSERT_TRUE(outcome) << outcome.error().message();
    auto as_patchelf = read_elf_info(dir / "prog", DynamicSource::SegmentOrSection);
    ASSERT_TRUE(as_patchelf) << as_patchelf.error().message();
    EXPECT_EQ(as_patchelf->runpath, wanted) << outcome->layout_description;
    EXPECT_TRUE(read_elf_info(dir / "prog")->is_static()) << "the loader's reading still has no dynamic section";
    if (test::have_program("patchelf")) {
      auto theirs = run_command({"patchelf", "--print-rpath", (dir / "prog").string()}, true);
      EXPECT_EQ(theirs.output, wanted + "\n") << outcome->layout_description;
    }
  }
}

// The loader only needs p_offset ≡ p_vaddr (mod p_align): a new segment
// costs its own bytes, not padding up to an address.
TEST_P(EditCorrectness, GrowthIsTheNewBytesOnly) {
  for (const char* program : {"prog-pie", "prog-bigbss", "lib/libgreet.so"}) {
    for (bool ldcache : {false, true}) {
      fs::path dir = prepare(fmt::format("growth-{}-{}", fs::path(program).filename().string(), ldcache), program);
      uint64_t before = size_of(dir / "prog");
      EditRequest request;
      request.runpath = [](const ElfInfo& info) -> Expected<RunpathChange> {
        return RunpathChange::set("/run/opengl-driver/lib:/nonexistent/" + std::string(300, 'x') + ":" +
                                  info.runpath.value_or(""));
      };
      if (ldcache) request.resolution_cache = ResolutionCacheMode::Write;
      request.resolution_root = dir;
      auto outcome = edit_elf_file(dir / "prog", request);
      ASSERT_TRUE(outcome) << outcome.error().message();
      uint64_t written = 0;
      for (const auto& w : outcome->writes)
        if (w.offset + w.size > before) written += w.offset + w.size - std::max(w.offset, before);
      EXPECT_LE(size_of(dir / "prog") - before,
                written + 4096 + (arch().name == "x86_64" || arch().name == "i686" ? 0 : 61440))
          << program << " ldcache=" << ldcache << ": " << outcome->layout_description;
      if (std::string(program).starts_with("prog")) test::expect_greets(arch(), dir / "prog");
    }
  }
}

// Debian's patchelf edits a non-PIE program with a large .dynstr so that the
// table spans two adjacent PT_LOADs; the loader runs it, and so must we read it.
TEST_P(EditCorrectness, FilesPatchelfEditedAreReadEditedAndRun) {
  if (!test::have_program("patchelf")) GTEST_SKIP() << "patchelf is not installed";
  for (const char* program : {"prog-manyexports", "prog-nopie", "prog-pie", "lib/libgreet.so", "prog-bigbss"}) {
    fs::path dir = prepare(std::string("patchelf-first-") + fs::path(program).filename().string(), program);
    fs::path prog = dir / "prog";
    bool is_program = std::string(program).starts_with("prog");
    if (is_program) {
      auto shorter = interpreters(arch(), prog).first;
      auto r = run_command({"patchelf", "--set-interpreter", spelled_longer(shorter, 64), prog.string()}, true);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    for (std::string rpath : {"/nonexistent/" + std::string(500, 'p') + ":$ORIGIN/lib", std::string("$ORIGIN/lib")}) {
      auto r = run_command({"patchelf", "--set-rpath", rpath, prog.string()}, true);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    ASSERT_EQ(run_command({"patchelf", "--shrink-rpath", prog.string()}, true).exit_code, 0);
    ASSERT_EQ(run_command({"patchelf", "--add-needed", "libgreet.so", prog.string()}, true).exit_code, 0);
    auto info = read_elf_info(prog);
    ASSERT_TRUE(info) << program << ": " << info.error().message();
    EXPECT_EQ(info->runpath, "$ORIGIN/lib");
    EditRequest request;
    request.runpath = [](const ElfInfo& i) -> Expected<RunpathChange> {
      return RunpathChange::set("/run/opengl-driver/lib:" + i.runpath.value_or(""));
    };
    auto outcome = edit_elf_file(prog, request);
    ASSERT_TRUE(outcome) << program << ": " << outcome.error().message();
    EXPECT_EQ(read_elf_info(prog)->runpath, "/run/opengl-driver/lib:$ORIGIN/lib");
    if (is_program) test::expect_greets(arch(), prog);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EditCorrectness, ::testing::ValuesIn(test::fixture_arches()),
                         [](const auto& param_info) { return param_info.param.name; });

// The issue's own reproduction: a C++ program (versioned references to
// GLIBCXX_* in libstdc++.so.6) whose libstdc++ is replaced by its full path,
// through both command lines. Built at test time with the host's C++ compiler.
TEST(EditCorrectnessHost, CxxProgramRunsAfterLibstdcxxIsReplacedByItsFullPath) {
  if (!test::have_program("c++")) GTEST_SKIP() << "no host C++ compiler";
  fs::path dir = test::scratch_dir("correctness/cxx");
  std::ofstream(dir / "prog.cpp") << "#include <iostream>\n#include <string>\n"
                                     "int main() { std::string s = \"cxx\"; std::cout << s + \" ok\" << std::endl; }\n";
  auto build = run_command({"c++", "-O2", "-o", (dir / "prog").string(), (dir / "prog.cpp").string()}, true);
  ASSERT_EQ(build.exit_code, 0) << build.output;
  auto where = run_command({"c++", "-print-file-name=libstdc++.so.6"});
  std::string libstdcxx = fs::canonical(where.output.substr(0, where.output.find('\n'))).string();
  for (std::string tool : {std::string(RUNPATCH_CLI), kPatchelfCli}) {
    fs::path prog = dir / ("prog-" + fs::path(tool).filename().string());
    fs::copy_file(dir / "prog", prog, fs::copy_options::overwrite_existing);
    std::vector<std::string> argv = {tool};
    if (tool == RUNPATCH_CLI) argv.push_back("set");
    argv.insert(argv.end(), {"--replace-needed", "libstdc++.so.6", libstdcxx, prog.string()});
    auto edit = run_command(argv, true);
    ASSERT_EQ(edit.exit_code, 0) << edit.output;
    auto versions = run_command({"readelf", "-VW", prog.string()}).output;
    EXPECT_NE(versions.find("File: " + libstdcxx), std::string::npos) << versions;
    auto run = run_command({prog.string()}, true);
    EXPECT_EQ(run.exit_code, 0) << tool << ": " << run.output;
    EXPECT_EQ(run.output, "cxx ok\n") << tool;
  }
}

// ---- Verification catches a wrong plan ----------------------------------------

class EditVerification : public ::testing::Test {
 protected:
  fs::path copy(const std::string& name) {
    fs::path dir = test::scratch_dir("verification/" +
                                     std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::copy_file(test::fixtures_dir() / "x86_64/prog-pie", dir / name);
    return dir / name;
  }
  static EditRequest new_runpath() {
    EditRequest request;
    request.runpath = [](const ElfInfo&) -> Expected<RunpathChange> {
      return RunpathChange::set("/run/opengl-driver/lib:" + std::string(300, 'v'));
    };
    return request;
  }
  void expect_refused(const fs::path& file, const EditRequest& request, const EditOptions& options,
                      const EditTestHooks& wrong_plan, const std::string& field) {
    auto before = test::read_file(file);
    auto outcome = edit_elf_file_for_testing(file, request, options, wrong_plan);
    ASSERT_FALSE(outcome) << "a wrong plan was not caught";
    EXPECT_NE(outcome.error().message().find(file.string()), std::string::npos) << outcome.error().message();
    EXPECT_NE(outcome.error().message().find(field), std::string::npos) << outcome.error().message();
    EXPECT_EQ(test::read_file(file), before) << "the file was changed";
    EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 1) << "debris left";
  }
};

TEST_F(EditVerification, AWriteIntoCodeIsCaught) {
  fs::path file = copy("prog");
  EditOptions options;
  // .text's file offset, from readelf's section table ("[16] .text PROGBITS addr off ...").
  auto sections = run_command({"readelf", "-SW", file.string()}).output;
  size_t at = sections.find(" .text ");
  ASSERT_NE(at, std::string::npos);
  std::istringstream fields(sections.substr(at));
  std::string name, type, addr, off;
  fields >> name >> type >> addr >> off;
  uint64_t text = std::stoull(off, nullptr, 16);
  ASSERT_NE(text, 0u);
  EditTestHooks into_code;
  into_code.inject_write = std::pair<uint64_t, std::vector<uint8_t>>{text + 16, {0xcc, 0xcc}};
  expect_refused(file, new_runpath(), options, into_code, "outside every structure an edit may change");
  options.in_place = true;
  expect_refused(file, new_runpath(), options, into_code, "outside every structure an edit may change");
}

TEST_F(EditVerification, AMissingCommitIsCaught) {
  fs::path file = copy("prog");
  for (WriteKind dropped : {WriteKind::ElfAndProgramHeaders, WriteKind::ProgramHeaders, WriteKind::ElfHeader}) {
    EditTestHooks without;
    without.drop_writes = dropped;
    auto probe = edit_elf_file(file, new_runpath(), EditOptions{.dry_run = true});
    ASSERT_TRUE(probe);
    bool has = std::any_of(probe->writes.begin(), probe->writes.end(),
                           [&](const WrittenRange& w) { return w.kind == dropped; });
    if (!has) continue;
    // Without the commit the old dynamic table, zeroed after it, is what a loader reads.
    expect_refused(file, new_runpath(), EditOptions{}, without, "DT_NEEDED is []");
  }
  EditRequest interp;
  interp.interpreter = "/lib64/ld-linux-x86-64.so.3";
  EditTestHooks without;
  without.drop_writes = WriteKind::Interpreter;
  expect_refused(file, interp, EditOptions{}, without, "interpreter");
}

TEST_F(EditVerification, AStaleVersionNeedIsCaught) {
  fs::path dir = test::scratch_dir("verification/stale-verneed");
  fs::copy_file(test::fixtures_dir() / "x86_64/prog-versioned", dir / "prog");
  EditRequest request;
  request.replace_needed = {{"libversioned.so", "libother.so"}};
  EditTestHooks without;
  without.drop_writes = WriteKind::VersionNeedFile;
  expect_refused(dir / "prog", request, EditOptions{}, without, "version need files");
}

// The runpath callback is policy code (shrinking reads the library
// directories): the editor's planning passes, its verifier and its warning
// about DT_RPATH must all see one answer, computed once, even when the
// callback would answer differently the next time.
TEST(EditRequestEvaluation, TheRunpathIsComputedOnceForEveryPass) {
  fs::path dir = test::scratch_dir("edit-request/once");
  fs::copy_file(test::fixtures_dir() / "x86_64/lib/libgreet.so", dir / "libgreet.so");
  for (bool in_a_build : {false, true}) {
    SCOPED_TRACE(in_a_build ? "in a Nix build" : "outside a build");
    test::write_file(dir / "edited.so", test::read_file(dir / "libgreet.so"));
    if (in_a_build) ::setenv("NIX_BUILD_TOP", dir.c_str(), 1);
    int calls = 0;
    EditRequest request;
    // Too long to fit in place: every pass of the editor plans it (the one-write try, the appended segment).
    request.runpath = [&](const ElfInfo&) -> Expected<RunpathChange> {
      return RunpathChange::set("/answer/" + std::to_string(++calls) + std::string(300, 'x'));
    };
    EditOptions options;
    options.in_place = true;
    auto outcome = edit_elf_file(dir / "edited.so", request, options);
    ::unsetenv("NIX_BUILD_TOP");
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_EQ(calls, 1);
    auto info = read_elf_info(dir / "edited.so");
    ASSERT_TRUE(info && info->runpath);
    EXPECT_EQ(info->runpath->substr(0, 10), "/answer/1x");
  }
}

}  // namespace
}  // namespace runpatch
