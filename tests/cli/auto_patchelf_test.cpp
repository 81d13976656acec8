// auto-patchelf: each documented behaviour with the runpath it must produce
// written out, and every patched executable run.
#include <gtest/gtest.h>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/autopatchelf/auto_patchelf.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

const char* kInterp = "/lib64/ld-linux-x86-64.so.2";

class AutoPatchelf : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = test::fixture_arches().at(0);
    for (const auto& a : test::fixture_arches())
      if (a.name == "aarch64") foreign_ = a;
    root_ = fs::absolute(test::scratch_dir(std::string("auto_patchelf/") +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }
  fs::path put(const fs::path& from, const std::string& to) {
    fs::create_directories((root_ / to).parent_path());
    fs::copy_file(from, root_ / to, fs::copy_options::overwrite_existing);
    return root_ / to;
  }
  // A program without runpath (it needs libgreet.so and libc.so.6).
  fs::path program(const std::string& to) { return put(host_.dir / "prog-norunpath", to); }
  AutoPatchelfOptions options(std::vector<std::string> paths) {
    AutoPatchelfOptions o;
    for (auto& p : paths) o.paths.push_back(root_ / p);
    o.interpreter = kInterp;
    o.libc_dir = "/lib/x86_64-linux-gnu";
    return o;
  }
  std::string runpath(const std::string& file) { return effective_runpath(*read_elf_info(root_ / file)); }
  std::string r(const std::string& rel) { return (root_ / rel).string(); }
  void expect_runs(const std::string& file) {
    EXPECT_EQ(test::run_program(host_, root_ / file).output, "hello from lib\n") << file;
  }

  test::FixtureArch host_;
  std::optional<test::FixtureArch> foreign_;
  fs::path root_;
};

TEST_F(AutoPatchelf, SplitOutputsFindEachOther) {
  program("out/bin/prog");
  put(host_.dir / "lib/libgreet.so", "lib/lib/libgreet.so");
  auto result = auto_patchelf(options({"out", "lib"}));
  EXPECT_FALSE(result.failed());
  EXPECT_EQ(runpath("out/bin/prog"), r("lib/lib"));  // libc's directory is not added
  expect_runs("out/bin/prog");
}

TEST_F(AutoPatchelf, WrongMachineCandidatesAreSkipped) {
  if (!foreign_) GTEST_SKIP() << "no aarch64 fixtures";
  program("out/bin/prog");
  put(foreign_->dir / "lib/libgreet.so", "decoy/libgreet.so");
  put(host_.dir / "lib/libgreet.so", "deps/libgreet.so");
  auto o = options({"out"});
  o.libs = {root_ / "decoy", root_ / "deps"};
  put(foreign_->dir / "prog-pie", "out/bin/foreign");
  auto result = auto_patchelf(o);
  EXPECT_FALSE(result.failed());
  EXPECT_EQ(runpath("out/bin/prog"), r("deps"));
  expect_runs("out/bin/prog");
  bool skipped = false;
  for (const auto& f : result.files)
    skipped = skipped || f.skip_reason == "skipping " + r("out/bin/foreign") +
                                              " because its architecture (AArch64) differs from target (x64)";
  EXPECT_TRUE(skipped);
}

TEST_F(AutoPatchelf, MissingDependenciesFailUnlessIgnored) {
  program("out/bin/prog");
  auto result = auto_patchelf(options({"out"}));
  ASSERT_EQ(result.missing.size(), 1u);
  EXPECT_EQ(result.missing[0].name, "libgreet.so");
  EXPECT_EQ(result.missing[0].wanted_by, r("out/bin/prog"));
  EXPECT_TRUE(result.failed());
  auto o = options({"out"});
  o.ignore_missing = {"libgr*"};
  EXPECT_FALSE(auto_patchelf(o).failed());
}

TEST_F(AutoPatchelf, ExecutablesGetInterpreterAndRuntimeDependenciesFirst) {
  program("out/bin/prog");
  fs::path lib = put(host_.dir / "lib/libgreet.so", "out/lib/libgreet.so");
  put(host_.dir / "lib/libgreet.so", "rt/libgreet.so");
  fs::path interp = put(fs::canonical(kInterp), "interp/a-longer-directory-name-for-the-loader/ld.so");
  auto o = options({"out"});
  o.interpreter = interp.string();
  o.runtime_dependencies = {r("rt")};
  o.append_rpaths = {"/opt/appended"};
  EXPECT_FALSE(auto_patchelf(o).failed());
  EXPECT_EQ(read_elf_info(root_ / "out/bin/prog")->interpreter, interp.string());
  EXPECT_EQ(runpath("out/bin/prog"), r("rt") + ":" + r("out/lib") + ":/opt/appended");
  EXPECT_EQ(runpath("out/lib/libgreet.so"), "/opt/appended");  // libraries get no runtime dependencies
  expect_runs("out/bin/prog");
}

TEST_F(AutoPatchelf, KeepLibcOriginAndSymlinks) {
  program("out/bin/prog");
  put(host_.dir / "lib/libgreet.so", "out/bin/libgreet.so");
  auto o = options({"out"});
  o.origin = true;
  o.keep_libc = true;
  EXPECT_FALSE(auto_patchelf(o).failed());
  // --keep-libc records libc's directory only where the index has libc (it does not here).
  EXPECT_EQ(runpath("out/bin/prog"), "$ORIGIN");
  expect_runs("out/bin/prog");
  // A library reached through a symlink of the same name counts in its target's directory.
  program("two/bin/prog");
  put(host_.dir / "lib/libgreet.so", "two/real/libgreet.so");
  fs::create_directories(root_ / "two/lib");
  fs::create_symlink("../real/libgreet.so", root_ / "two/lib/libgreet.so");
  EXPECT_FALSE(auto_patchelf(options({"two"})).failed());
  EXPECT_EQ(runpath("two/bin/prog"), r("two/real"));
  expect_runs("two/bin/prog");
}

TEST_F(AutoPatchelf, ExistingRunpathsOfIndexedLibrariesAreFollowed) {
  program("out/bin/prog");
  put(host_.dir / "lib/libgreet.so", "elsewhere/libgreet.so");
  fs::path mid = put(host_.dir / "librunpath.so", "libs/librunpath.so");
  EditRequest set;
  set.runpath = set_runpath_update(r("elsewhere"));
  ASSERT_TRUE(edit_elf_file(mid, set));
  auto o = options({"out"});
  o.libs = {root_ / "libs"};
  EXPECT_FALSE(auto_patchelf(o).failed());
  EXPECT_EQ(runpath("out/bin/prog"), r("elsewhere"));
  // --ignore-existing stops indexing the outputs (not following runpaths).
  program("out/bin/prog");
  o.ignore_existing = true;
  EXPECT_FALSE(auto_patchelf(o).failed());
  o.libs.clear();
  put(host_.dir / "lib/libgreet.so", "out/lib/libgreet.so");
  EXPECT_TRUE(auto_patchelf(o).failed());
}

TEST_F(AutoPatchelf, PolicyLayersAndExtraArgsInTheSameWrite) {
  program("out/bin/prog");
  put(host_.dir / "lib/libgreet.so", "out/lib/libgreet.so");
  auto o = options({"out"});
  o.layers.driver = true;
  o.extra.add_needed = {"libm.so.6"};
  EXPECT_FALSE(auto_patchelf(o).failed());
  EXPECT_EQ(runpath("out/bin/prog"), std::string(kDefaultDriverDir) + ":" + r("out/lib"));
  EXPECT_EQ(read_elf_info(root_ / "out/bin/prog")->needed.front(), "libm.so.6");
  expect_runs("out/bin/prog");
}

TEST_F(AutoPatchelf, CommandLineAndMessagesMatchThePythonTool) {
  program("out/bin/prog");
  put(host_.dir / "prog-static", "out/bin/static");
  auto cli = fs::path(RUNPATCH_CLI).parent_path() / "auto-patchelf";
  auto run = test::run_command(
      {cli.string(), "--paths", r("out"), "--interpreter", kInterp, "--ignore-missing", "libc.so.6", "libgreet.so"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("searching for dependencies of " + r("out/bin/prog") + "\n    libgreet.so -> not found!\n"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("skipping " + r("out/bin/static") + " because it is statically linked"), std::string::npos);
  // Without $NIX_BINTOOLS, libc.so.6 comes from beside the interpreter (here
  // the file /lib64/ld-linux-x86-64.so.2 links to): only libgreet.so is missing.
  EXPECT_EQ(run.output.find("libc.so.6 -> not found!"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("auto-patchelf: 1 dependencies could not be satisfied\n"
                            "warn: auto-patchelf ignoring missing libgreet.so wanted by " +
                            r("out/bin/prog")),
            std::string::npos)
      << run.output;
  auto bare = test::run_command({cli.string(), "--paths", r("out"), "--ignore-missing", "--interpreter", kInterp});
  EXPECT_EQ(bare.exit_code, 1) << "a bare --ignore-missing ignores nothing\n" << bare.output;
  auto failing = test::run_command(
      {cli.string(), "--paths", r("out"), "--interpreter", kInterp, "--extra-args", "--add-needed", "libz.so.1"});
  EXPECT_EQ(failing.exit_code, 1);
  EXPECT_NE(failing.output.find("error: auto-patchelf could not satisfy dependency libgreet.so wanted by"),
            std::string::npos);
  EXPECT_EQ(read_elf_info(root_ / "out/bin/prog")->needed.front(), "libz.so.1") << "--extra-args applied";
}

TEST_F(AutoPatchelf, CudaToolkitCopy) {
  fs::path cuda = "/usr/local/cuda-13.0/lib";
  std::vector<std::string> names = {"libcudart.so.13", "libnvJitLink.so.13", "libcusparse.so.12"};
  for (const auto& n : names)
    if (!fs::exists(cuda / n)) GTEST_SKIP() << cuda / n << " is absent";
  for (const char* tool : {"bin2c", "fatbinary"})
    if (fs::exists(cuda.parent_path() / "bin" / tool)) names.push_back(std::string("../bin/") + tool);
  for (const auto& n : names) {
    fs::path copy = put(fs::canonical(cuda / n), "cuda/lib/" + n);
    EditRequest strip;
    strip.runpath = remove_runpath_update();
    ASSERT_TRUE(edit_elf_file(copy, strip));
  }
  auto o = options({"cuda"});
  o.layers.driver = true;
  auto result = auto_patchelf(o);
  EXPECT_FALSE(result.failed()) << (result.missing.empty() ? "" : result.missing[0].name);
  // libcusparse needs libnvJitLink: found in the package; libcudart dlopens libcuda (optional
  // at build time) and keeps the driver directory for it.
  EXPECT_EQ(runpath("cuda/lib/libcusparse.so.12"), std::string(kDefaultDriverDir) + ":" + r("cuda/lib"));
  EXPECT_EQ(runpath("cuda/lib/libcudart.so.13"), kDefaultDriverDir);
  // The toolkit's programs were patched too, and still run.
  for (const char* tool : {"bin2c", "fatbinary"}) {
    if (!fs::exists(root_ / "cuda/bin" / tool)) continue;
    EXPECT_EQ(read_elf_info(root_ / "cuda/bin" / tool)->interpreter, kInterp);
    auto run = test::run_command({(root_ / "cuda/bin" / tool).string(), "--version"}, true);
    EXPECT_EQ(run.exit_code, 0) << tool << ": " << run.output;
  }
}

TEST_F(AutoPatchelf, NoRecurseAndForeignOsAbi) {
  program("out/bin/prog");
  put(host_.dir / "lib/libgreet.so", "out/lib/libgreet.so");
  auto o = options({"out/bin"});
  o.recurse = false;
  o.libs = {root_ / "out"};  // --libs are never searched recursively: libgreet stays unfound
  auto result = auto_patchelf(o);
  ASSERT_EQ(result.missing.size(), 1u);
  EXPECT_EQ(result.missing[0].name, "libgreet.so");
  // A FreeBSD-ABI file is not patched for a GNU/Linux interpreter.
  auto bytes = test::read_file(root_ / "out/bin/prog");
  bytes[7] = 9;  // EI_OSABI = FreeBSD
  test::write_file(root_ / "bsd/prog", bytes);
  result = auto_patchelf(options({"bsd"}));
  ASSERT_EQ(result.files.size(), 1u);
  EXPECT_EQ(result.files[0].skip_reason,
            "skipping " + r("bsd/prog") +
                " because its OS ABI (ELFOSABI_FREEBSD) is not compatible with target (ELFOSABI_LINUX)");
}

TEST_F(AutoPatchelf, DlopenNotesAreResolvedWhateverTheirPriority) {
  put(host_.dir / "libplugin-host.so", "out/lib/libplugin-host.so");
  EditRequest strip;
  strip.runpath = remove_runpath_update();
  ASSERT_TRUE(edit_elf_file(root_ / "out/lib/libplugin-host.so", strip));
  // auto-patchelf.py does not look at priorities: a "recommended" library must be found too.
  auto result = auto_patchelf(options({"out"}));
  EXPECT_TRUE(result.failed());
  put(host_.dir / "lib/libgreet.so", "plugins/libgreet.so");
  auto o = options({"out"});
  o.libs = {root_ / "plugins"};
  EXPECT_FALSE(auto_patchelf(o).failed());
  EXPECT_EQ(runpath("out/lib/libplugin-host.so"), r("plugins"));
}

}  // namespace
}  // namespace runpatch
