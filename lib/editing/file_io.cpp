#include "editing/file_io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "reading/file_checks.hpp"

namespace runpatch {

namespace {

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

Status apply_plan(int fd, const std::string& path, const EditPlan& plan, uint64_t old_size,
                  std::optional<size_t> stop_after_writes) {
  size_t budget = stop_after_writes.value_or(plan.writes.size());
  bool prepared = false;
  for (const auto& w : plan.writes) {
    if (w.phase != WritePhase::Prepare) continue;
    if (budget-- == 0) return {};
    if (auto status = write_bytes(fd, path, w.offset, w.bytes, w.what); !status) {
      // Nothing references prepared bytes yet: cut them off and the file is as it was.
      if (::ftruncate(fd, static_cast<off_t>(old_size)) != 0) {
      }
      return status;
    }
    prepared = true;
  }
  // Prepared bytes (appended, or unused strings) must be durable before anything points at them.
  if (prepared) RUNPATCH_CHECK(sync(fd, path));
  for (auto phase : {WritePhase::Commit, WritePhase::Cleanup}) {
    for (const auto& w : plan.writes) {
      if (w.phase != phase) continue;
      if (budget-- == 0) return {};
      RUNPATCH_CHECK(write_bytes(fd, path, w.offset, w.bytes, w.what));
    }
  }
  // An interrupted edit's tail past the new end: nothing references it any more.
  if (plan.new_size < old_size && ::ftruncate(fd, static_cast<off_t>(plan.new_size)) != 0)
    return make_error(path, errno_text("cannot cut off an interrupted edit's bytes"));
  return sync(fd, path);
}

}  // namespace runpatch
