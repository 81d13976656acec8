// The copy path of an edit (docs/editing.md §4): what the replacement keeps of
// the file it replaces, whom it refuses, other file systems and devices as
// --output, and processes that have the edited library mapped.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <iostream>
#include <set>
#include <thread>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::host;

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

const std::string kPatchelfCompat = test::runpatch_patchelf_path();
constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

// Long enough that no fixture has room for it in place: the edit takes the copy path.
std::string appended_runpath(const fs::path& dir) { return (dir / "lib").string() + ":" + std::string(300, 'c'); }

struct stat stat_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

std::optional<std::string> xattr_of(const fs::path& path, const char* name) {
  char value[256];
  ssize_t n = ::getxattr(path.c_str(), name, value, sizeof value);
  if (n < 0) return std::nullopt;
  return std::string(value, size_t(n));
}

// Runs body in a child that has become nobody/nogroup; its exit code comes back.
int as_nobody(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0) ::_exit(99);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A child's edit through the library: 0 done, 1 refused with a message naming the reason (printed).
int edit_as_child(const fs::path& file, const std::string& runpath) {
  EditRequest request;
  request.runpath = set_runpath_update(runpath);
  auto outcome = edit_elf_file(file, request);
  if (outcome) return 0;
  std::cout << outcome.error().message() << std::endl;
  return outcome.error().message().find("cannot open for writing: Permission denied") != std::string::npos ? 1 : 2;
}

// patchelf itself (the oracle), run as the child's user.
int patchelf_as_child(const fs::path& file) {
  int null = ::open("/dev/null", O_WRONLY);
  ::dup2(null, 2);
  ::execlp("patchelf", "patchelf", "--set-rpath", "/opt/x", file.c_str(), nullptr);
  return 127;
}

class CopyPath : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        test::scratch_dir("copy-path/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_ / "lib");
    fs::copy_file(host().dir / "lib/libgreet.so", dir_ / "lib/libgreet.so");
    file_ = dir_ / "prog";
    fs::copy_file(host().dir / "prog-pie", file_);
  }

  fs::path dir_, file_;
};

TEST_F(CopyPath, ReplacementKeepsOwnerGroupModeAndExtendedAttributes) {
  bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown(file_.c_str(), 1234, 5678), 0);
  }
  ASSERT_EQ(::chmod(file_.c_str(), root ? 06751 : 0751), 0);  // set-ID bits: chown clears them, so they come after
  bool user_xattrs = ::setxattr(file_.c_str(), "user.runpatch-test", "kept", 4, 0) == 0;
  if (!user_xattrs) std::cout << "no user.* attributes here (" << std::strerror(errno) << ")\n";
  bool trusted = root && ::setxattr(file_.c_str(), "trusted.runpatch-test", "root only", 9, 0) == 0;
  auto before = stat_of(file_);
  auto r = test::run_command({RUNPATCH_CLI, "set", "--runpath", appended_runpath(dir_), file_.string()}, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto after = stat_of(file_);
  EXPECT_NE(after.st_ino, before.st_ino) << "the edit did not take the copy path this test is about";
  EXPECT_EQ(after.st_uid, before.st_uid);
  EXPECT_EQ(after.st_gid, before.st_gid);
  EXPECT_EQ(after.st_mode & 07777, before.st_mode & 07777);
  if (user_xattrs) {
    EXPECT_EQ(xattr_of(file_, "user.runpatch-test"), "kept");
  }
  if (trusted) {
    EXPECT_EQ(xattr_of(file_, "trusted.runpatch-test"), "root only");
  }
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"lib", "prog"}));
  if (!root) std::cout << "not root: owner and group could not be given away; mode and user.* attributes checked\n";
}

TEST_F(CopyPath, RefusesAsPatchelfDoesWhenTheCallerMayNotWriteTheFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user (setuid to nobody)";
  // A world-writable directory lets anyone rename over a root-owned file; the
  // file's own permissions must decide, as they do for patchelf's open().
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(file_.c_str(), 0755), 0);
  auto before = test::read_file(file_);
  auto before_stat = stat_of(file_);
  ASSERT_EQ(as_nobody([&] { return ::access(file_.c_str(), R_OK) == 0 ? 0 : 1; }), 0)
      << "nobody cannot even read the file: a refusal would prove nothing";
  EXPECT_NE(as_nobody([&] { return patchelf_as_child(file_); }), 0) << "patchelf (the oracle) edited the file";
  EXPECT_EQ(as_nobody([&] { return edit_as_child(file_, appended_runpath(dir_)); }), 1);
  EXPECT_EQ(as_nobody([&] { return edit_as_child(file_, "/x"); }), 1);  // a plan that fits in place, too
  EXPECT_EQ(test::read_file(file_), before);
  EXPECT_EQ(stat_of(file_).st_uid, 0u);
  EXPECT_EQ(stat_of(file_).st_ino, before_stat.st_ino);
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"lib", "prog"}));
}

TEST_F(CopyPath, AnotherUsersWritableFileIsEditedWithoutTakingItOver) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user (setuid to nobody)";
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  // Root's file, writable by nobody's group: a copy would belong to nobody, so the file itself is written.
  ASSERT_EQ(::chown(file_.c_str(), 0, kNogroup), 0);
  ASSERT_EQ(::chmod(file_.c_str(), 0775), 0);
  auto before = stat_of(file_);
  EXPECT_EQ(as_nobody([&] { return edit_as_child(file_, appended_runpath(dir_)); }), 0);
  auto after = stat_of(file_);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_uid, 0u);
  EXPECT_EQ(after.st_gid, kNogroup);
  EXPECT_EQ(*read_elf_info(file_)->runpath, appended_runpath(dir_));
  // nobody's own file in the same directory: replaced by a copy that stays nobody's.
  fs::path own = dir_ / "own";
  fs::copy_file(file_, own);
  ASSERT_EQ(::chown(own.c_str(), kNobody, kNogroup), 0);
  ASSERT_EQ(::chmod(own.c_str(), 0700), 0);
  auto own_before = stat_of(own);
  EXPECT_EQ(as_nobody([&] { return edit_as_child(own, "/other:" + std::string(400, 'o')); }), 0);
  auto own_after = stat_of(own);
  EXPECT_NE(own_after.st_ino, own_before.st_ino);
  EXPECT_EQ(own_after.st_uid, kNobody);
  EXPECT_EQ(own_after.st_mode & 07777, 0700u);
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"lib", "prog", "own"}));
}

TEST_F(CopyPath, OutputOntoAnotherFileSystem) {
  fs::path shm = "/dev/shm/runpatch-copy-path-" + std::to_string(::getpid());
  fs::create_directories(shm);
  if (stat_of(shm).st_dev == stat_of(dir_).st_dev) std::cout << "/dev/shm is on the scratch file system here\n";
  std::string runpath = appended_runpath(dir_);
  struct Case {
    std::vector<std::string> argv;
    fs::path out;
  };
  for (const Case& c :
       {Case{{RUNPATCH_CLI, "set", "--runpath", runpath, "-o", (shm / "a").string(), file_.string()}, shm / "a"},
        Case{{kPatchelfCompat, "--set-rpath", runpath, "--output", (shm / "b").string(), file_.string()}, shm / "b"}}) {
    SCOPED_TRACE(c.argv[0]);
    auto r = test::run_command(c.argv, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(*read_elf_info(c.out)->runpath, runpath);
    EXPECT_EQ(test::run_program(host(), c.out).output, "hello from lib\n");
  }
  EXPECT_EQ(names_in(shm), (std::set<std::string>{"a", "b"}));
  fs::remove_all(shm);
}

TEST_F(CopyPath, DeviceOutputIsWrittenThroughAsPatchelfDoes) {
  // patchelf opens its --output and writes: /dev/null swallows the file and stays /dev/null.
  auto oracle = test::run_command({"patchelf", "--set-rpath", "/x", "--output", "/dev/null", file_.string()}, true);
  ASSERT_EQ(oracle.exit_code, 0) << oracle.output;
  for (const auto& argv :
       {std::vector<std::string>{RUNPATCH_CLI, "set", "--runpath", appended_runpath(dir_), "-o", "/dev/null",
                                 file_.string()},
        std::vector<std::string>{kPatchelfCompat, "--set-rpath", "/x", "--output", "/dev/null", file_.string()}}) {
    SCOPED_TRACE(argv[0]);
    auto r = test::run_command(argv, true);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    struct stat null {};
    ASSERT_EQ(::lstat("/dev/null", &null), 0);
    EXPECT_TRUE(S_ISCHR(null.st_mode)) << "/dev/null was replaced";
    EXPECT_EQ(null.st_rdev, ::makedev(1, 3));
  }
  auto names = names_in("/dev");
  EXPECT_EQ(std::count_if(names.begin(), names.end(), [](const auto& n) { return n.find(".runpatch-") != n.npos; }), 0);
}

TEST_F(CopyPath, AtomicCopyAlwaysReplacesTheFile) {
  fs::create_hard_link(file_, dir_ / "link");
  // A hard-linked file is normally written in place (every link sees the edit).
  auto r = test::run_command({RUNPATCH_CLI, "set", "--runpath", appended_runpath(dir_), file_.string()}, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(stat_of(file_).st_ino, stat_of(dir_ / "link").st_ino);
  // --atomic-copy: the name gets a copy; a short runpath that fits in one page too.
  for (const auto& argv :
       {std::vector<std::string>{RUNPATCH_CLI, "set", "--atomic-copy", "--runpath", "/x", file_.string()},
        std::vector<std::string>{RUNPATCH_CLI, "driver", "--atomic-copy", file_.string()},
        std::vector<std::string>{kPatchelfCompat, "--atomic-copy", "--set-rpath", "/y", file_.string()}}) {
    SCOPED_TRACE(argv[1]);
    auto before = stat_of(file_);
    auto edit = test::run_command(argv, true);
    ASSERT_EQ(edit.exit_code, 0) << edit.output;
    EXPECT_NE(stat_of(file_).st_ino, before.st_ino);
  }
  EXPECT_EQ(*read_elf_info(file_)->runpath, "/y");
  EXPECT_EQ(*read_elf_info(dir_ / "link")->runpath, appended_runpath(dir_));
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"lib", "prog", "link"}));
  auto both =
      test::run_command({RUNPATCH_CLI, "set", "--atomic-copy", "--in-place", "--runpath", "/z", file_.string()}, true);
  EXPECT_EQ(both.exit_code, 2) << both.output;
}

// Calls greet() from a dlopened library (looking it up again each time, so the
// mapped symbol and string tables are read too) for a second, then says how it
// went. Each round also walks every loaded object's program headers as an
// unwinder does (dl_iterate_phdr) and reads each PT_DYNAMIC they name: a table
// rewritten under the process would point it at memory it never mapped.
constexpr const char* kCaller = R"(#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
static int visit(struct dl_phdr_info *info, size_t size, void *data) {
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      *(long *)data += *(volatile long *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr) != 0;
  return 0;
}
static long ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
int main(int argc, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  const char *(*greet)(void) = (const char *(*)(void))dlsym(lib, "greet");
  if (!greet) return 3;
  const char *first = greet();
  long calls = 0, wrong = 0, start = ns();
  puts("ready");
  fflush(stdout);
  while (ns() - start < 1000000000L) {
    greet = (const char *(*)(void))dlsym(lib, "greet");
    if (!greet || strcmp(greet(), first) != 0) wrong++;
    long dynamic_tables = 0;
    dl_iterate_phdr(visit, &dynamic_tables);
    if (dynamic_tables == 0) wrong++;
    calls++;
  }
  printf("%ld calls, %ld wrong\n", calls, wrong);
  return 0;
}
)";

// Runs the caller on lib; edit runs once the library is loaded and calling.
std::string call_while_editing(const fs::path& caller, const fs::path& lib, const std::function<void()>& edit) {
  int out[2];
  EXPECT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::execl(caller.c_str(), caller.c_str(), lib.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  std::string output;
  char buffer[256];
  for (ssize_t n; output.find("ready\n") == std::string::npos && (n = ::read(out[0], buffer, sizeof buffer)) > 0;)
    output.append(buffer, size_t(n));
  if (output.find("ready\n") != std::string::npos) edit();
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) output.append(buffer, size_t(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return output + "killed by signal " + std::to_string(WTERMSIG(status));
  return output + "exit " + std::to_string(WEXITSTATUS(status));
}

// Builds the caller, and libgreet without notes (-Wl,--build-id=none): then
// nothing but the hash table follows the program header table.
fs::path prepare_callers(const fs::path& dir) {
  test::write_file(dir / "caller.c", Bytes(kCaller, kCaller + std::strlen(kCaller)));
  auto cc = test::run_command({"cc", "-o", (dir / "caller").string(), (dir / "caller.c").string(), "-ldl"}, true);
  EXPECT_EQ(cc.exit_code, 0) << cc.output;
  std::string greet = "const char *greet(void) { return \"greet\"; }\n";
  test::write_file(dir / "greet.c", Bytes(greet.begin(), greet.end()));
  auto lib = test::run_command({"cc", "-shared", "-fPIC", "-Wl,--build-id=none", "-o",
                                (dir / "libgreet-no-notes.so").string(), (dir / "greet.c").string()},
                               true);
  EXPECT_EQ(lib.exit_code, 0) << lib.output;
  return dir / "caller";
}

// Edits a copy of original three times (appended, longer, fits in place)
// while the caller has it loaded and keeps looking greet() up and calling it.
// Returns whether every edit went into the file itself (its inode kept).
bool edit_while_called(const fs::path& dir, const fs::path& original, const std::vector<std::string>& flags) {
  fs::path lib = dir / (original.stem().string() + "-" + std::to_string(flags.size()) + ".so");
  fs::copy_file(original, lib, fs::copy_options::overwrite_existing);
  std::vector<uint64_t> sizes;
  auto inode = fs::exists(lib) ? stat_of(lib).st_ino : 0;
  bool same_inode = true;
  auto result = call_while_editing(dir / "caller", lib, [&] {
    for (const std::string& runpath :
         {"/a:" + std::string(300, 'a'), "/b:" + std::string(600, 'b'), std::string("/c")}) {
      std::vector<std::string> argv = {RUNPATCH_CLI, "set", "--runpath", runpath};
      argv.insert(argv.end(), flags.begin(), flags.end());
      argv.push_back(lib.string());
      auto r = test::run_command(argv, true);
      EXPECT_EQ(r.exit_code, 0) << r.output;
      sizes.push_back(fs::file_size(lib));
      same_inode = same_inode && stat_of(lib).st_ino == inode;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  EXPECT_NE(result.find(" calls, 0 wrong\nexit 0"), std::string::npos) << result;
  EXPECT_EQ(result.find("ready\n0 calls"), std::string::npos) << result;
  EXPECT_EQ(*read_elf_info(lib)->runpath, "/c");
  EXPECT_GT(sizes.at(0), fs::file_size(original)) << "the first edit did not append";
  std::cout << lib.filename().string() << ": " << result.substr(0, result.find('\n', 6)) << "\n";
  return same_inode;
}

TEST(MappedLibrary, EditingALibraryThatAProcessIsCallingDoesNotDisturbIt) {
  fs::path dir = test::scratch_dir("copy-path/mapped");
  prepare_callers(dir);
  // Default: an edit that appends a segment is made on a copy renamed over
  // the name; the process keeps the old inode, whose bytes nothing writes.
  EXPECT_FALSE(edit_while_called(dir, host().dir / "lib/libgreet.so", {})) << "the default edit wrote into the file";
  EXPECT_FALSE(edit_while_called(dir, dir / "libgreet-no-notes.so", {})) << "the default edit wrote into the file";
  EXPECT_FALSE(edit_while_called(dir, host().dir / "lib/libgreet.so", {"--atomic-copy"}));
  // In place: written into the file where the notes make room for the table
  // (appended bytes lie past every mapped segment; the commit rewrites headers
  // the process has mapped), else on a copy; lookups work either way.
  edit_while_called(dir, host().dir / "lib/libgreet.so", {"--in-place"});
}

// Written in place, the program header table must not grow over .gnu.hash
// (which follows it when no note does): a process that has the library loaded
// reads its bloom filter from the mapping on every lookup (dlsym, lazy
// binding). Moving the table out of the first segment instead would break
// strip; so outside a build such an edit is made on a copy.
TEST(MappedLibrary, InPlaceEditOfALibraryWithoutNotesKeepsLookupsWorking) {
  fs::path dir = test::scratch_dir("copy-path/mapped-in-place");
  prepare_callers(dir);
  EXPECT_FALSE(edit_while_called(dir, dir / "libgreet-no-notes.so", {"--in-place"})) << "written into the file";
}

}  // namespace
}  // namespace runpatch
