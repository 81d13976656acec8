#include "editing/replacement.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <vector>

#include "editing/file_io.hpp"
#include "reading/file_checks.hpp"

namespace runpatch {

namespace {

// The one name a copy made under dest's lock ever has: the lock serializes
// such editors, so a file by this name that the lock holder finds is debris.
std::string locked_copy_name(const std::string& dest) { return dest + ".runpatch-new"; }

std::string random_copy_name(const std::string& dest) {
  std::random_device random;
  return dest + ".runpatch-" + std::to_string(random()) + std::to_string(random());
}

std::string directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// The edited copy is what could not be created, in dest's directory; when the
// directory is the obstacle and the copy would replace the file itself,
// editing it in place would still work.
std::string cannot_create_copy_text(const std::string& dest, int err, bool replaces_the_file) {
  std::filesystem::path path(dest);
  std::string text = errno_text("cannot create the edited copy in " + directory_of(dest) +
                                    " (it is written there, then renamed to " + path.filename().string() + ")",
                                err);
  if (replaces_the_file && (err == EACCES || err == EPERM))
    text += "; without --atomic-copy the file itself is edited, which needs no write access to its directory";
  return text;
}

// The edited copy while it is built. Unnamed (O_TMPFILE) until commit, so a
// process killed while building it leaves nothing behind.
class TemporaryCopy {
 public:
  static Expected<TemporaryCopy> create(const std::string& dest, DestLock lock) {
    TemporaryCopy copy(dest, lock);
    copy.fd_ = UniqueFd(::open(directory_of(dest).c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (copy.fd_.get() >= 0) return copy;
    // Where the file system (or an old kernel: EISDIR) has no O_TMPFILE, a
    // named file takes its place; a kill while it is written leaves that name
    // behind (never removed by a later edit: it may be somebody else's file).
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
      return make_error(ErrorCode::SystemCall, dest, cannot_create_copy_text(dest, errno, lock == DestLock::Held));
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = copy.next_name(attempt);
      copy.fd_ = UniqueFd(::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (copy.fd_.get() >= 0) {
        copy.named_ = name;
        return copy;
      }
      if (errno != EEXIST)
        return make_error(ErrorCode::SystemCall, dest, cannot_create_copy_text(dest, errno, lock == DestLock::Held));
    }
    return make_error(ErrorCode::SystemCall, dest, "cannot create a temporary file next to it");
  }

  TemporaryCopy(TemporaryCopy&& other) noexcept
      : dest_(std::move(other.dest_)), lock_(other.lock_), fd_(std::move(other.fd_)), named_(std::move(other.named_)) {
    other.named_.clear();
  }
  TemporaryCopy& operator=(TemporaryCopy&&) = delete;
  ~TemporaryCopy() {
    if (!named_.empty()) ::unlink(named_.c_str());
  }

  int fd() const { return fd_.get(); }

  // Names the copy beside dest and renames it over dest.
  Status rename_over_dest() {
    if (named_.empty()) RUNPATCH_CHECK(link_unnamed());
    if (::rename(named_.c_str(), dest_.c_str()) != 0)
      return system_error(dest_, "cannot rename the edited copy into place");
    named_.clear();
    return {};
  }

 private:
  TemporaryCopy(std::string dest, DestLock lock) : dest_(std::move(dest)), lock_(lock) {}

  // NAME.runpatch-new first; a file by that name (a leftover, or somebody
  // else's) is never removed or replaced: the next try takes a random name.
  std::string next_name(int attempt) const {
    return lock_ == DestLock::Held && attempt == 0 ? locked_copy_name(dest_) : random_copy_name(dest_);
  }

  // Linux cannot link an inode over an existing name (AT_LINK_REPLACE was
  // never merged), so the copy gets a name of its own for the microseconds
  // until the rename.
  Status link_unnamed() {
    std::string proc = "/proc/self/fd/" + std::to_string(fd_.get());
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = next_name(attempt);
      // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the /proc link works for everyone.
      int done = ::linkat(fd_.get(), "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH);
      if (done != 0 && errno != EEXIST)
        done = ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW);
      if (done == 0) {
        named_ = name;
        return {};
      }
      if (errno != EEXIST) return system_error(dest_, "cannot link the edited copy as " + name);
    }
    return make_error(ErrorCode::SystemCall, dest_, "cannot find a free name for the edited copy");
  }

  std::string dest_;
  DestLock lock_;
  UniqueFd fd_;
  std::string named_;  // the copy's name while it has one
};

Status copy_by_read_write(int in, int out, off_t from, off_t size, const std::string& src, const std::string& dest) {
  std::vector<uint8_t> buffer(1 << 20);
  for (off_t at = from; at < size;) {
    ssize_t n = ::pread(in, buffer.data(), std::min<off_t>(size - at, off_t(buffer.size())), at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return system_error(src, "cannot read", errno, uint64_t(at));
    if (n == 0) return make_error(ErrorCode::FileChanged, src, "the file shrank while it was copied", uint64_t(at));
    RUNPATCH_CHECK(write_bytes(out, dest, uint64_t(at), {buffer.data(), size_t(n)}, "the copy"));
    at += n;
  }
  return {};
}

// copy_file_range lets the kernel (or a reflinking file system) copy; across
// file systems (EXDEV, before Linux 5.3 and again since 5.19), on file systems
// without it (EINVAL, EOPNOTSUPP, ENOSYS) or where it copies nothing, plain
// reads and writes do.
Status copy_contents(int in, int out, off_t size, const std::string& src, const std::string& dest) {
  off_t in_at = 0, out_at = 0;
  while (in_at < size) {
    ssize_t n = ::copy_file_range(in, &in_at, out, &out_at, size_t(size - in_at), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) continue;
    if (n == 0 || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)
      return copy_by_read_write(in, out, in_at, size, src, dest);
    return system_error(dest, "cannot copy " + src);
  }
  return {};
}

// Extended attributes of path (security.* such as file capabilities or
// SELinux labels, user.*, ACLs) onto fd. A file system without them
// (ENOTSUP) has none to keep or cannot take them: skipped.
Status copy_xattrs(const std::string& path, int fd, const std::string& dest) {
  ssize_t size = ::listxattr(path.c_str(), nullptr, 0);
  if (size < 0 && (errno == ENOTSUP || errno == ENOSYS)) return {};
  std::vector<char> names(size_t(std::max<ssize_t>(size, 0)));
  if (size > 0) size = ::listxattr(path.c_str(), names.data(), names.size());
  if (size < 0) return system_error(path, "cannot list extended attributes");
  for (const char* name = names.data(); name < names.data() + size; name += std::strlen(name) + 1) {
    ssize_t length = ::getxattr(path.c_str(), name, nullptr, 0);
    std::vector<char> value(size_t(std::max<ssize_t>(length, 0)));
    if (length > 0) length = ::getxattr(path.c_str(), name, value.data(), value.size());
    if (length < 0) return system_error(path, std::string("cannot read extended attribute ") + name);
    if (::fsetxattr(fd, name, value.data(), size_t(length), 0) != 0 && errno != ENOTSUP)
      return system_error(dest, std::string("cannot keep extended attribute ") + name);
  }
  return {};
}

// What the replacement carries over from the file it replaces. The owner
// first: chown clears set-user-ID bits and file capabilities, so the mode and
// the attributes come after it.
Status keep_attributes(int fd, const std::string& dest, const struct stat& st) {
  if (::fchown(fd, st.st_uid, st.st_gid) != 0)
    return system_error(dest, "cannot give the edited copy the file's owner (uid " + std::to_string(st.st_uid) +
                                  ", gid " + std::to_string(st.st_gid) + ")");
  if (::fchmod(fd, st.st_mode & 07777) != 0) return system_error(dest, "cannot set the mode");
  return copy_xattrs(dest, fd, dest);
}

// patchelf opens its output and writes: a character device or a FIFO takes
// the whole edited file in order and stays what it is.
Status write_through(int in, off_t size, const std::string& source, const std::string& dest, const EditPlan& plan) {
  std::vector<uint8_t> image(std::max<uint64_t>(plan.new_size, uint64_t(size)));
  for (off_t at = 0; at < size;) {
    ssize_t n = ::pread(in, image.data() + at, size_t(size - at), at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return system_error(source, "cannot read", n < 0 ? errno : EIO, uint64_t(at));
    at += n;
  }
  for (const auto& w : plan.writes) {
    if (w.offset + w.bytes.size() > image.size()) image.resize(w.offset + w.bytes.size());
    std::copy(w.bytes.begin(), w.bytes.end(), image.begin() + std::ptrdiff_t(w.offset));
  }
  if (plan.reclaimed_from) image.resize(plan.new_size);
  UniqueFd out(::open(dest.c_str(), O_WRONLY | O_CLOEXEC));
  if (out.get() < 0) return system_error(dest, "cannot open for writing");
  for (size_t done = 0; done < image.size();) {
    ssize_t n = ::write(out.get(), image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return system_error(dest, "cannot write", n < 0 ? errno : ENOSPC, done);
    done += size_t(n);
  }
  return {};
}

}  // namespace

bool copy_can_keep_owner(const struct stat& st) {
  if (::geteuid() == 0) return true;
  if (st.st_uid != ::geteuid()) return false;
  if (st.st_gid == ::getegid()) return true;
  std::vector<gid_t> groups(size_t(std::max(::getgroups(0, nullptr), 0)));
  int n = ::getgroups(int(groups.size()), groups.data());
  return std::find(groups.begin(), groups.begin() + std::max(n, 0), st.st_gid) != groups.begin() + std::max(n, 0);
}

bool copy_can_be_created(const std::string& path) {
  return ::faccessat(AT_FDCWD, directory_of(path).c_str(), W_OK | X_OK, AT_EACCESS) == 0;
}

Status check_may_write(const std::string& path) {
  if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) == 0 || errno == ETXTBSY) return {};
  return system_error(path, "cannot open for writing");
}

namespace {

// What the steps of a replacement share.
struct ReplacementState {
  std::string source, dest;
  UniqueFd in;
  off_t size = 0;
  EditPlan plan;
  std::optional<struct stat> replaced;  // the file the copy replaces, if any
  mode_t source_mode = 0;
  std::optional<TemporaryCopy> copy;
  UniqueFd directory;
};

Status build_copy(ReplacementState& s) {
  int out = s.copy->fd();
  RUNPATCH_CHECK(copy_contents(s.in.get(), out, s.size, s.source, s.dest));
  s.in = UniqueFd();
  for (const auto& w : s.plan.writes) RUNPATCH_CHECK(write_bytes(out, s.dest, w.offset, w.bytes, w.description()));
  // The new segment was written over an earlier one (or an interrupted tail) and ends before the old end.
  if (s.plan.reclaimed_from && ::ftruncate(out, static_cast<off_t>(s.plan.new_size)) != 0)
    return system_error(s.dest, "cannot cut the edited copy to its size");
  s.plan = EditPlan();
  // After the last write: the kernel drops file capabilities and set-ID bits on every write.
  if (s.replaced) return keep_attributes(out, s.dest, *s.replaced);
  if (::fchmod(out, s.source_mode & 07777) != 0) return system_error(s.dest, "cannot set the mode");
  return {};
}

// Steps: build the copy (durable as a whole inode), then rename it over dest
// (durable once the directory is).
PendingCommit replacement_steps(std::shared_ptr<ReplacementState> s) {
  PendingCommit pending{s->dest, {}, s};
  pending.held_bytes = std::max<uint64_t>(uint64_t(s->size), s->plan.new_size);
  pending.steps.push_back({[s] { return build_copy(*s); }, s->copy->fd(), CommitStep::Sync::Everything});
  pending.steps.push_back(
      {[s] { return s->copy->rename_over_dest(); }, s->directory.get(), CommitStep::Sync::Directory});
  return pending;
}

}  // namespace

Expected<PendingCommit> commit_by_copy(const std::string& source, const std::string& dest_name, EditPlan plan,
                                       DestLock lock) {
  // patchelf writes through a symlink: its target is replaced, not the link.
  std::error_code ec;
  auto s = std::make_shared<ReplacementState>();
  s->source = source;
  s->dest = dest_name;
  if (std::filesystem::is_symlink(dest_name, ec)) {
    auto target = std::filesystem::canonical(dest_name, ec);
    if (!ec) s->dest = target.string();
  }
  s->in = UniqueFd(::open(source.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting));
  if (s->in.get() < 0) return system_error(source, "cannot open");
  struct stat src {};
  if (::fstat(s->in.get(), &src) != 0) return system_error(source, "cannot stat");
  s->size = src.st_size;
  s->source_mode = src.st_mode;
  s->plan = std::move(plan);
  struct stat old {};
  if (::stat(s->dest.c_str(), &old) == 0) {
    if (!S_ISREG(old.st_mode)) {
      PendingCommit through{s->dest, {}, s};
      through.steps.push_back({[s] { return write_through(s->in.get(), s->size, s->source, s->dest, s->plan); }});
      return through;
    }
    RUNPATCH_CHECK(check_may_write(s->dest));
    s->replaced = old;
  }
  RUNPATCH_TRY(TemporaryCopy copy, TemporaryCopy::create(s->dest, lock));
  s->copy.emplace(std::move(copy));
  s->directory = UniqueFd(::open(directory_of(s->dest).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return replacement_steps(s);
}

}  // namespace runpatch
