// Crash safety of the real CLI: SIGKILL at random moments, a full disk,
// concurrent editors and running programs. After each, the file must be
// byte-identical to the original or to the intended result, and run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <chrono>
#include <cstring>
#include <iostream>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "editing/edit_testing.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "crash_states.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::host;

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using test::classify;
using test::CrashState;
using test::spawn_cli;
using test::trials_wanted;
using test::wait_status;

// How long one edit of a fresh copy takes here (median of five: a cold first
// run would stretch the window past the edit), so that kills spread over all
// of it; 0 when an edit fails or does not give the intended bytes.
long median_edit_micros(const fs::path& file, const Bytes& original, const std::string& runpath,
                        const Bytes& intended) {
  std::vector<long> durations;
  for (int i = 0; i < 5; ++i) {
    test::write_file(file, original);
    auto start = std::chrono::steady_clock::now();
    if (wait_status(spawn_cli({"set", "--runpath", runpath, file.string()})) != 0) return 0;
    durations.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
    if (test::read_file(file) != intended) return 0;
  }
  std::sort(durations.begin(), durations.end());
  return std::max(durations[2], 1L);
}

// Temporary copies a killed editor may leave next to the file; never the file itself.
size_t remove_leftovers(const fs::path& dir) {
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(".runpatch-") != std::string::npos) n += fs::remove(entry.path());
  return n;
}

class CrashSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    arch_ = host();
    dir_ =
        test::scratch_dir("crash-kill/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_ / "lib");
    fs::copy_file(arch_.dir / "lib/libgreet.so", dir_ / "lib/libgreet.so");
    file_ = dir_ / "prog";
    // Padding after the last byte any header names keeps the program valid and
    // makes the copy long enough for kills to land in every phase of an edit.
    original_ = test::read_file(arch_.dir / "prog-pie");
    original_.resize(original_.size() + 8 * 1024 * 1024, 0);
    test::write_file(file_, original_);
    fs::permissions(file_, fs::perms::owner_all);
    new_runpath_ = (dir_ / "lib").string() + ":" + std::string(300, 'x');  // too long for in place: appended segment
    fs::path scratch = dir_ / "intended";
    test::write_file(scratch, original_);
    fs::permissions(scratch, fs::perms::owner_all);
    auto r = test::run_command({RUNPATCH_CLI, "set", "--runpath", new_runpath_, scratch.string()}, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    intended_ = test::read_file(scratch);
    ASSERT_NE(intended_, original_);
  }

  void expect_old_or_new_and_runs(const std::string& context) {
    auto now = test::read_file(file_);
    bool old_file = now == original_, new_file = now == intended_;
    ASSERT_TRUE(old_file || new_file) << context << ": the file is neither the original nor the intended result";
    auto run = test::run_program(arch_, file_);
    EXPECT_EQ(run.output, "hello from lib\n") << context;
  }

  // The edited copy is unnamed (O_TMPFILE) while it is built, so a killed
  // editor leaves nothing. Only between linking it beside the file and the
  // rename (microseconds: Linux cannot link over a name) can a kill leave it
  // named; it is then the complete new file. The next edit never removes a
  // file it did not create, so it stays, and that edit takes another name.
  void expect_no_debris(const std::string& context, int& window_debris) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.insert(entry.path().filename().string());
    names.erase("lib"), names.erase("intended"), names.erase("prog");
    if (names.empty()) return;
    ASSERT_EQ(names, std::set<std::string>{"prog.runpatch-new"}) << context << ": the kill left debris";
    ASSERT_EQ(test::read_file(dir_ / "prog.runpatch-new"), intended_) << context << ": a named copy is incomplete";
    ++window_debris;
    ASSERT_EQ(test::read_file(file_), original_) << context << ": renamed, yet the copy still has its name";
    auto next = test::run_command({RUNPATCH_CLI, "set", "--runpath", new_runpath_, file_.string()}, true);
    ASSERT_EQ(next.exit_code, 0) << next.output;
    ASSERT_EQ(test::read_file(file_), intended_) << context << ": the next edit did not edit";
    ASSERT_EQ(test::read_file(dir_ / "prog.runpatch-new"), intended_) << context << ": the next edit touched the name";
    fs::remove(dir_ / "prog.runpatch-new");
    test::write_file(file_, original_);
  }

  test::FixtureArch arch_;
  fs::path dir_, file_;
  Bytes original_, intended_;
  std::string new_runpath_;
};

TEST_F(CrashSafety, SigkillAtRandomMomentsLeavesOldOrNewFile) {
  long window = median_edit_micros(file_, original_, new_runpath_, intended_);
  ASSERT_GT(window, 0);

  std::mt19937 random(20261122);
  int trials = trials_wanted(200);
  int killed = 0, finished = 0, old_seen = 0, killed_in_batch = 0, window_debris = 0;
  for (int t = 0; t < trials; ++t) {
    // A loaded machine (sanitizers, parallel tests) stretches sleeps and
    // start-up unevenly: keep about half the kills landing mid-run.
    if (t > 0 && t % 20 == 0) {
      if (killed_in_batch < 8) window = std::max(window * 3 / 4, 1L);
      if (killed_in_batch > 12) window = window * 5 / 4 + 1;
      killed_in_batch = 0;
    }
    test::write_file(file_, original_);
    pid_t pid = spawn_cli({"set", "--runpath", new_runpath_, file_.string()});
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<long>(0, window)(random)));
    ::kill(pid, SIGKILL);
    int status = wait_status(pid);
    (WIFSIGNALED(status) ? killed : finished)++;
    killed_in_batch += WIFSIGNALED(status);
    expect_no_debris("trial " + std::to_string(t), window_debris);
    auto now = test::read_file(file_);
    old_seen += now == original_;
    // Running every file costs a process; every 10th run and every surprise is enough.
    if (t % 10 == 0 || (now != original_ && now != intended_))
      expect_old_or_new_and_runs("trial " + std::to_string(t));
    else
      ASSERT_TRUE(now == original_ || now == intended_) << "trial " << t;
  }
  RecordProperty("killed", killed);
  std::cout << trials << " trials: " << killed << " killed mid-run (" << old_seen << " left the original), " << finished
            << " finished first; " << window_debris << " killed between naming the copy and renaming it\n";
  EXPECT_GT(killed, trials / 5) << "the kills did not land during edits; the harness proves little";
}

TEST_F(CrashSafety, FullDiskGivesOneErrorAndLeavesTheOriginal) {
  // An unprivileged full disk: the file-size limit stops the copy (or its growth) part-way.
  for (rlim_t limit : {rlim_t(4096), rlim_t(original_.size() / 2), rlim_t(original_.size())}) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    test::write_file(file_, original_);
    int status = wait_status(spawn_cli({"set", "--runpath", new_runpath_, file_.string()}, limit));
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1);
    EXPECT_EQ(remove_leftovers(dir_), 0u) << "a failed edit left its temporary copy";
    expect_old_or_new_and_runs("limit");
    EXPECT_EQ(test::read_file(file_), original_);
  }
  // A real full filesystem, where this process may mount one (root, outside most containers).
  fs::path mnt = dir_ / "tmpfs";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, ("size=" + std::to_string(original_.size() + 64 * 1024)).c_str()) !=
      0) {
    std::cout << "no tmpfs (mount: " << std::strerror(errno) << "); the file-size limit stood in for a full disk\n";
    return;
  }
  fs::path small = mnt / "prog";
  test::write_file(small, original_);
  fs::permissions(small, fs::perms::owner_all);
  auto r = test::run_command({RUNPATCH_CLI, "set", "--runpath", new_runpath_, small.string()}, true);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(small.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No space left"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_file(small), original_);
  EXPECT_EQ(remove_leftovers(mnt), 0u);
  ::umount(mnt.c_str());
}

TEST_F(CrashSafety, ConcurrentEditorsSerializeAndLoseNoUpdate) {
  // Two processes each append their own entry, many times over: the lock
  // orders them, and the later one must edit what the earlier one renamed into place.
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    test::write_file(file_, original_);
    pid_t a = spawn_cli({"set", "--add-runpath", "/concurrent/a", file_.string()});
    pid_t b = spawn_cli({"set", "--add-runpath", "/concurrent/b", file_.string()});
    ASSERT_EQ(wait_status(a), 0);
    ASSERT_EQ(wait_status(b), 0);
    auto info = read_elf_info(file_);
    ASSERT_TRUE(info) << info.error().message();
    ASSERT_TRUE(info->runpath);
    EXPECT_NE(info->runpath->find("/concurrent/a"), std::string::npos) << *info->runpath;
    EXPECT_NE(info->runpath->find("/concurrent/b"), std::string::npos) << *info->runpath;
    EXPECT_EQ(test::run_program(arch_, file_).output, "hello from lib\n");
  }
}

// An edit asks the kernel for a write lease to learn whether anything has
// the file open; a process that opens the file meanwhile makes the kernel
// signal the editor — by default with SIGIO, which killed one edit in ten
// of a file another process kept opening (a reader of a build's outputs).
TEST(LeaseBreak, AProcessOpeningTheFileDuringEditsKillsNoEdit) {
  auto arch = host();
  fs::path dir = test::scratch_dir("crash-kill/lease-break");
  fs::path file = dir / "prog";
  fs::create_directories(dir / "lib");
  fs::copy_file(arch.dir / "lib/libgreet.so", dir / "lib/libgreet.so", fs::copy_options::overwrite_existing);
  fs::copy_file(arch.dir / "prog-longrunpath", file, fs::copy_options::overwrite_existing);
  fs::permissions(file, fs::perms::owner_all);
  auto runpath_of = [](int edit) { return "$ORIGIN/lib:/edit/" + std::string(size_t(edit % 40), 'r'); };
  pid_t reader = ::fork();
  if (reader == 0)
    for (;;) {  // opens and closes only (async-signal-safe after fork)
      int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
  ASSERT_GT(reader, 0);
  int signalled = 0, failed = 0;
  const int edits = 300;
  for (int i = 0; i < edits; ++i) {
    int status = wait_status(spawn_cli({"set", "-q", "--runpath", runpath_of(i), file.string()}));
    signalled += WIFSIGNALED(status);
    failed += WIFEXITED(status) && WEXITSTATUS(status) != 0;
  }
  ::kill(reader, SIGKILL);
  wait_status(reader);
  EXPECT_EQ(signalled, 0) << "edits killed by a signal, of " << edits;
  EXPECT_EQ(failed, 0) << "edits failed, of " << edits;
  EXPECT_EQ(*read_elf_info(file)->runpath, runpath_of(edits - 1));
  EXPECT_EQ(test::run_program(arch, file).output, "hello from lib\n");
}

TEST_F(CrashSafety, RunningProgramIsEditedAtomicallyOrRefusedCleanly) {
  // A program that keeps running while it is edited: its text is busy.
  fs::path src = dir_ / "sleeper.c";
  std::string code = "#include <unistd.h>\nint main(void) { sleep(5); return 0; }\n";
  test::write_file(src, Bytes(code.begin(), code.end()));
  fs::path prog = dir_ / "sleeper";
  auto cc = test::run_command({"cc", "-o", prog.string(), src.string()}, true);
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  pid_t running = ::fork();
  if (running == 0) {
    ::execl(prog.c_str(), prog.c_str(), nullptr);
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Default: the edited copy replaces the name; the running process keeps its old inode.
  auto atomic = test::run_command({RUNPATCH_CLI, "set", "--runpath", "/opt/new", prog.string()}, true);
  EXPECT_EQ(atomic.exit_code, 0) << atomic.output;
  EXPECT_EQ(*read_elf_info(prog)->runpath, "/opt/new");
  // --in-place must write the busy file itself: the kernel refuses, and runpatch says so.
  ::kill(running, SIGKILL);
  wait_status(running);
  running = ::fork();
  if (running == 0) {
    ::execl(prog.c_str(), prog.c_str(), nullptr);
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto edited = test::read_file(prog);
  auto in_place =
      test::run_command({RUNPATCH_CLI, "set", "--in-place", "--runpath", "/opt/other", prog.string()}, true);
  EXPECT_EQ(in_place.exit_code, 1) << in_place.output;
  EXPECT_NE(in_place.output.find("text file busy"), std::string::npos) << in_place.output;
  EXPECT_EQ(test::read_file(prog), edited);
  ::kill(running, SIGKILL);
  wait_status(running);
}

// ---- A library: the default edit appends, then one write of the ELF header commits ----

// Written into the file as in a Nix build (NIX_BUILD_TOP set: the staged
// commit, with the dynamic tables free to move out of the table's way).
class LibraryCrashSafety : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("NIX_BUILD_TOP"); }
  void SetUp() override {
    arch_ = host();
    dir_ = test::scratch_dir("crash-kill-library/" +
                             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_ / "lib");
    fs::copy_file(arch_.dir / "prog-pie", dir_ / "prog-pie");
    lib_ = dir_ / "lib/libgreet.so";
    ::setenv("NIX_BUILD_TOP", dir_.c_str(), 1);
    original_ = test::read_file(arch_.dir / "lib/libgreet.so");
    new_runpath_ = "/run/opengl-driver/lib:" + std::string(300, 'x');  // too long for in place: appended
    fs::path scratch = dir_ / "intended.so";
    test::write_file(scratch, original_);
    auto r = test::run_command({RUNPATCH_CLI, "set", "--in-place", "--runpath", new_runpath_, scratch.string()}, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_NE(r.output.find("(staged commit)"), std::string::npos) << "not the staged commit: " << r.output;
    intended_ = test::read_file(scratch);
    fs::remove(scratch);
    EditRequest request;
    request.runpath = set_runpath_update(new_runpath_);
    EditOptions dry;
    dry.dry_run = true;
    test::write_file(lib_, original_);
    auto planned = edit_elf_file(lib_, request, dry);
    ASSERT_TRUE(planned) << planned.error().message();
    planned_writes_ = planned->writes.size();
    for (const auto& w : planned->writes)
      if (w.kind == WriteKind::SymbolValue) symbol_values_.push_back(w);
  }

  // The library loads (the program prints through it) and reads as old or new.
  CrashState expect_old_or_new(const std::string& context, bool run) {
    auto now = test::read_file(lib_);
    CrashState state = classify(now, original_, intended_, symbol_values_);
    if (state == CrashState::Neither &&
        test::interim_reads_new(now, intended_, new_runpath_, (dir_ / "probe.so").string()))
      state = CrashState::NewInterim;
    EXPECT_NE(state, CrashState::Neither) << context << ": the library is neither the old nor the new file";
    if (run) {
      EXPECT_EQ(test::run_program(arch_, dir_ / "prog-pie").output, "hello from lib\n") << context;
    }
    return state;
  }

  // The edit stopped after k writes, synced, its pages dropped: what a power
  // cut after them leaves on the disk.
  void power_cut_after(const EditRequest& request, size_t k, const std::string& context) {
    EditOptions options;
    options.in_place = true;
    options.durability = Durability::Sync;  // the barriers are what a power cut tests
    EditTestHooks crash;
    crash.stop_after_writes = k;
    ASSERT_TRUE(edit_elf_file_for_testing(lib_, request, options, crash)) << context;
    int fd = ::open(lib_.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::fsync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }

  void expect_no_debris(const std::string& context) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_ / "lib")) names.insert(entry.path().filename().string());
    EXPECT_EQ(names, std::set<std::string>{"libgreet.so"}) << context << ": the edit left files beside the library";
  }

  test::FixtureArch arch_;
  fs::path dir_, lib_;
  Bytes original_, intended_;
  std::string new_runpath_;
  size_t planned_writes_ = 0;
  std::vector<WrittenRange> symbol_values_;
};

// Replays every prefix of the write sequence as a power cut would leave it:
// the editor stops after k writes, the file is synced and read back past the
// page cache (O_DIRECT where the file system has it).
TEST_F(LibraryCrashSafety, PowerCutAfterAnyPrefixOfTheWritesLeavesOldOrNew) {
  EditRequest request;
  request.runpath = set_runpath_update(new_runpath_);
  // The staged commit adds writes to the plan's: go on until the edit completes.
  size_t writes = planned_writes_ + 4;
  ASSERT_GE(writes, 2u) << "a tail and a commit";
  std::set<CrashState> seen;
  for (size_t k = 0; k <= writes && !seen.count(CrashState::New); ++k) {
    std::string context = "stopped after " + std::to_string(k) + " writes";
    test::write_file(lib_, original_);
    ASSERT_NO_FATAL_FAILURE(power_cut_after(request, k, context));
    seen.insert(expect_old_or_new(context, true));
    expect_no_debris(context);
  }
  EXPECT_TRUE(seen.count(CrashState::OldWithUnreferencedTail)) << "no prefix stopped between tail and commit";
  EXPECT_TRUE(seen.count(CrashState::NewInterim)) << "no prefix stopped between the staged commit's header writes";
  EXPECT_TRUE(seen.count(CrashState::New));
}

TEST_F(LibraryCrashSafety, SigkillAtAThousandMomentsLeavesOldOrNew) {
  long window = median_edit_micros(lib_, original_, new_runpath_, intended_);
  ASSERT_GT(window, 0);
  std::mt19937 random(20261123);
  int trials = trials_wanted(1000);
  std::map<CrashState, int> states;
  int killed = 0;
  for (int t = 0; t < trials; ++t) {
    test::write_file(lib_, original_);
    // No syncs (the default in a Nix build, named here): the write order alone must survive a kill.
    pid_t pid = spawn_cli({"set", "--in-place", "--no-sync", "--runpath", new_runpath_, lib_.string()});
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<long>(0, window)(random)));
    ::kill(pid, SIGKILL);
    killed += WIFSIGNALED(wait_status(pid));
    std::string context = "trial " + std::to_string(t);
    auto state = expect_old_or_new(context, t % 50 == 0);
    ++states[state];
    if (state == CrashState::Neither) break;
    expect_no_debris(context);
  }
  std::cout << trials << " kills (" << killed << " mid-run): " << states[CrashState::Old] << " old, "
            << states[CrashState::OldWithUnreferencedTail] << " old with an unreferenced tail, "
            << states[CrashState::NewBeforeSymbolValues] << " new before its symbol values, "
            << states[CrashState::NewInterim] << " new with the interim table, " << states[CrashState::New] << " new\n";
  EXPECT_GT(killed, trials / 5) << "the kills did not land during edits; the harness proves little";
}

// After an edit killed between its tail and its commit, the next edit
// recognizes that tail (unreferenced, starting with a copy of the dynamic
// strings), writes over it and cuts the rest: the result is byte for byte
// what an uninterrupted edit gives. Trailing bytes of any other kind stay.
TEST_F(LibraryCrashSafety, TheEditAfterAnInterruptedOneSucceeds) {
  EditRequest request;
  request.runpath = set_runpath_update(new_runpath_);
  test::write_file(lib_, original_);
  EditOptions interrupted;
  interrupted.in_place = true;
  EditTestHooks crash;
  crash.stop_after_writes = 1;
  ASSERT_TRUE(edit_elf_file_for_testing(lib_, request, interrupted, crash));
  ASSERT_EQ(expect_old_or_new("interrupted", true), CrashState::OldWithUnreferencedTail);
  EXPECT_EQ(read_elf_info(lib_)->interrupted_edit_tail, original_.size());
  auto report = test::run_command({RUNPATCH_CLI, "check", lib_.string()}, true);
  EXPECT_NE(report.output.find("interrupted-edit"), std::string::npos) << report.output;
  ASSERT_TRUE(edit_elf_file(lib_, request));
  EXPECT_EQ(*read_elf_info(lib_)->runpath, new_runpath_);
  EXPECT_EQ(test::run_program(arch_, dir_ / "prog-pie").output, "hello from lib\n");
  EXPECT_EQ(test::read_file(lib_), intended_) << "the interrupted edit's tail was not reclaimed";

  // Foreign trailing bytes (a signature, a payload) are never taken for such a tail.
  Bytes signed_library = original_;
  const std::string trailer = "~Module signature appended~\n";
  signed_library.insert(signed_library.end(), trailer.begin(), trailer.end());
  test::write_file(lib_, signed_library);
  EXPECT_FALSE(read_elf_info(lib_)->interrupted_edit_tail);
  ASSERT_TRUE(edit_elf_file(lib_, request));
  auto edited = test::read_file(lib_);
  ASSERT_GT(edited.size(), signed_library.size());
  EXPECT_TRUE(std::equal(signed_library.begin() + std::ptrdiff_t(original_.size()), signed_library.end(),
                         edited.begin() + std::ptrdiff_t(original_.size())))
      << "the trailing bytes changed";
  EXPECT_EQ(test::run_program(arch_, dir_ / "prog-pie").output, "hello from lib\n");
}

// ---- A chain of hooks: each later edit rebuilds the segment the first one appended ----

// The driver hook's edit, then the compat hook's, then one more entry (as
// the hooks chain in a Nix build): each later edit is written into the file,
// staged (the rebuilt segment first past the end, then in its place), never
// a copy. A power cut after any prefix of its writes, or a SIGKILL at any
// moment, leaves the library loading with the runpath before or after that
// edit; the chain's result equals one edit's.
class ChainCrashSafety : public LibraryCrashSafety {
 protected:
  std::vector<std::string> chain() const {
    return {new_runpath_, "/nix/store/00000000000000000000000000000000-cuda_compat/compat:" + new_runpath_,
            "/nix/store/00000000000000000000000000000000-cuda_compat/compat:/run/opengl-driver/lib:/opt/more:" +
                std::string(300, 'x')};
  }
  // The library as the chain leaves it after `steps` edits (each into the file, as in a build).
  Bytes after_steps(size_t steps) {
    test::write_file(lib_, original_);
    EditOptions in_place;
    in_place.in_place = true;
    for (size_t i = 0; i < steps; ++i) {
      EditRequest r;
      r.runpath = set_runpath_update(chain()[i]);
      EXPECT_TRUE(edit_elf_file(lib_, r, in_place));
    }
    return test::read_file(lib_);
  }
  // Loads, and reads with the runpath before or after the edit.
  void expect_before_or_after(const std::string& before, const std::string& after, const std::string& context) {
    auto info = read_elf_info(lib_);
    ASSERT_TRUE(info) << context << ": " << info.error().message();
    std::string now = info->runpath.value_or("");
    EXPECT_TRUE(now == before || now == after) << context << ": runpath " << now;
    EXPECT_EQ(test::run_program(arch_, dir_ / "prog-pie").output, "hello from lib\n") << context;
  }
};

TEST_F(ChainCrashSafety, ALaterEditIsStagedIntoTheFileAndEqualsOneEdit) {
  for (size_t step = 1; step < chain().size(); ++step) {
    Bytes before = after_steps(step);
    auto r = test::run_command({RUNPATCH_CLI, "set", "--in-place", "--runpath", chain()[step], lib_.string()}, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("replaced the segment of an earlier edit), written into the file (staged commit)"),
              std::string::npos)
        << "step " << step << ": " << r.output;
    Bytes chained = test::read_file(lib_);
    test::write_file(lib_, original_);
    auto once = test::run_command({RUNPATCH_CLI, "set", "--in-place", "--runpath", chain()[step], lib_.string()}, true);
    ASSERT_EQ(once.exit_code, 0) << once.output;
    EXPECT_TRUE(chained == test::read_file(lib_)) << "step " << step << ": the chain's bytes differ from one edit's";
  }
}

TEST_F(ChainCrashSafety, PowerCutAfterAnyPrefixOfALaterEditsWritesLeavesBeforeOrAfter) {
  for (size_t step = 1; step < chain().size(); ++step) {
    const Bytes before = after_steps(step);
    EditRequest request;
    request.runpath = set_runpath_update(chain()[step]);
    bool completed = false, interim = false;
    for (size_t k = 0; k <= 16 && !completed; ++k) {
      std::string context = "step " + std::to_string(step) + ", stopped after " + std::to_string(k) + " writes";
      test::write_file(lib_, before);
      ASSERT_NO_FATAL_FAILURE(power_cut_after(request, k, context));
      expect_before_or_after(chain()[step - 1], chain()[step], context);
      expect_no_debris(context);
      auto info = read_elf_info(lib_);
      bool reads_after = info && info->runpath == chain()[step];
      completed = reads_after && test::read_file(lib_).size() <= before.size() + 4096;
      interim = interim || (reads_after && !completed);  // the headers point at the copy past the end
    }
    EXPECT_TRUE(completed) << "step " << step << ": the edit never completed";
    EXPECT_TRUE(interim) << "step " << step << ": no prefix stopped with the interim copy in use (not staged?)";
  }
}

TEST_F(ChainCrashSafety, SigkillDuringALaterEditLeavesBeforeOrAfter) {
  const Bytes before = after_steps(1);
  std::mt19937 random(20261128);
  int trials = trials_wanted(300), killed = 0;
  for (int t = 0; t < trials; ++t) {
    test::write_file(lib_, before);
    pid_t pid = spawn_cli({"set", "--in-place", "--no-sync", "--runpath", chain()[1], lib_.string()});
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<long>(0, 3000)(random)));
    ::kill(pid, SIGKILL);
    killed += WIFSIGNALED(wait_status(pid));
    std::string context = "trial " + std::to_string(t);
    if (t % 20 == 0) {
      expect_before_or_after(chain()[0], chain()[1], context);
    } else {
      auto info = read_elf_info(lib_);
      ASSERT_TRUE(info) << context << ": " << info.error().message();
      std::string now = info->runpath.value_or("");
      ASSERT_TRUE(now == chain()[0] || now == chain()[1]) << context << ": runpath " << now;
    }
    expect_no_debris(context);
  }
  std::cout << trials << " kills, " << killed << " mid-run\n";
}

// ---- A chain whose strings fit the string table: each in its own place ----

// prog-longrunpath's 1.4 KB runpath, replaced by '$ORIGIN/lib' (the linker's
// output as auto-patchelf leaves it), leaves room in the string table for
// every later runpath. Each edit writes its runpath where one edit of the
// original would: at the end of the free bytes, so that a prepended runpath
// ends where the old one did (one write), staged through an interim place
// where it would overwrite what the file references now. Either hook order,
// and one edit, give the same bytes, with no dead copy of an earlier
// runpath; a power cut after any prefix of the staged writes leaves the
// program running with the runpath before or after.
class InTableChain : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("NIX_BUILD_TOP"); }
  void SetUp() override {
    arch_ = host();
    dir_ = test::scratch_dir("crash-kill-in-table/" +
                             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_ / "lib");
    fs::copy_file(arch_.dir / "lib/libgreet.so", dir_ / "lib/libgreet.so");
    prog_ = dir_ / "prog";
    original_ = test::read_file(arch_.dir / "prog-longrunpath");
    ::setenv("NIX_BUILD_TOP", (dir_ / "build").c_str(), 1);  // a build: edits go into the file
  }
  // The file after `cli_steps` (each a runpatch command line, the file appended).
  Bytes after(const std::vector<std::vector<std::string>>& cli_steps, std::string* last_output = nullptr) {
    test::write_file(prog_, original_);
    ::chmod(prog_.c_str(), 0755);
    for (auto step : cli_steps) {
      step.insert(step.begin(), RUNPATCH_CLI);
      step.push_back(prog_.string());
      auto r = test::run_command(step, true);
      EXPECT_EQ(r.exit_code, 0) << r.output;
      if (last_output) *last_output = r.output;
    }
    return test::read_file(prog_);
  }
  std::string runpath_now() {
    auto info = read_elf_info(prog_);
    return info ? info->runpath.value_or("") : "(unreadable: " + info.error().message() + ")";
  }
  size_t occurrences(const Bytes& bytes, const std::string& text) {
    size_t n = 0;
    for (auto it = bytes.begin(); (it = std::search(it, bytes.end(), text.begin(), text.end())) != bytes.end(); ++it)
      ++n;
    return n;
  }

  const std::string driver_ = "/run/opengl-driver/lib";
  const std::string compat_ = "/nix/store/00000000000000000000000000000000-cuda_compat/compat";
  std::vector<std::string> first() const { return {"set", "--runpath", "$ORIGIN/lib"}; }
  std::vector<std::string> driver() const { return {"driver", "--driver-dir", driver_}; }
  std::vector<std::string> compat() const { return {"compat", "--libcuda", compat_, "--driver-dir", driver_}; }
  std::string final_runpath() const { return compat_ + ":" + driver_ + ":$ORIGIN/lib"; }

  test::FixtureArch arch_;
  fs::path dir_, prog_;
  Bytes original_;
};

TEST_F(InTableChain, EitherOrderAndOneEditGiveTheSameBytesWithNoDeadRunpath) {
  std::string plan;
  after({{"set", "--dry-run", "--runpath", final_runpath()}}, &plan);
  EXPECT_NE(plan.find("staged through an interim place"), std::string::npos)
      << "one edit of the original is not staged: the final runpath overlaps nothing (the test proves less)\n"
      << plan;
  Bytes driver_then_compat = after({first(), driver(), compat()});
  EXPECT_EQ(runpath_now(), final_runpath());
  EXPECT_EQ(test::run_program(arch_, prog_).output, "hello from lib\n");
  EXPECT_EQ(occurrences(driver_then_compat, driver_), 1u) << "a dead copy of the driver step's runpath stayed";
  EXPECT_EQ(occurrences(driver_then_compat, "/nonexistent/long/runpath"), 0u) << "the linker's runpath stayed";
  Bytes compat_then_driver = after({first(), compat(), driver()});
  EXPECT_TRUE(compat_then_driver == driver_then_compat) << "the hook order shows in the bytes";
  Bytes one_edit = after({{"set", "--runpath", final_runpath()}});
  EXPECT_TRUE(one_edit == driver_then_compat) << "the chain's bytes differ from one edit's";
  EXPECT_EQ(one_edit.size(), original_.size()) << "the runpaths fit the table: nothing appended";
}

// One edit of the original: the final place overlaps the linker's runpath,
// so the new one goes first over the old one's bytes, then to its place.
TEST_F(InTableChain, PowerCutAfterAnyPrefixOfTheStagedWritesLeavesBeforeOrAfter) {
  const Bytes before = original_;
  const Bytes intended = after({first(), driver(), compat()});
  const std::string before_runpath = *read_elf_info(arch_.dir / "prog-longrunpath")->runpath;
  EditRequest request;
  request.runpath = set_runpath_update(final_runpath());
  bool completed = false, interim = false;
  for (size_t k = 0; k <= 8 && !completed; ++k) {
    std::string context = "stopped after " + std::to_string(k) + " writes";
    test::write_file(prog_, before);
    EditOptions options;
    options.in_place = true;
    options.durability = Durability::Sync;
    EditTestHooks crash;
    crash.stop_after_writes = k;
    ASSERT_TRUE(edit_elf_file_for_testing(prog_, request, options, crash)) << context;
    std::string now = runpath_now();
    EXPECT_TRUE(now == before_runpath || now == final_runpath()) << context << ": runpath " << now;
    EXPECT_EQ(test::run_program(arch_, prog_).output, "hello from lib\n") << context;
    completed = test::read_file(prog_) == intended;
    interim = interim || (now == final_runpath() && !completed);
  }
  EXPECT_TRUE(completed) << "the edit never gave the chain's bytes";
  EXPECT_TRUE(interim) << "no prefix stopped in the interim state (not staged?)";
}

// patchelf writes a shorter runpath over the old one and leaves its tail
// (auditwheel's wheels carry such dead strings): every edit zeroes the bytes
// nothing references, so no dead text stays, in the table or in an appended
// copy of it, and the bytes depend on the final content only.
class DeadStrings : public InTableChain {
 protected:
  // `file` with its runpath shortened to "$ORIGIN/lib" where it is, its tail left.
  Bytes shortened_as_patchelf_does(Bytes file) {
    const std::string linker_runpath = *read_elf_info(arch_.dir / "prog-longrunpath")->runpath;
    auto at = std::search(file.begin(), file.end(), linker_runpath.begin(), linker_runpath.end());
    EXPECT_NE(at, file.end());
    if (at != file.end()) std::copy(shorter_.c_str(), shorter_.c_str() + shorter_.size() + 1, at);
    EXPECT_GT(occurrences(file, dead_text_), 10u);
    return file;
  }
  std::vector<std::string> set_long() const {
    return {"set", "--runpath", "/long/" + std::string(3000, 'r') + ":$ORIGIN/lib"};
  }
  const std::string shorter_ = "$ORIGIN/lib";
  const std::string dead_text_ = "/nonexistent/long/runpath/entry/0";
};

// The dead tail ends the table: an in-table edit (the driver's) zeroes it,
// and an appended edit after it gives the bytes of the appended edit alone.
TEST_F(DeadStrings, AnInTableEditZeroesThemAndALaterAppendedEditEqualsOneEdit) {
  original_ = shortened_as_patchelf_does(original_);
  Bytes in_table = after({driver()});
  EXPECT_EQ(in_table.size(), original_.size()) << "the driver's runpath did not fit the table (the test proves less)";
  EXPECT_EQ(occurrences(in_table, dead_text_), 0u) << "the in-table edit left the dead string";
  EXPECT_EQ(test::run_program(arch_, prog_).output, "hello from lib\n");
  Bytes one_edit = after({set_long()});
  EXPECT_GT(one_edit.size(), original_.size()) << "the long runpath fits the table: nothing appended";
  Bytes chain = after({driver(), set_long()});
  EXPECT_TRUE(chain == one_edit) << "an in-table edit first shows in the appended edit's bytes";
  EXPECT_EQ(test::run_program(arch_, prog_).output, "hello from lib\n");
}

// A string after the dead tail (patchelf's --add-needed appends libm.so.6 to
// a copy of the table): the copy an appended edit makes drops the dead text.
TEST_F(DeadStrings, AnAppendedCopyOfTheTableZeroesThemBetweenLiveStrings) {
  EditRequest add_needed;
  add_needed.add_needed = {"libm.so.6"};
  EditOptions like_patchelf;
  like_patchelf.mark_replaced_runpath = true;  // patchelf's front end: the copy keeps the whole table
  test::write_file(prog_, original_);
  ASSERT_TRUE(edit_elf_file_for_testing(prog_, add_needed, like_patchelf, {}));
  original_ = shortened_as_patchelf_does(test::read_file(prog_));
  for (const auto& steps : std::vector<std::vector<std::vector<std::string>>>{{set_long()}, {driver()}}) {
    Bytes edited = after(steps);
    EXPECT_EQ(occurrences(edited, dead_text_), 0u) << "the edit kept the dead string: " << steps[0][0];
    EXPECT_EQ(test::run_program(arch_, prog_).output, "hello from lib\n");
  }
}

}  // namespace
}  // namespace runpatch
