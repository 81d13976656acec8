#include "crash_states.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "fixtures.hpp"
#include "synthetic_elf.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch::test {

pid_t spawn_cli(const std::vector<std::string>& args, std::optional<rlim_t> file_size_limit) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (file_size_limit) {
      ::signal(SIGXFSZ, SIG_IGN);  // an ignored SIGXFSZ survives exec: writes fail with EFBIG instead
      struct rlimit limit {
        *file_size_limit, *file_size_limit
      };
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> argv;
    std::string cli = RUNPATCH_CLI;
    argv.push_back(cli.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(cli.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

int trials_wanted(int default_trials) {
  if (const char* n = std::getenv("RUNPATCH_KILL_TRIALS")) return std::max(1, std::atoi(n));
  return default_trials;
}

CrashState classify(const Bytes& now, const Bytes& original, const Bytes& intended,
                    const std::vector<WrittenRange>& symbol_values) {
  if (now == original) return CrashState::Old;
  if (now == intended) return CrashState::New;
  if (now.size() == intended.size() && now.size() >= original.size()) {
    bool symbols_pending = true;
    for (size_t i = 0; i < now.size() && symbols_pending; ++i) {
      if (now[i] == intended[i]) continue;
      symbols_pending = i < original.size() && now[i] == original[i] &&
                        std::any_of(symbol_values.begin(), symbol_values.end(),
                                    [&](const WrittenRange& r) { return i >= r.offset && i < r.offset + r.size; });
    }
    if (symbols_pending) return CrashState::NewBeforeSymbolValues;
  }
  bool old_prefix = now.size() > original.size() && std::equal(original.begin(), original.end(), now.begin());
  if (old_prefix) {
    // Past the intended end lies only what a staged commit prepares: the interim copy of the table.
    for (size_t i = original.size(); i < std::min(now.size(), intended.size()); ++i)
      if (now[i] != 0 && now[i] != intended[i]) return CrashState::Neither;
    return CrashState::OldWithUnreferencedTail;
  }
  return CrashState::Neither;
}

bool interim_reads_new(const Bytes& now, const Bytes& intended, const std::string& new_runpath,
                       const std::string& probe) {
  if (now.size() <= intended.size()) return false;
  write_file(probe, now);
  auto info = read_elf_info(probe);
  std::filesystem::remove(probe);
  return info && info->runpath == new_runpath;
}

}  // namespace runpatch::test
