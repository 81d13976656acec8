#include "runpatch/editing/commit_group.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

#include "editing/commit_steps.hpp"
#include "reading/file_checks.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {

namespace {

// Each pending edit holds up to three descriptors (its lock, an edited copy,
// the copy's directory); a quarter of the limit stays for everything else.
size_t pending_capacity() {
  struct rlimit limit {};
  rlim_t soft = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_cur : 1024;
  if (soft == RLIM_INFINITY) soft = 1 << 20;
  return std::max<size_t>(8, size_t(soft) * 3 / 4 / 3);
}

struct Synced {
  const PendingCommit* pending;
  size_t step;
};

}  // namespace

struct CommitGroup::State {
  std::atomic<bool> durable{true};  // threads add edits while one may switch it on
  bool durable_by_file = false;     // Auto: durable from the first file of the running system on
  Barrier barrier = Barrier::FileSystem;
  size_t capacity = pending_capacity();
  uint64_t max_held_bytes = kDefaultMaxHeldBytes;
  uint64_t held_bytes = 0;             // of the pending edits
  std::mutex mutex;                    // pending, failures, the test budget
  std::mutex committing;               // one commit at a time
  std::vector<PendingCommit> pending;  // the first step of each already ran
  std::vector<CommitFailure> failures;
  std::atomic<size_t> barriers{0};
  std::optional<size_t> steps_left;  // testing: a crash after so many steps
  bool stopped = false;

  // Whether the (simulated) process still runs: takes one step of the test budget.
  bool take_step() {
    std::lock_guard<std::mutex> guard(mutex);
    if (stopped) return false;
    if (steps_left && (*steps_left)-- == 0) stopped = true;
    return !stopped;
  }

  Status run_step(const PendingCommit& p, size_t step) {
    if (!take_step()) return {};
    return p.steps[step].run();
  }

  bool is_stopped() {
    std::lock_guard<std::mutex> guard(mutex);
    return stopped;
  }

  void fail(const PendingCommit& p, Error error) {
    std::lock_guard<std::mutex> guard(mutex);
    failures.push_back({p.ticket, std::move(error)});
  }

  // One barrier after step i of the files in `ran`: the ones it could not make durable fail.
  std::vector<bool> sync(const std::vector<Synced>& ran);
  std::vector<bool> sync_file_systems(const std::vector<Synced>& ran);
  std::vector<bool> sync_each_file(const std::vector<Synced>& ran);
  void commit_pending();
};

std::vector<bool> CommitGroup::State::sync_file_systems(const std::vector<Synced>& ran) {
  std::map<dev_t, int> one_fd_per_device;
  std::vector<dev_t> device(ran.size());
  for (size_t i = 0; i < ran.size(); ++i) {
    struct stat st {};
    int fd = ran[i].pending->steps[ran[i].step].sync_fd;
    if (fd >= 0 && ::fstat(fd, &st) == 0) one_fd_per_device.emplace(device[i] = st.st_dev, fd);
  }
  std::map<dev_t, int> failed;  // device -> errno
  for (const auto& [dev, fd] : one_fd_per_device)
    if (::syncfs(fd) != 0) failed[dev] = errno;
  std::vector<bool> ok(ran.size(), true);
  for (size_t i = 0; i < ran.size(); ++i)
    if (auto it = failed.find(device[i]); it != failed.end()) {
      ok[i] = false;
      fail(*ran[i].pending, system_error(ran[i].pending->path, "cannot sync its file system", it->second));
    }
  return ok;
}

std::vector<bool> CommitGroup::State::sync_each_file(const std::vector<Synced>& ran) {
  std::vector<char> ok(ran.size(), 1);
  parallel_for(ran.size(), std::thread::hardware_concurrency(), [&](size_t i) {
    auto status = sync_step(ran[i].pending->steps[ran[i].step], ran[i].pending->path);
    if (status) return;
    ok[i] = 0;
    fail(*ran[i].pending, status.error());
  });
  return {ok.begin(), ok.end()};
}

std::vector<bool> CommitGroup::State::sync(const std::vector<Synced>& ran) {
  if (ran.empty() || is_stopped()) return std::vector<bool>(ran.size(), true);
  ++barriers;
  return barrier == Barrier::FileSystem ? sync_file_systems(ran) : sync_each_file(ran);
}

// Step i of every pending edit, then one barrier; a file whose step or
// barrier failed takes no further step (it stays in the state it reached).
void CommitGroup::State::commit_pending() {
  std::lock_guard<std::mutex> one_at_a_time(committing);
  std::vector<PendingCommit> batch;
  {
    std::lock_guard<std::mutex> guard(mutex);
    batch.swap(pending);
    held_bytes = 0;
  }
  std::vector<bool> going(batch.size(), true);
  size_t steps = 0;
  for (const auto& p : batch) steps = std::max(steps, p.steps.size());
  for (size_t step = 0; step < steps; ++step) {
    std::vector<Synced> ran;
    std::vector<size_t> which;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!going[i] || step >= batch[i].steps.size()) continue;
      // The first step ran when the edit joined the group.
      if (step > 0) {
        if (auto status = run_step(batch[i], step); !status) {
          going[i] = false;
          fail(batch[i], status.error());
          continue;
        }
      }
      ran.push_back({&batch[i], step});
      which.push_back(i);
    }
    std::vector<bool> synced = sync(ran);
    for (size_t k = 0; k < which.size(); ++k) going[which[k]] = going[which[k]] && synced[k];
  }
}

CommitGroup::CommitGroup(Durability durability, Barrier barrier, uint64_t max_held_bytes)
    : state_(std::make_unique<State>()) {
  state_->durable = durability == Durability::Sync;
  state_->durable_by_file = durability == Durability::Auto;
  state_->barrier = barrier;
  state_->max_held_bytes = max_held_bytes;
}

CommitGroup::~CommitGroup() {
  state_->commit_pending();
  assert(state_->failures.empty() && "a commit group's failures were never reported: call commit()");
}

Status CommitGroup::add(PendingCommit pending) {
  if (pending.steps.empty()) return {};
  if (state_->durable_by_file && !state_->durable && syncs(Durability::Auto, pending.path)) {
    // Files edited before (not the system's) were committed without waiting; from here on, barriers.
    state_->durable = true;
  }
  if (!state_->durable) {
    // No barriers to share: committed at once, in the same order.
    for (size_t step = 0; step < pending.steps.size(); ++step) RUNPATCH_CHECK(state_->run_step(pending, step));
    return {};
  }
  RUNPATCH_CHECK(state_->run_step(pending, 0));
  bool full = false;
  {
    std::lock_guard<std::mutex> guard(state_->mutex);
    state_->held_bytes += pending.held_bytes;
    state_->pending.push_back(std::move(pending));
    full = state_->pending.size() >= state_->capacity || state_->held_bytes >= state_->max_held_bytes;
  }
  if (full) state_->commit_pending();
  return {};
}

void CommitGroup::commit_before_waiting() { state_->commit_pending(); }

std::vector<CommitFailure> CommitGroup::commit() {
  state_->commit_pending();
  std::lock_guard<std::mutex> guard(state_->mutex);
  return std::exchange(state_->failures, {});
}

size_t CommitGroup::barriers() const { return state_->barriers; }

void CommitGroup::stop_after_steps_for_testing(size_t steps) { state_->steps_left = steps; }

}  // namespace runpatch
