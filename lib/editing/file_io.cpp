#include "editing/file_io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "reading/file_checks.hpp"

namespace runpatch {

namespace {

Status write_all(int fd, const std::string& path, uint64_t offset, const std::vector<uint8_t>& bytes, const std::string& what) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(path, errno_text("cannot write " + what, n < 0 ? errno : ENOSPC), offset + done);
    done += static_cast<size_t>(n);
  }
  return {};
}

Status sync(int fd, const std::string& path) {
  if (::fdatasync(fd) != 0) return make_error(path, errno_text("cannot sync"));
  return {};
}

// The edited copy is what could not be created, in dest's directory; when the
// directory is the obstacle, editing the file itself would still work.
std::string cannot_create_copy_text(const std::string& src, const std::string& dest, int err) {
  std::filesystem::path path(dest);
  std::string dir = path.has_parent_path() ? path.parent_path().string() : ".";
  std::string text = errno_text("cannot create the edited copy in " + dir + " (it is written there, then renamed to " +
                                    path.filename().string() + ")",
                                err);
  if (src == dest && (err == EACCES || err == EPERM))
    text += "; --in-place edits the file itself and needs no write access to its directory";
  return text;
}

}  // namespace

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

Status apply_plan_to_copy(int fd, const std::string& path, const EditPlan& plan) {
  for (const auto& w : plan.writes) RUNPATCH_CHECK(write_all(fd, path, w.offset, w.bytes, w.what));
  return {};
}

Status replace_with(const std::string& temp, const std::string& dest, int temp_fd) {
  RUNPATCH_CHECK(sync(temp_fd, temp));
  if (::rename(temp.c_str(), dest.c_str()) != 0)
    return make_error(dest, errno_text("cannot rename the edited copy into place"));
  // The rename itself is durable only once the directory is synced.
  std::string dir = std::filesystem::path(dest).parent_path().string();
  UniqueFd dir_fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
  return {};
}

Expected<std::pair<UniqueFd, std::string>> copy_to_temporary(const std::string& src, const std::string& dest, bool keep_owner) {
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return make_error(src, errno_text("cannot open"));
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return make_error(src, errno_text("cannot stat"));
  std::string temp;
  UniqueFd out;
  std::random_device random;
  for (int attempt = 0; attempt < 100 && out.get() < 0; ++attempt) {
    temp = dest + ".runpatch-" + std::to_string(random());
    out = UniqueFd(::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777));
    if (out.get() < 0 && errno != EEXIST) return make_error(dest, cannot_create_copy_text(src, dest, errno));
  }
  if (out.get() < 0) return make_error(dest, "cannot create a temporary file next to it");
  // copy_file_range lets the kernel (or a reflink-capable filesystem) do the copy.
  for (off_t left = st.st_size; left > 0;) {
    ssize_t n = ::copy_file_range(in.get(), nullptr, out.get(), nullptr, static_cast<size_t>(left), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::unlink(temp.c_str());
      return make_error(dest, errno_text("cannot copy", err));
    }
    left -= n;
  }
  ::fchmod(out.get(), st.st_mode & 07777);  // umask must not narrow the mode
  // A replacement keeps the owner (best effort: only root may give files away).
  if (keep_owner && ::fchown(out.get(), st.st_uid, st.st_gid) != 0) {}
  return std::make_pair(std::move(out), temp);
}

Status apply_plan(int fd, const std::string& path, const EditPlan& plan, uint64_t old_size,
                  std::optional<size_t> stop_after_writes) {
  size_t budget = stop_after_writes.value_or(plan.writes.size());
  bool appended = false;
  for (const auto& w : plan.writes) {
    if (w.phase != WritePhase::Prepare) continue;
    if (budget-- == 0) return {};
    if (auto status = write_all(fd, path, w.offset, w.bytes, w.what); !status) {
      // Nothing references prepared bytes yet: cut them off and the file is as it was.
      if (::ftruncate(fd, static_cast<off_t>(old_size)) != 0) {}
      return status;
    }
    appended = appended || w.offset + w.bytes.size() > old_size;
  }
  // Appended data must be durable before any header points at it.
  if (appended) RUNPATCH_CHECK(sync(fd, path));
  for (auto phase : {WritePhase::Commit, WritePhase::Cleanup}) {
    for (const auto& w : plan.writes) {
      if (w.phase != phase) continue;
      if (budget-- == 0) return {};
      RUNPATCH_CHECK(write_all(fd, path, w.offset, w.bytes, w.what));
    }
  }
  return sync(fd, path);
}

}  // namespace runpatch
