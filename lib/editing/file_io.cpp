#include "editing/file_io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "reading/file_checks.hpp"

namespace runpatch {

namespace {

bool truncate_to(int fd, uint64_t size) { return ::ftruncate(fd, static_cast<off_t>(size)) == 0; }

Status sync(int fd, const std::string& path) {
  if (::fdatasync(fd) != 0) return make_error(path, errno_text("cannot sync"));
  return {};
}

}  // namespace

Status write_bytes(int fd, const std::string& path, uint64_t offset, std::span<const uint8_t> bytes,
                   const std::string& what) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(path, errno_text("cannot write " + what, n < 0 ? errno : ENOSPC), offset + done);
    done += static_cast<size_t>(n);
  }
  return {};
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
constexpr const char* kCapabilityAttribute = "security.capability";
}

PrivilegesKept PrivilegesKept::read(int fd) {
  PrivilegesKept kept;
  struct stat st {};
  if (::fstat(fd, &st) == 0) kept.mode_ = st.st_mode & 07777;
  ssize_t size = ::fgetxattr(fd, kCapabilityAttribute, nullptr, 0);
  if (size > 0) {
    std::vector<char> value(static_cast<size_t>(size));
    size = ::fgetxattr(fd, kCapabilityAttribute, value.data(), value.size());
    if (size > 0) kept.capability_ = std::vector<char>(value.begin(), value.begin() + size);
  }
  return kept;
}

Status PrivilegesKept::restore(int fd, const std::string& path) const {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error(path, errno_text("cannot stat"));
  if ((st.st_mode & 07777) != mode_ && ::fchmod(fd, mode_) != 0)
    return make_error(path, errno_text("cannot restore the set-ID bits the write cleared"));
  if (capability_ && ::fsetxattr(fd, kCapabilityAttribute, capability_->data(), capability_->size(), 0) != 0)
    return make_error(path, errno_text("cannot restore the file capabilities the write cleared"));
  return {};
}

Expected<UniqueFd> open_for_edit(const std::string& path, bool writable) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    UniqueFd fd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | kOpenWithoutWaiting));
    if (fd.get() < 0) return make_error(path, errno_text(writable ? "cannot open for writing" : "cannot open"));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return make_error(path, "not a regular file");
    while (::flock(fd.get(), LOCK_EX) != 0)
      if (errno != EINTR) return make_error(path, errno_text("cannot lock"));
    // The previous lock holder may have renamed an edited copy over the name:
    // then our lock is on the old inode, and edits must go to the new one.
    struct stat now {};
    if (::stat(path.c_str(), &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) return fd;
  }
  return make_error(path, "the file keeps being replaced while waiting for its lock");
}

namespace {

// Writes the plan's writes of one phase; false once the test budget is spent.
Expected<bool> write_phase(int fd, const std::string& path, const EditPlan& plan, WritePhase phase, size_t& budget) {
  for (const auto& w : plan.writes) {
    if (w.phase != phase) continue;
    if (budget-- == 0) return false;
    RUNPATCH_CHECK(write_bytes(fd, path, w.offset, w.bytes, w.what));
  }
  return true;
}

bool has_phase(const EditPlan& plan, WritePhase phase) {
  return std::any_of(plan.writes.begin(), plan.writes.end(), [&](const PlannedWrite& w) { return w.phase == phase; });
}

}  // namespace

Status apply_plan(int fd, const std::string& path, const EditPlan& plan, uint64_t old_size, bool durable,
                  std::optional<size_t> stop_after_writes) {
  // Without syncs the phases still reach the page cache in this order, which a killed process cannot undo.
  auto barrier = [&]() -> Status { return durable ? sync(fd, path) : Status{}; };
  size_t budget = stop_after_writes.value_or(plan.writes.size());
  uint64_t written_end = old_size;
  for (const auto& w : plan.writes) written_end = std::max<uint64_t>(written_end, w.offset + w.bytes.size());
  bool prepared = false;
  for (const auto& w : plan.writes) {
    if (w.phase != WritePhase::Prepare) continue;
    if (budget-- == 0) return {};
    if (auto status = write_bytes(fd, path, w.offset, w.bytes, w.what); !status) {
      // Nothing references prepared bytes yet: cut them off and the file is as it was.
      if (truncate_to(fd, old_size)) return status;
      // The file still reads as before (nothing points past its old end), but it kept the bytes: say so.
      Error error = status.error();
      error.what += errno_text("; the bytes written past the old end could not be cut off");
      return error;
    }
    prepared = true;
  }
  // Prepared bytes (appended, or unused strings) must be durable before anything points at them.
  if (prepared) RUNPATCH_CHECK(barrier());
  // A staged commit: the interim header must be durable before the front is rewritten,
  // and the front before the header switches back to it.
  bool staged = has_phase(plan, WritePhase::Switch);
  for (auto phase : {WritePhase::Commit, WritePhase::Cleanup, WritePhase::Switch}) {
    if (staged && phase == WritePhase::Switch) RUNPATCH_CHECK(barrier());
    RUNPATCH_TRY(bool going, write_phase(fd, path, plan, phase, budget));
    if (!going) return {};
    if (staged && phase == WritePhase::Commit) RUNPATCH_CHECK(barrier());
  }
  // Past the new end: an interrupted edit's tail, or a staged commit's interim
  // table. Nothing references it any more.
  if (plan.new_size < written_end && !truncate_to(fd, plan.new_size))
    return make_error(path, errno_text("cannot cut off bytes past the edited file's end"));
  return barrier();
}

}  // namespace runpatch
