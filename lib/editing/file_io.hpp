// File handling for edits: opening with a lock and applying planned writes
// in crash-safe order (the copy path is replacement.hpp).
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <sys/types.h>

#include "editing/planned_write.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Opens path (read-write, or read-only when only the lock and a copy are
// needed) and takes an exclusive advisory lock: two runpatch processes
// editing one file serialize instead of interleaving. Retries while another
// process replaced the file under the name, so the lock is on what path names.
Expected<UniqueFd> open_for_edit(const std::string& path, bool writable = true);

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

// Prepare writes, sync, the commit, sync, cleanup, sync. A failed prepare
// truncates the file back to old_size, so it is byte-identical to before.
// stop_after_writes simulates a crash (for tests): nothing after that many writes happens.
Status apply_plan(int fd, const std::string& path, const EditPlan& plan, uint64_t old_size, bool durable,
                  std::optional<size_t> stop_after_writes = std::nullopt);

}  // namespace runpatch
