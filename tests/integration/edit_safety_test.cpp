// Never lose a file: a crash between any two writes leaves the old or the new
// file; failures leave the original byte-identical; links and modes survive.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "editing/edit_testing.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::host;

namespace fs = std::filesystem;

// A program whose old runpath ($ORIGIN/lib) and new one both find libgreet.
fs::path stage(const std::string& name, const test::FixtureArch& arch) {
  fs::path dir = test::scratch_dir("safety/" + name);
  fs::create_directories(dir / "lib");
  fs::create_directories(dir / "moved");
  fs::copy_file(arch.dir / "lib/libgreet.so", dir / "lib/libgreet.so");
  fs::copy_file(arch.dir / "lib/libgreet.so", dir / "moved/libgreet.so");
  fs::copy_file(arch.dir / "prog-pie", dir / "prog-pie");
  return dir;
}

void crash_at_every_write(const test::FixtureArch& arch, const std::string& new_runpath_suffix) {
  fs::path dir = stage("crash-" + arch.name + std::to_string(new_runpath_suffix.size()), arch);
  fs::path file = dir / "prog-pie";
  std::string old_runpath = *read_elf_info(file)->runpath;
  std::string new_runpath = (dir / "moved").string() + new_runpath_suffix;
  EditRequest request;
  request.runpath = set_runpath_update(new_runpath);
  auto original = test::read_file(file);
  EditOptions dry;
  dry.dry_run = true;
  auto planned = edit_elf_file(file, request, dry);
  ASSERT_TRUE(planned) << planned.error().message();
  ASSERT_EQ(test::read_file(file), original) << "a dry run wrote to the file";
  size_t writes = planned->writes.size();
  ASSERT_GE(writes, 1u);

  for (size_t k = 0; k <= writes; ++k) {
    SCOPED_TRACE(arch.name + ": stopped after " + std::to_string(k) + " of " + std::to_string(writes) + " writes (" +
                 planned->layout_description + ")");
    test::write_file(file, original);
    EditOptions options;
    options.in_place = true;  // the phased writes are what a crash can interrupt
    EditTestHooks crash;
    crash.stop_after_writes = k;
    ASSERT_TRUE(edit_elf_file_for_testing(file, request, options, crash));
    auto info = read_elf_info(file);
    ASSERT_TRUE(info) << info.error().message();
    ASSERT_TRUE(info->runpath == old_runpath || info->runpath == new_runpath) << *info->runpath;
    auto now = test::read_file(file);
    if (info->runpath == old_runpath) {
      // The old file: only bytes nothing references may differ (past the old end or unused strings).
      for (const auto& w : planned->writes) {
        bool header = w.kind == WriteKind::DynamicSection || w.kind == WriteKind::ElfAndProgramHeaders ||
                      w.kind == WriteKind::ElfHeader;
        if (header) {
          EXPECT_TRUE(
              std::equal(original.begin() + w.offset, original.begin() + w.offset + w.size, now.begin() + w.offset))
              << "a header changed before the commit";
        }
      }
    }
    auto run = test::run_program(arch, file);
    EXPECT_EQ(run.output, "hello from lib\n");
  }
}

TEST(EditSafety, CrashBetweenAnyTwoWritesLeavesOldOrNewFile) {
  for (const auto& arch : test::runnable_arches()) {
    crash_at_every_write(arch, ":" + std::string(200, 'g'));  // appended segment
    crash_at_every_write(arch, "");                           // in place where it fits
  }
}

TEST(EditSafety, FailedEditLeavesFileByteIdentical) {
  fs::path dir = test::scratch_dir("safety/failures");
  std::vector<fs::path> bad = {host().dir / "prog-static"};
  auto truncated = test::read_file(host().dir / "prog-pie");
  truncated.resize(2000);
  test::write_file(dir / "truncated", truncated);
  test::write_file(dir / "script", {'#', '!', '/', 'b', 'i', 'n', '/', 's', 'h', '\n'});
  fs::copy_file(host().dir / "prog-static", dir / "static");
  for (const char* name : {"truncated", "script", "static"}) {
    fs::path file = dir / name;
    auto before = test::read_file(file);
    EditRequest request;
    request.runpath = set_runpath_update("/new/runpath");
    auto outcome = edit_elf_file(file, request);
    ASSERT_FALSE(outcome) << name;
    EXPECT_NE(outcome.error().message().find(file.string()), std::string::npos) << outcome.error().message();
    EXPECT_EQ(test::read_file(file), before) << name;
  }
  // A dynamic file without an interpreter cannot get one.
  EditRequest interp;
  interp.interpreter = "/lib/ld.so";
  fs::copy_file(host().dir / "lib/libgreet.so", dir / "libgreet.so");
  auto before = test::read_file(dir / "libgreet.so");
  auto outcome = edit_elf_file(dir / "libgreet.so", interp);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, ErrorCode::NothingToEdit) << outcome.error().message();
  EXPECT_NE(outcome.error().what.find("no interpreter"), std::string::npos);
  EXPECT_EQ(test::read_file(dir / "libgreet.so"), before);
}

TEST(EditSafety, HardLinksSymlinksAndModeArePreserved) {
  fs::path dir = stage("links", host());
  fs::path file = dir / "prog-pie";
  ::chmod(file.c_str(), 0751);
  fs::create_hard_link(file, dir / "hardlink");
  fs::create_symlink("prog-pie", dir / "symlink");
  struct stat before {};
  ::stat(file.c_str(), &before);
  EditRequest request;
  request.runpath = set_runpath_update((dir / "moved").string() + ":" + std::string(100, 'h'));
  ASSERT_TRUE(edit_elf_file(dir / "symlink", request));
  struct stat after {};
  ::stat(file.c_str(), &after);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mode & 07777, 0751u);
  EXPECT_EQ(after.st_nlink, 2u);
  EXPECT_TRUE(fs::is_symlink(dir / "symlink"));
  EXPECT_EQ(read_elf_info(dir / "hardlink")->runpath, (dir / "moved").string() + ":" + std::string(100, 'h'));
  EXPECT_EQ(test::run_program(host(), dir / "hardlink").output, "hello from lib\n");
}

TEST(EditSafety, OutputLeavesInputUntouched) {
  fs::path dir = stage("output", host());
  fs::path input = dir / "prog-pie";
  ::chmod(input.c_str(), 0750);
  auto before = test::read_file(input);
  EditRequest request;
  request.runpath = set_runpath_update((dir / "moved").string());
  EditOptions options;
  options.output = dir / "out/prog";
  fs::create_directories(dir / "out");
  ASSERT_TRUE(edit_elf_file(input, request, options));
  EXPECT_EQ(test::read_file(input), before);
  EXPECT_EQ(read_elf_info(dir / "out/prog")->runpath, (dir / "moved").string());
  EXPECT_EQ(fs::status(dir / "out/prog").permissions(), fs::status(input).permissions());
  EXPECT_EQ(test::run_program(host(), dir / "out/prog").output, "hello from lib\n");
  for (const auto& entry : fs::directory_iterator(dir / "out"))
    EXPECT_EQ(entry.path().filename(), "prog") << "a temporary file was left behind";
}

}  // namespace
}  // namespace runpatch
