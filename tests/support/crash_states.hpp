// What a crash can leave an edited file as, and the means to crash an editor:
// shared by the crash tests of one file (crash_kill_test.cpp) and of a group
// of files committed together (group_commit_test.cpp).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runpatch/editing/edit.hpp"

namespace runpatch::test {

using Bytes = std::vector<uint8_t>;

// Starts the CLI with its output discarded; the child may get a file-size
// limit (a full disk without privileges).
pid_t spawn_cli(const std::vector<std::string>& args, std::optional<rlim_t> file_size_limit = std::nullopt);

// waitpid's status, retried on EINTR.
int wait_status(pid_t pid);

// RUNPATCH_KILL_TRIALS overrides the default (the sanitizer build kills fewer times).
int trials_wanted(int default_trials);

// The states a crash may leave a library in: the old file (bytes past its old
// end are the new tail, partly written, which nothing references), or the new
// one — where the symbol values that follow moved sections (written after the
// commit; only tools read them) may still hold their old values.
// NewInterim: a staged commit between its two header writes (the ELF header
// points at the interim copy of the table past the end): the new content.
enum class CrashState { Old, OldWithUnreferencedTail, New, NewBeforeSymbolValues, NewInterim, Neither };

// Which state `now` is, from the bytes alone (NewInterim needs a reading: see below).
CrashState classify(const Bytes& now, const Bytes& original, const Bytes& intended,
                    const std::vector<WrittenRange>& symbol_values);

// Between a staged commit's header writes: the ELF header names a program
// header table past the intended end, and the file reads with new_runpath
// (probe: a scratch path to write it to for reading).
bool interim_reads_new(const Bytes& now, const Bytes& intended, const std::string& new_runpath,
                       const std::string& probe);

}  // namespace runpatch::test
