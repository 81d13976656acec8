#include <algorithm>
#include <atomic>

#include "runpatch/editing/commit_group.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/policy/policy.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {

namespace {

// A file whose edit failed at the group's commit is old (or new without its
// cleanup): reported as failed, as if its edit had. Tickets are file indices.
void record_commit_failures(std::vector<CommitFailure> failures, PolicyRun& run) {
  for (auto& failure : failures) {
    auto& file = run.files.at(failure.ticket);
    file.status = PolicyFileOutcome::Status::Failed;
    file.error = std::move(failure.error);
  }
}

}  // namespace

PolicyRun apply_policy_to_paths(const RunpathPolicy& policy, const std::vector<std::filesystem::path>& paths,
                                const ApplyOptions& apply) {
  TreeListing listing = list_elf_files(paths);
  PolicyRun run;
  run.problems = std::move(listing.problems);
  run.files.resize(listing.elf_files.size());
  EditRequest request = policy_request(policy);
  request.resolution_cache = apply.resolution_cache;
  EditOptions options = apply.edit;
  // One barrier per commit step for the whole tree, not per file.
  CommitGroup group(options.durability);
  if (!options.dry_run) options.group = &group;
  auto apply_one = [&](size_t i) {
    auto& out = run.files[i];
    const auto& path = listing.elf_files[i];
    out.path = path.string();
    auto info = read_elf_info(path);
    if (!info) {
      out.status = PolicyFileOutcome::Status::Failed;
      out.error = info.error();
      return;
    }
    if (!info->has_dynamic || info->type == 1 /*ET_REL*/) {
      out.status = PolicyFileOutcome::Status::SkippedStatic;
      return;
    }
    out.old_runpath = effective_runpath(*info);
    EditOptions own = options;
    own.group_ticket = i;
    auto outcome = edit_elf_file(path, request, own);
    if (!outcome) {
      out.status = PolicyFileOutcome::Status::Failed;
      out.error = outcome.error();
      return;
    }
    out.new_runpath = runpath_after(*outcome);  // what the edit computed and wrote, not a second computation
    out.warnings = std::move(outcome->warnings);
    out.status = outcome->strategy == EditStrategy::Unchanged ? PolicyFileOutcome::Status::Unchanged
                                                              : PolicyFileOutcome::Status::Edited;
  };
  std::atomic<size_t> done{0};
  parallel_for(listing.elf_files.size(), apply.threads, [&](size_t i) {
    apply_one(i);
    if (apply.progress) apply.progress(done.fetch_add(1) + 1, listing.elf_files.size());
  });
  record_commit_failures(group.commit(), run);
  for (const auto& f : run.files) {
    switch (f.status) {
      case PolicyFileOutcome::Status::Edited: ++run.edited; break;
      case PolicyFileOutcome::Status::Unchanged: ++run.unchanged; break;
      case PolicyFileOutcome::Status::SkippedStatic: ++run.skipped_static; break;
      case PolicyFileOutcome::Status::Failed: ++run.failed; break;
    }
  }
  return run;
}

}  // namespace runpatch
