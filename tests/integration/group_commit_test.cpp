// Group commit (include/runpatch/editing/commit_group.hpp): many files' edits
// share their barriers. Each file must still go through the states it goes
// through alone, so a crash at any point leaves every file of the group old
// or new, and the result is the bytes an edit alone gives.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "crash_states.hpp"
#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "synthetic_elf.hpp"
#include "runpatch/editing/commit_group.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::CrashState;

// Copies of the fixture library, each beside a program that loads it, written
// into the files as in a Nix build (the staged commit: the most steps).
class GroupCommit : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("NIX_BUILD_TOP"); }
  void SetUp() override {
    arch_ = test::fixture_arches().at(0);
    dir_ = test::scratch_dir("group-commit/" +
                             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    ::setenv("NIX_BUILD_TOP", dir_.c_str(), 1);
    original_ = test::read_file(arch_.dir / "lib/libgreet.so");
    new_runpath_ = "/run/opengl-driver/lib:" + std::string(300, 'x');  // too long for in place: appended
    request_.runpath = set_runpath_update(new_runpath_);
    fs::path alone = dir_ / "alone.so";
    test::write_file(alone, original_);
    EditOptions options;
    options.in_place = true;
    auto edited = edit_elf_file(alone, request_, options);
    ASSERT_TRUE(edited) << edited.error().message();
    ASSERT_EQ(edited->written_as, WrittenAs::IntoFileStaged);
    intended_ = test::read_file(alone);
    for (const auto& w : edited->writes)
      if (w.kind == WriteKind::SymbolValue) symbol_values_.push_back(w);
    fs::remove(alone);
  }

  // n trees, each a program and its library, the libraries as they were.
  std::vector<fs::path> fresh_libraries(size_t n) {
    std::vector<fs::path> libs;
    for (size_t i = 0; i < n; ++i) {
      fs::path tree = dir_ / ("t" + std::to_string(i));
      fs::create_directories(tree / "lib");
      if (!fs::exists(tree / "prog-pie")) fs::copy_file(arch_.dir / "prog-pie", tree / "prog-pie");
      libs.push_back(tree / "lib/libgreet.so");
      test::write_file(libs.back(), original_);
    }
    return libs;
  }

  // The file read back past the page cache, as a power cut leaves it.
  static Bytes read_as_on_disk(const fs::path& file) {
    int fd = ::open(file.c_str(), O_RDONLY);
    if (fd >= 0) {
      ::fsync(fd);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
    return test::read_file(file);
  }

  CrashState state_of(const fs::path& lib, const std::string& context) {
    Bytes now = read_as_on_disk(lib);
    CrashState state = test::classify(now, original_, intended_, symbol_values_);
    if (state == CrashState::Neither &&
        test::interim_reads_new(now, intended_, new_runpath_, (dir_ / "probe.so").string()))
      state = CrashState::NewInterim;
    EXPECT_NE(state, CrashState::Neither) << context << ": " << lib << " is neither the old nor the new file";
    return state;
  }

  void expect_runs(const fs::path& lib, const std::string& context) {
    EXPECT_EQ(test::run_program(arch_, lib.parent_path().parent_path() / "prog-pie").output, "hello from lib\n")
        << context << ": " << lib;
  }

  // Edits every library as one group; returns the group's barrier count.
  size_t edit_as_group(const std::vector<fs::path>& libs, CommitGroup::Barrier barrier,
                       std::optional<size_t> stop_after_steps = std::nullopt) {
    CommitGroup group(Durability::Sync, barrier);
    if (stop_after_steps) group.stop_after_steps_for_testing(*stop_after_steps);
    EditOptions options;
    options.in_place = true;
    options.durability = Durability::Sync;
    options.group = &group;
    for (const auto& lib : libs) {
      auto edited = edit_elf_file(lib, request_, options);
      EXPECT_TRUE(edited) << edited.error().message();
    }
    auto failures = group.commit();
    for (const auto& f : failures) ADD_FAILURE() << f.error.message();
    return group.barriers();
  }

  test::FixtureArch arch_;
  fs::path dir_;
  Bytes original_, intended_;
  std::string new_runpath_;
  EditRequest request_;
  std::vector<WrittenRange> symbol_values_;
};

// The bytes an edit alone gives, whichever barrier; as many barriers for 12
// files as for 3 (one per commit step: tail, interim header, front, switch, cut).
TEST_F(GroupCommit, GivesTheBytesOfEachEditAloneWithBarriersPerStepNotPerFile) {
  for (auto barrier : {CommitGroup::Barrier::FileSystem, CommitGroup::Barrier::EachFile}) {
    std::map<size_t, size_t> barriers_for;
    for (size_t files : {3u, 12u}) {
      auto libs = fresh_libraries(files);
      barriers_for[files] = edit_as_group(libs, barrier);
      for (const auto& lib : libs) EXPECT_EQ(test::read_file(lib), intended_) << lib;
      expect_runs(libs.back(), "after the group");
    }
    EXPECT_EQ(barriers_for[3], barriers_for[12]) << "barriers grew with the files";
    EXPECT_LE(barriers_for[12], 5u);
    EXPECT_GE(barriers_for[12], 4u) << "the staged commit's steps were not kept apart";
  }
}

// Every prefix of the group's steps, as a power cut after it leaves the files
// (the group stops as if killed; each file is synced and read past the page
// cache): every library old (maybe with an unreferenced tail) or new, every
// program runs — and some prefixes leave files of the group in different states.
TEST_F(GroupCommit, PowerCutAfterAnyPrefixOfTheGroupsStepsLeavesEveryFileOldOrNew) {
  constexpr size_t kFiles = 4;
  bool all_new = false, mixed = false;
  std::set<CrashState> seen;
  for (size_t k = 0; !all_new && k < 64; ++k) {
    std::string context = "stopped after " + std::to_string(k) + " steps";
    auto libs = fresh_libraries(kFiles);
    edit_as_group(libs, CommitGroup::Barrier::FileSystem, k);
    std::set<CrashState> states;
    for (const auto& lib : libs) {
      states.insert(state_of(lib, context));
      expect_runs(lib, context);
    }
    seen.insert(states.begin(), states.end());
    mixed = mixed || states.size() > 1;
    all_new = states == std::set<CrashState>{CrashState::New};
  }
  EXPECT_TRUE(all_new) << "the group never completed";
  EXPECT_TRUE(mixed) << "no prefix stopped between two files of a step";
  EXPECT_TRUE(seen.count(CrashState::OldWithUnreferencedTail));
  EXPECT_TRUE(seen.count(CrashState::NewInterim));
}

// The CLI edits its files as one group (`set` with several files, --sync):
// killed at 1000 moments, every library is old or new and loads.
TEST_F(GroupCommit, SigkillAtAThousandMomentsLeavesEveryFileOldOrNew) {
  constexpr size_t kFiles = 6;
  auto edit_command = [&](const std::vector<fs::path>& libs) {
    std::vector<std::string> args{"set", "--in-place", "--sync", "--runpath", new_runpath_};
    for (const auto& lib : libs) args.push_back(lib.string());
    return args;
  };
  // How long the whole group takes here (median of five), so kills spread over it.
  std::vector<long> durations;
  for (int i = 0; i < 5; ++i) {
    auto libs = fresh_libraries(kFiles);
    auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(test::wait_status(test::spawn_cli(edit_command(libs))), 0);
    durations.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
    for (const auto& lib : libs) ASSERT_EQ(test::read_file(lib), intended_) << lib;
  }
  std::sort(durations.begin(), durations.end());
  long window = std::max(durations[2], 1L);
  std::mt19937 random(20261127);
  int trials = test::trials_wanted(1000), killed = 0;
  std::map<CrashState, int> states;
  for (int t = 0; t < trials; ++t) {
    auto libs = fresh_libraries(kFiles);
    pid_t pid = test::spawn_cli(edit_command(libs));
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<long>(0, window)(random)));
    ::kill(pid, SIGKILL);
    killed += WIFSIGNALED(test::wait_status(pid));
    std::string context = "trial " + std::to_string(t);
    bool neither = false;
    for (const auto& lib : libs) {
      CrashState state = state_of(lib, context);
      ++states[state];
      neither = neither || state == CrashState::Neither;
      if (t % 100 == 0) expect_runs(lib, context);
    }
    if (neither) break;
    for (const auto& entry : fs::directory_iterator(libs.front().parent_path()))
      EXPECT_EQ(entry.path().filename(), "libgreet.so") << context << ": debris";
  }
  std::cout << trials << " kills of a group of " << kFiles << " (" << killed << " mid-run): " << states[CrashState::Old]
            << " old, " << states[CrashState::OldWithUnreferencedTail] << " old with an unreferenced tail, "
            << states[CrashState::NewInterim] << " new with the interim table, " << states[CrashState::New] << " new\n";
  EXPECT_GT(killed, trials / 5) << "the kills did not land during edits; the harness proves little";
}

// Edited copies (outside a Nix build, the default mode) wait for their
// rename, each taking disk space: past max_held_bytes the group commits and
// starts again; below it, one group.
TEST_F(GroupCommit, EditedCopiesWaitingForTheirRenameAreBoundedInBytes) {
  ::unsetenv("NIX_BUILD_TOP");
  auto libs = fresh_libraries(4);
  auto barriers_with = [&](uint64_t max_held_bytes) {
    for (const auto& lib : libs) test::write_file(lib, original_);
    CommitGroup group(Durability::Sync, CommitGroup::Barrier::FileSystem, max_held_bytes);
    EditOptions options;
    options.durability = Durability::Sync;
    options.group = &group;
    for (const auto& lib : libs) {
      auto edited = edit_elf_file(lib, request_, options);
      EXPECT_TRUE(edited && edited->written_as == WrittenAs::Copy) << lib;
    }
    EXPECT_TRUE(group.commit().empty());
    for (const auto& lib : libs) expect_runs(lib, "edited on a copy");
    return group.barriers();
  };
  size_t one_group = barriers_with(CommitGroup::kDefaultMaxHeldBytes);
  EXPECT_EQ(one_group, 2u) << "the copies, then the renames";
  EXPECT_EQ(barriers_with(original_.size()), 4 * one_group) << "each copy its own group";
}

// One file under two names in one group: the second edit waits for the
// first's lock, which the group holds until it commits; the group commits
// first instead of waiting for itself.
// A failure at the group's commit comes back under the ticket the edit was
// given (the caller's index), whatever name the group knows the file by.
TEST_F(GroupCommit, ACommitFailureComesBackUnderItsEditsTicket) {
  auto libs = fresh_libraries(3);
  CommitGroup group(Durability::Sync);
  EditOptions options;
  options.atomic_copy = true;  // copies: their renames wait for the commit
  options.durability = Durability::Sync;
  options.group = &group;
  for (size_t i = 0; i < libs.size(); ++i) {
    options.group_ticket = 10 + i;
    auto edited = edit_elf_file(libs[i], request_, options);
    ASSERT_TRUE(edited) << edited.error().message();
    ASSERT_EQ(edited->written_as, WrittenAs::Copy);
  }
  fs::remove_all(libs[1].parent_path());  // the second copy's rename has nowhere to go
  auto failures = group.commit();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].ticket, 11u) << failures[0].error.message();
  EXPECT_NE(failures[0].error.message().find("t1"), std::string::npos) << failures[0].error.message();
  expect_runs(libs[0], "committed");
  expect_runs(libs[2], "committed");
}

TEST_F(GroupCommit, TheSameFileUnderTwoNamesDoesNotWaitForItself) {
  auto libs = fresh_libraries(1);
  fs::path hard_link = dir_ / "t0/lib/libgreet-link.so";
  fs::remove(hard_link);
  fs::create_hard_link(libs[0], hard_link);
  pid_t pid = test::spawn_cli({"set", "--sync", "--add-runpath", "/opt/added", libs[0].string(), hard_link.string()});
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      test::wait_status(pid);
      FAIL() << "the group waited for its own lock";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto info = read_elf_info(libs[0]);
  ASSERT_TRUE(info && info->runpath) << "no runpath";
  EXPECT_EQ(info->runpath->find("/opt/added"), info->runpath->rfind("/opt/added")) << *info->runpath;
  EXPECT_EQ(fs::hard_link_count(libs[0]), 2u);
  expect_runs(libs[0], "edited through two names");
}

}  // namespace
}  // namespace runpatch
