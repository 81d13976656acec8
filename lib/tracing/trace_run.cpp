// Running a command under the audit library. The records go to an unlinked
// file rather than a pipe: a child that outlives the command (a daemon) keeps
// the descriptor open, and a pipe would make us wait for it to exit.
#include "runpatch/tracing/trace_run.hpp"

#include "audit/trace_protocol.h"
#include "runpatch/reading/loader_paths.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

extern char** environ;

namespace runpatch {

namespace fs = std::filesystem;

namespace {

bool is_executable_file(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// execvp's lookup: each PATH entry in order ("" is the current directory).
Expected<fs::path> find_in_path(const std::string& command) {
  const char* path = std::getenv("PATH");
  std::string list = path ? path : "/usr/local/bin:/usr/bin:/bin";
  // An empty PATH is one empty entry: the current directory.
  for (const auto& dir : list.empty() ? std::vector<std::string>{""} : split_runpath(list)) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / command;
    if (is_executable_file(candidate)) return candidate;
  }
  return make_error(ErrorCode::CannotTrace, command, "command not found in PATH");
}

// The interpreter a "#!" line names, or nothing for any other file.
std::optional<fs::path> script_interpreter(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string line;
  if (!std::getline(in, line) || line.rfind("#!", 0) != 0) return std::nullopt;
  size_t start = line.find_first_not_of(" \t", 2);
  if (start == std::string::npos) return std::nullopt;
  return fs::path(line.substr(start, line.find_first_of(" \t\r", start) - start));
}

}  // namespace

Expected<fs::path> program_to_trace(const std::string& command) {
  fs::path program = command;
  if (command.find('/') == std::string::npos) {
    RUNPATCH_TRY(program, find_in_path(command));
  }
  // The kernel follows up to four levels of interpreters; so do we.
  for (int level = 0; level < 5; ++level) {
    auto interpreter = script_interpreter(program);
    if (!interpreter) return program;
    program = *interpreter;
  }
  return make_error(ErrorCode::CannotTrace, command, "too many levels of #! interpreters");
}

namespace {

// The loader's secure mode (AT_SECURE) ignores LD_AUDIT's paths with a slash
// and any library outside the trusted directories: a program that gains
// privileges cannot be traced. Any set-id bit counts, whoever owns the file:
// the owner running it is the only case without secure mode, and a trace that
// works for one user only would surprise the next.
Status check_privileges(const fs::path& program) {
  struct stat st {};
  if (::stat(program.c_str(), &st) != 0)
    return make_error(ErrorCode::CannotTrace, program.string(), std::strerror(errno));
  const char* what = (st.st_mode & S_ISUID) ? "setuid" : (st.st_mode & S_ISGID) ? "setgid" : nullptr;
  if (!what && ::getxattr(program.c_str(), "security.capability", nullptr, 0) >= 0) what = "given file capabilities";
  if (!what) return {};
  return make_error(ErrorCode::CannotTrace, program.string(),
                    std::string("is ") + what +
                        ": the loader runs it in secure mode, which ignores LD_AUDIT; "
                        "trace a copy without the privilege");
}

std::string describe(const ElfIdentity& identity) {
  return machine_name(identity.machine) + (identity.elf_class == ElfClass::Elf32 ? " 32-bit" : " 64-bit") +
         (identity.byte_order == ByteOrder::Big ? " big-endian" : "");
}

}  // namespace

Status check_traceable(const fs::path& program, const ElfInfo& audit_library) {
  RUNPATCH_CHECK(check_privileges(program));
  RUNPATCH_TRY(ElfInfo info, read_elf_info(program));
  if (!info.interpreter)
    return make_error(ErrorCode::CannotTrace, program.string(),
                      "is statically linked: no dynamic loader runs in it, so there is nothing "
                      "to trace (an audit library needs glibc's ld.so)");
  if (is_musl_interpreter(*info.interpreter))
    return make_error(
        ErrorCode::CannotTrace, program.string(),
        "runs under musl's loader (" + *info.interpreter + "), which has no audit interface (LD_AUDIT is glibc's)");
  const ElfIdentity& a = audit_library.identity;
  const ElfIdentity& p = info.identity;
  if (p.machine != a.machine || p.elf_class != a.elf_class || p.byte_order != a.byte_order)
    return make_error(ErrorCode::CannotTrace, program.string(),
                      "is a " + describe(p) + " program; the audit library (" + audit_library.path + ") is built for " +
                          describe(a) + " only, and a loader loads no library of another machine or class");
  return {};
}

namespace {

// An unlinked file for the records, opened O_APPEND so that every process's
// writes land whole at its end. Not close-on-exec: the command inherits it.
Expected<int> open_record_file() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_APPEND, 0600);
  if (fd >= 0) return fd;
  std::string name = dir + "/runpatch-trace.XXXXXX";
  fd = ::mkostemp(name.data(), O_APPEND);
  if (fd < 0)
    return make_error(ErrorCode::SystemCall, dir,
                      std::string("cannot create the trace's record file: ") + std::strerror(errno));
  ::unlink(name.c_str());
  return fd;
}

// This environment plus LD_AUDIT (ours first, any other audit library after)
// and RUNPATCH_TRACE_FD=FD:DEV:INO, which the audit library checks before each write.
std::vector<std::string> traced_environment(const fs::path& audit_library, int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  std::vector<std::string> env;
  std::string audit = "LD_AUDIT=" + audit_library.string();
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    if (entry.rfind(RUNPATCH_TRACE_FD_VARIABLE "=", 0) == 0) continue;
    if (entry.rfind("LD_AUDIT=", 0) == 0) {
      if (entry.size() > 9) audit += ":" + std::string(entry.substr(9));
      continue;
    }
    env.emplace_back(entry);
  }
  env.push_back(audit);
  env.push_back(RUNPATCH_TRACE_FD_VARIABLE "=" + std::to_string(fd) + ":" + std::to_string(st.st_dev) + ":" +
                std::to_string(st.st_ino));
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Spawns argv and waits for it, with SIGINT and SIGQUIT ignored here meanwhile
// (as system() does): a ^C ends the command, and the trace is still reported.
Expected<int> spawn_and_wait(std::vector<std::string> argv, std::vector<std::string> env) {
  auto args = c_strings(argv);
  auto envp = c_strings(env);
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGQUIT);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int error = ::posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), envp.data());
  ::posix_spawnattr_destroy(&attr);
  int status = 0;
  if (error == 0)
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  if (error != 0) return make_error(ErrorCode::SystemCall, argv[0], std::string("cannot run: ") + std::strerror(error));
  return status;
}

Expected<std::string> read_all(int fd) {
  std::string text;
  char buffer[65536];
  for (off_t at = 0;;) {
    ssize_t got = ::pread(fd, buffer, sizeof buffer, at);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return make_error(ErrorCode::SystemCall, "trace records", std::strerror(errno));
    if (got == 0) return text;
    text.append(buffer, size_t(got));
    at += got;
  }
}

}  // namespace

Expected<TraceRun> run_traced(const std::vector<std::string>& argv, const fs::path& audit_library) {
  if (argv.empty()) return make_error(ErrorCode::Usage, "", "no command to trace");
  RUNPATCH_TRY(int fd, open_record_file());
  auto status = spawn_and_wait(argv, traced_environment(audit_library, fd));
  auto text = status ? read_all(fd) : Expected<std::string>(status.error());
  ::close(fd);
  if (!text) return text.error();
  RUNPATCH_TRY(auto records, parse_trace_records(*text));
  TraceRun run;
  run.records = std::move(records);
  if (WIFSIGNALED(*status)) {
    run.signal = WTERMSIG(*status);
    run.exit_code = 128 + run.signal;
  } else {
    run.exit_code = WEXITSTATUS(*status);
  }
  return run;
}

}  // namespace runpatch
