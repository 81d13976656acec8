// Running a command under runpatch's rtld audit library (LD_AUDIT), and
// whether a program can be traced at all.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/expected.hpp"
#include "runpatch/tracing/trace_records.hpp"

namespace runpatch {

// The file the kernel runs for command: a name without a slash looked up in
// PATH as execvp does, and for a script (#!) its interpreter (the records then
// come from the interpreter and whatever it runs).
Expected<std::filesystem::path> program_to_trace(const std::string& command);

// Why program cannot be traced, as one error, or nothing: a setuid or setgid
// file or one with file capabilities (the loader's secure mode ignores
// LD_AUDIT), a static program or one of musl (no glibc loader runs), a
// program of another class or machine than the audit library.
Status check_traceable(const std::filesystem::path& program, const ElfInfo& audit_library);

struct TraceRun {
  int exit_code = 0;  // the command's, or 128 + the signal that ended it
  int signal = 0;     // the signal that ended it, 0 if it exited
  std::vector<TraceRecord> records;
};

// Runs argv (argv[0] searched in PATH) with the audit library added to
// LD_AUDIT and the records' file descriptor in RUNPATCH_TRACE_FD; its stdin,
// stdout and stderr are this process's. Waits for the command itself (not
// for children it leaves running); SIGINT and SIGQUIT go to it, not to us.
Expected<TraceRun> run_traced(const std::vector<std::string>& argv, const std::filesystem::path& audit_library);

}  // namespace runpatch
