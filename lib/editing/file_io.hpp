// File handling for edits: opening with a lock and applying planned writes
// in crash-safe order (the copy path is replacement.hpp).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <sys/types.h>

#include "editing/commit_steps.hpp"
#include "editing/unique_fd.hpp"
#include "editing/planned_write.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

// Opens path (read-write, or read-only when only the lock and a copy are
// needed) and takes an exclusive advisory lock: two runpatch processes
// editing one file serialize instead of interleaving. Retries while another
// process replaced the file under the name, so the lock is on what path names.
// before_waiting, when given, runs before each wait for a lock another
// descriptor holds, and the lock is then polled (it may be the caller's own).
Expected<UniqueFd> open_for_edit(const std::string& path, bool writable = true,
                                 const std::function<void()>& before_waiting = {});

// pwrite until every byte is written; an error names path, what and the offset.
Status write_bytes(int fd, const std::string& path, uint64_t offset, std::span<const uint8_t> bytes,
                   const std::string& what);

// What the kernel takes from a file when it is written (file capabilities,
// set-ID bits without CAP_FSETID), read before the first write and put back
// after the last.
class PrivilegesKept {
 public:
  static PrivilegesKept read(int fd);
  Status restore(int fd, const std::string& path) const;

 private:
  mode_t mode_ = 0;
  std::optional<std::vector<char>> capability_;
};

// The plan written into fd, as commit steps that own fd (and the lock on it):
// prepare (bytes nothing references yet), commit, cleanup, a staged commit's
// switch, cutting the file to its new size — each durable before the next
// (commit_steps.hpp). A failed prepare truncates the file back to old_size,
// so it is byte-identical to before. The set-ID bits and file capabilities
// the writes clear are restored after the last. stop_after_writes simulates a
// crash (for tests): nothing after that many writes happens.
PendingCommit commit_into_file(UniqueFd fd, const std::string& path, EditPlan plan, uint64_t old_size,
                               std::optional<size_t> stop_after_writes = std::nullopt);

}  // namespace runpatch
