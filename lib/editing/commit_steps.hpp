// An edit's remaining work as steps, each of which must be durable before the
// next begins (docs/editing.md §4, "Durability"). Alone, a step is followed
// by its own sync; in a CommitGroup, step i of every file by one barrier for
// all of them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "editing/unique_fd.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

struct CommitStep {
  std::function<Status()> run;
  // What a barrier after the step syncs when files are synced one by one.
  int sync_fd = -1;
  enum class Sync {
    Data,        // fdatasync: bytes written into an existing file
    Everything,  // fsync: a new inode, its mode and owner included
    Directory,   // fsync of the directory holding a renamed name (some file systems refuse: ignored)
  } sync = Sync::Data;
};

struct PendingCommit {
  std::string path;  // names the file in errors
  std::vector<CommitStep> steps;
  // Descriptors and bytes the steps use, and the edit's lock (flock on a
  // descriptor of the file): held until the last step ran.
  std::shared_ptr<void> state;
  UniqueFd lock;
  // Disk space the pending steps hold: an edited copy not yet renamed over
  // its file (the old file still takes its own).
  uint64_t held_bytes = 0;
  size_t ticket = 0;  // EditOptions::group_ticket: names the edit among the group's failures
};

// The barrier after step, for that step's file alone.
Status sync_step(const CommitStep& step, const std::string& path);

// Runs the steps in order, each followed by its barrier when durable.
Status run_alone(PendingCommit& pending, bool durable);

}  // namespace runpatch
