// The result of planning an edit: byte writes in three phases, so that the
// file is valid (old or new) between any two writes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/editing/edit_outcome.hpp"

namespace runpatch {

enum class WritePhase {
  Prepare,  // bytes nothing references yet: past the old end, unused string bytes
  Commit,   // the one write that switches the file from old to new (or to a staged edit's interim state)
  // A staged edit, its interim state committed: the final bytes written where
  // only the old state read them (the table at the front, a rebuilt segment).
  Place,
  Cleanup,  // zeroing bytes the new file no longer references; section headers (tools only)
  // A staged commit's last write: the ELF header switched from the interim
  // copy of the program header table to the table at the front
  // (staged_commit.hpp), or the dynamic entries from their strings' interim
  // place to their own (edit_planner.cpp).
  Switch,
  Settle,  // after a switch: zeroing what only the interim state referenced
};

// The order writes reach the file (and the planned image).
inline constexpr WritePhase kWritePhases[] = {WritePhase::Prepare, WritePhase::Commit, WritePhase::Place,
                                              WritePhase::Cleanup, WritePhase::Switch, WritePhase::Settle};

struct PlannedWrite {
  WritePhase phase;
  uint64_t offset;
  std::vector<uint8_t> bytes;
  WriteKind kind;
  std::string subject;  // the symbol a SymbolVersion write is for

  std::string description() const;
};

struct EditPlan {
  EditStrategy strategy = EditStrategy::Unchanged;
  std::vector<LayoutStep> layout;
  std::vector<PlannedWrite> writes;
  uint64_t new_size = 0;
  std::vector<EditWarning> warnings;
  // The bytes from here to the old end of the file are the tail of an edit
  // killed before its commit (nothing references them): this plan writes over
  // them, and the file is cut to new_size after the commit.
  std::optional<uint64_t> reclaimed_from;
  // The program header table stays at the front of the file and, where it
  // grew, with room after it for the table a later patchelf writes
  // (docs/editing.md §3). false: loaders accept the result; strip, eu-strip
  // or a later patchelf may not.
  bool fits_later_tools = true;
  // Whether the edited file carries a resolution-cache note; unset: as before.
  std::optional<bool> carries_resolution_cache;
  // Where the planner found the dynamic table; the verifier reads it the same way.
  DynamicSource dynamic_source = DynamicSource::Segment;
};

// The size of the unit a disk writes atomically on every device: one write
// inside such a sector survives a power cut whole or not at all.
inline constexpr uint64_t kAtomicSector = 512;

// The write that turns `before` into `after` (equal-sized copies of the
// bytes at `offset`): only the span where they differ; none when equal.
std::optional<PlannedWrite> changed_bytes_write(WritePhase phase, uint64_t offset, const std::vector<uint8_t>& before,
                                                const std::vector<uint8_t>& after, WriteKind kind);

// The writes that turn `before` into `after`: one per run of differing bytes,
// for changes scattered over a large table (dead strings zeroed) that one
// span would rewrite whole. Runs fewer than `joined_gap` equal bytes apart
// are joined (those bytes rewritten as they are: only where no other write
// of the plan lies).
std::vector<PlannedWrite> changed_runs_writes(WritePhase phase, uint64_t offset, const std::vector<uint8_t>& before,
                                              const std::vector<uint8_t>& after, WriteKind kind, size_t joined_gap = 0);

// Whether the plan's layout took that step.
inline bool has_layout_step(const EditPlan& plan, LayoutStep step) {
  return std::find(plan.layout.begin(), plan.layout.end(), step) != plan.layout.end();
}

// Whether the plan writes anything in that phase.
inline bool has_phase(const EditPlan& plan, WritePhase phase) {
  return std::any_of(plan.writes.begin(), plan.writes.end(), [&](const PlannedWrite& w) { return w.phase == phase; });
}

// Whether one write switches the file from old to new: exactly one Commit
// write, inside one sector. Prepare writes go where nothing reads yet, and
// Cleanup writes only to what tools read or nothing references, so a crash
// before that write leaves the old file and after it the new one.
inline bool commits_in_one_write(const EditPlan& plan) {
  const PlannedWrite* commit = nullptr;
  for (const auto& w : plan.writes) {
    if (w.phase != WritePhase::Commit) continue;
    if (commit) return false;
    commit = &w;
  }
  return commit && !commit->bytes.empty() &&
         commit->offset / kAtomicSector == (commit->offset + commit->bytes.size() - 1) / kAtomicSector;
}

}  // namespace runpatch
