// Edits of many files committed together: a run over a tree waits for the
// disk a constant number of times instead of several times per file
// (docs/editing.md §4, "Group commit").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runpatch/editing/edit_options.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

struct PendingCommit;  // lib/editing/commit_steps.hpp

// An edit of the group whose commit failed: the ticket its EditOptions gave
// (group_ticket), and the error naming its file.
struct CommitFailure {
  size_t ticket = 0;
  Error error;
};

// Each edit given EditOptions::group writes its first step (an appended
// tail, or a whole edited copy) as it is made and leaves the rest pending;
// commit() then runs step 1 of every pending edit, one barrier, step 2, one
// barrier, and so on. Every file goes through the same states as when edited
// alone, in the same order, so a crash (a kill, a power cut) at any moment
// leaves each file old or new. Thread-safe: edits may join from many threads.
// Without syncs (Durability, a Nix build) there are no barriers to share:
// each edit is committed at once. Auto: without syncs until a file of the
// running system joins (syncs() in edit_options.hpp), with barriers from then on.
class CommitGroup {
 public:
  // What one barrier does.
  enum class Barrier {
    FileSystem,  // syncfs once per file system the pending files are on
    EachFile,    // fdatasync (fsync) of every pending file, in parallel
  };

  // Edited copies wait for their rename beside the files they replace, each
  // taking disk space: past this many bytes of them the group commits and
  // starts again (a tree edited on copies would otherwise need twice its size).
  static constexpr uint64_t kDefaultMaxHeldBytes = uint64_t(512) << 20;

  explicit CommitGroup(Durability durability, Barrier barrier = Barrier::FileSystem,
                       uint64_t max_held_bytes = kDefaultMaxHeldBytes);
  ~CommitGroup();  // commits what is still pending; a failure commit() did not return is a bug (asserted)
  CommitGroup(const CommitGroup&) = delete;
  CommitGroup& operator=(const CommitGroup&) = delete;

  // Commits every pending edit. Returns the edits that failed, since the last
  // call, by their tickets, each error naming its file (which is then old, or
  // new without the later cleanup: docs/editing.md §4).
  std::vector<CommitFailure> commit();

  // How many barriers the group has run (for benches and tests).
  size_t barriers() const;

  // For the editor (lib/editing): runs the pending edit's first step now and
  // keeps the rest; commits the group when it holds as many files as the
  // descriptor limit allows, or max_held_bytes of edited copies. An error of
  // the first step is returned.
  Status add(PendingCommit pending);
  // For the editor: a lock it must wait for may be one of ours; commits them.
  void commit_before_waiting();

  // Testing only: run this many steps of the group in all, then stop as if killed.
  void stop_after_steps_for_testing(size_t steps);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace runpatch
