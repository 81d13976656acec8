#include "editing/commit_steps.hpp"

#include <unistd.h>

#include <cerrno>

#include "reading/file_checks.hpp"

namespace runpatch {

Status sync_step(const CommitStep& step, const std::string& path) {
  if (step.sync_fd < 0) return {};
  switch (step.sync) {
    case CommitStep::Sync::Data:
      if (::fdatasync(step.sync_fd) != 0) return system_error(path, "cannot sync");
      return {};
    case CommitStep::Sync::Everything:
      if (::fsync(step.sync_fd) != 0) return system_error(path, "cannot sync");
      return {};
    case CommitStep::Sync::Directory:
      ::fsync(step.sync_fd);  // a directory that cannot be synced still holds the rename
      return {};
  }
  return {};
}

Status run_alone(PendingCommit& pending, bool durable) {
  for (const auto& step : pending.steps) {
    RUNPATCH_CHECK(step.run());
    if (durable) RUNPATCH_CHECK(sync_step(step, pending.path));
  }
  pending.state.reset();
  pending.lock = UniqueFd();
  return {};
}

}  // namespace runpatch
