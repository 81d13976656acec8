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

}  // namespace

Status write_bytes(int fd, const std::string& path, uint64_t offset, std::span<const uint8_t> bytes,
                   const std::string& what) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return system_error(path, "cannot write " + what, n < 0 ? errno : ENOSPC, offset + done);
    done += static_cast<size_t>(n);
  }
  return {};
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
  if (::fstat(fd, &st) != 0) return system_error(path, "cannot stat");
  if ((st.st_mode & 07777) != mode_ && ::fchmod(fd, mode_) != 0)
    return system_error(path, "cannot restore the set-ID bits the write cleared");
  if (capability_ && ::fsetxattr(fd, kCapabilityAttribute, capability_->data(), capability_->size(), 0) != 0)
    return system_error(path, "cannot restore the file capabilities the write cleared");
  return {};
}

namespace {

Status lock_exclusively(int fd, const std::string& path, const std::function<void()>& before_waiting) {
  for (int pause_ms = 1;;) {
    if (::flock(fd, before_waiting ? LOCK_EX | LOCK_NB : LOCK_EX) == 0) return {};
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK || !before_waiting) return system_error(path, "cannot lock");
    before_waiting();
    ::usleep(useconds_t(pause_ms) * 1000);
    pause_ms = std::min(pause_ms * 2, 50);
  }
}

}  // namespace

Expected<UniqueFd> open_for_edit(const std::string& path, bool writable, const std::function<void()>& before_waiting) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    UniqueFd fd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | kOpenWithoutWaiting));
    if (fd.get() < 0) return system_error(path, writable ? "cannot open for writing" : "cannot open");
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
      return make_error(ErrorCode::NotRegularFile, path, "not a regular file");
    RUNPATCH_CHECK(lock_exclusively(fd.get(), path, before_waiting));
    // The previous lock holder may have renamed an edited copy over the name:
    // then our lock is on the old inode, and edits must go to the new one.
    struct stat now {};
    if (::stat(path.c_str(), &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) return fd;
  }
  return make_error(ErrorCode::FileChanged, path, "the file keeps being replaced while waiting for its lock");
}

namespace {

// What the steps of an edit written into the file share.
struct IntoFileState {
  UniqueFd fd;
  std::string path;
  EditPlan plan;
  uint64_t old_size = 0;
  size_t budget = 0;  // writes left before a simulated crash
  bool stopped = false;
  PrivilegesKept kept;
};

// Writes the plan's writes of one phase; stops (as if killed) once the test budget is spent.
Status write_phase(IntoFileState& s, WritePhase phase) {
  for (auto& w : s.plan.writes) {
    if (w.phase != phase || s.stopped) continue;
    if (s.budget == 0) {
      s.stopped = true;
      return {};
    }
    --s.budget;
    RUNPATCH_CHECK(write_bytes(s.fd.get(), s.path, w.offset, w.bytes, w.description()));
  }
  return {};
}

// Prepared bytes (appended, or unused strings) are referenced by nothing yet:
// after a failed write, cutting them off leaves the file as it was.
Status prepare(IntoFileState& s) {
  auto status = write_phase(s, WritePhase::Prepare);
  std::erase_if(s.plan.writes, [](const PlannedWrite& w) { return w.phase == WritePhase::Prepare; });
  if (status || truncate_to(s.fd.get(), s.old_size)) return status;
  // The file still reads as before (nothing points past its old end), but it kept the bytes: say so.
  Error error = status.error();
  error.what += errno_text("; the bytes written past the old end could not be cut off");
  return error;
}

uint64_t written_end(const EditPlan& plan, uint64_t old_size) {
  uint64_t end = old_size;
  for (const auto& w : plan.writes) end = std::max<uint64_t>(end, w.offset + w.bytes.size());
  return end;
}

// Past the new end: an interrupted edit's tail, or a staged commit's interim
// table, which the state before the last step may still reference.
Status cut_to_new_size(IntoFileState& s) {
  if (s.stopped) return {};
  if (!truncate_to(s.fd.get(), s.plan.new_size))
    return system_error(s.path, "cannot cut off bytes past the edited file's end");
  return {};
}

}  // namespace

PendingCommit commit_into_file(UniqueFd fd, const std::string& path, EditPlan plan, uint64_t old_size,
                               std::optional<size_t> stop_after_writes) {
  auto s = std::make_shared<IntoFileState>();
  s->kept = PrivilegesKept::read(fd.get());
  s->fd = std::move(fd);
  s->path = path;
  s->budget = stop_after_writes.value_or(plan.writes.size());
  s->old_size = old_size;
  s->plan = std::move(plan);
  PendingCommit pending{path, {}, s};
  auto add = [&](std::function<Status()> run) {
    pending.steps.push_back({std::move(run), s->fd.get(), CommitStep::Sync::Data});
  };
  if (has_phase(s->plan, WritePhase::Prepare)) add([s] { return prepare(*s); });
  // Commit, cleanup and a staged commit's switch and settling: each durable
  // before the next, so that no power cut keeps a later one without an earlier.
  // A staged edit's placed bytes and its cleanup share a step: nothing orders them.
  for (auto phase : kWritePhases) {
    if (phase == WritePhase::Prepare || !has_phase(s->plan, phase)) continue;
    if (phase == WritePhase::Cleanup && has_phase(s->plan, WritePhase::Place)) continue;
    add([s, phase]() -> Status {
      RUNPATCH_CHECK(write_phase(*s, phase));
      return phase == WritePhase::Place ? write_phase(*s, WritePhase::Cleanup) : Status{};
    });
  }
  if (s->plan.new_size < written_end(s->plan, old_size)) add([s] { return cut_to_new_size(*s); });
  // After the last write: the kernel drops file capabilities and set-ID bits on every write.
  if (pending.steps.empty()) return pending;  // a plan without writes
  std::function<Status()> last = std::move(pending.steps.back().run);
  pending.steps.back().run = [s, last]() -> Status {
    RUNPATCH_CHECK(last());
    return s->kept.restore(s->fd.get(), s->path);
  };
  return pending;
}

}  // namespace runpatch
