#include <fcntl.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

#include "editing/edit_planner.hpp"
#include "editing/edit_verifier.hpp"
#include "editing/file_io.hpp"
#include "editing/replacement.hpp"
#include "reading/file_checks.hpp"
#include "reading/elf_dispatch.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "runpatch/resolving/resolution_cache.hpp"

namespace runpatch {

namespace {

struct Planned {
  EditOutcome outcome;
  EditPlan plan;
};

void spoil_plan_for_testing(EditPlan& plan, const EditOptions& options) {
  if (options.drop_writes_for_testing)
    std::erase_if(plan.writes, [&](const PlannedWrite& w) { return w.what == *options.drop_writes_for_testing; });
  if (options.inject_write_for_testing) {
    const auto& [offset, bytes] = *options.inject_write_for_testing;
    plan.writes.push_back({WritePhase::Commit, offset, bytes, "injected write"});
  }
}

Expected<Planned> plan_edit(int fd, const std::string& path, const EditRequest& request, const EditOptions& options) {
  RUNPATCH_TRY(MappedFile mapping, MappedFile::map(fd, path));
  Planned p;
  EditOutcome& outcome = p.outcome;
  RUNPATCH_TRY(outcome.before, read_elf_info(mapping.bytes(), path));
  RUNPATCH_TRY(p.plan, visit_elf(mapping.bytes(), path,
                                 [&](const auto& view) { return plan_edit(view, outcome.before, options, request); }));
  spoil_plan_for_testing(p.plan, options);
  RUNPATCH_CHECK(verify_edit_plan(mapping.bytes(), path, outcome.before, request, p.plan));
  outcome.strategy = p.plan.strategy;
  outcome.layout_description = p.plan.layout_description;
  outcome.old_size = mapping.bytes().size();
  outcome.new_size = p.plan.new_size;
  outcome.warnings = p.plan.warnings;
  for (const auto& w : p.plan.writes) outcome.writes.push_back({w.offset, w.bytes.size(), w.what});
  return p;
}

// How much more a layout that one header write commits may grow the file
// than the smallest layout, before the copy path is the better deal: the
// moved program header table sits at a binutils page offset (4 KiB on x86,
// 64 KiB on aarch64 and ppc64), and every byte is closure size.
constexpr uint64_t kCommitGrowthAllowance = 64 * 1024;

enum class WriteWay {
  IntoFile,  // writes into the file itself: one committing write, or --in-place phases
  Copy,      // an edited copy renamed over the file
};

struct Chosen {
  Planned planned;
  WriteWay way = WriteWay::Copy;
  std::optional<Planned> for_copy;  // the smaller layout, should the file turn out busy (ETXTBSY)
};

// The layout and the way to write it (docs/editing.md §4): committed by one
// write into the file where possible, otherwise the smallest layout, copied
// (or, when the file itself must be written, written in phases).
Expected<Chosen> choose_edit(int fd, const std::string& name, const EditRequest& request, const EditOptions& options,
                             bool must_write_in_place) {
  EditOptions smallest = options;
  smallest.in_place = must_write_in_place;
  if (options.atomic_copy) {
    RUNPATCH_TRY(Planned p, plan_edit(fd, name, request, smallest));
    return Chosen{std::move(p), WriteWay::Copy, std::nullopt};
  }
  EditOptions by_header = options;
  by_header.in_place = true;
  by_header.commit_in_elf_header = true;
  auto committed = plan_edit(fd, name, request, by_header);
  bool one_write =
      committed && (committed->plan.strategy == EditStrategy::Unchanged || commits_in_one_write(committed->plan));
  if (one_write && committed->plan.strategy != EditStrategy::Appended)
    return Chosen{std::move(*committed), WriteWay::IntoFile, std::nullopt};
  RUNPATCH_TRY(Planned small, plan_edit(fd, name, request, smallest));
  if (one_write && committed->plan.new_size <= small.plan.new_size + kCommitGrowthAllowance)
    return Chosen{std::move(*committed), WriteWay::IntoFile, std::move(small)};
  WriteWay way = must_write_in_place ? WriteWay::IntoFile : WriteWay::Copy;
  return Chosen{std::move(small), way, std::nullopt};
}

Expected<EditOutcome> edit_where_it_lies(const std::string& name, const EditRequest& request,
                                         const EditOptions& options) {
  // The lock is held on this descriptor until the edit is done, whichever way it is written.
  bool writable = options.in_place && !options.dry_run;
  UniqueFd locked;
  if (options.dry_run) {
    locked = UniqueFd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting));
    if (locked.get() < 0) return make_error(name, errno_text("cannot open"));
  } else {
    RUNPATCH_TRY(locked, open_for_edit(name, writable));
  }
  struct stat st {};
  if (::fstat(locked.get(), &st) != 0) return make_error(name, errno_text("cannot stat"));
  if (!options.dry_run) remove_stale_copy(name);
  // Every hard link must see the edit, and a copy must not change the owner:
  // then the file itself is written.
  bool must_write_in_place = !options.atomic_copy && (options.in_place || st.st_nlink > 1 || !copy_can_keep_owner(st));
  RUNPATCH_TRY(Chosen chosen, choose_edit(locked.get(), name, request, options, must_write_in_place));
  Planned& p = chosen.planned;
  if (options.dry_run || p.plan.strategy == EditStrategy::Unchanged) return std::move(p.outcome);
  if (chosen.way == WriteWay::IntoFile) {
    UniqueFd into(writable ? locked.release() : ::open(name.c_str(), O_RDWR | O_CLOEXEC));
    if (into.get() >= 0) {
      RUNPATCH_CHECK(apply_plan(into.get(), name, p.plan, p.outcome.old_size, options.stop_after_writes));
      return std::move(p.outcome);
    }
    if (must_write_in_place) return make_error(name, errno_text("cannot open for writing"));
    // A running program (ETXTBSY) cannot be written: an edited copy replaces it.
    if (chosen.for_copy) p = std::move(*chosen.for_copy);
  }
  RUNPATCH_CHECK(replace_by_copy(name, name, p.plan, DestLock::Held));
  return std::move(p.outcome);
}

}  // namespace

std::string strategy_name(EditStrategy strategy) {
  switch (strategy) {
    case EditStrategy::Unchanged: return "unchanged";
    case EditStrategy::InPlace: return "in place";
    case EditStrategy::Appended: return "appended segment";
  }
  return "?";
}

Expected<EditOutcome> edit_elf_file(const std::filesystem::path& path, const EditRequest& request,
                                    const EditOptions& options) {
  std::string name = path.string();
  std::error_code ec;
  if (!options.output ||
      (std::filesystem::exists(*options.output) && std::filesystem::equivalent(path, *options.output))) {
    // A symlink is followed: its target is edited (and replaced), never the link itself.
    if (std::filesystem::is_symlink(path, ec)) {
      auto target = std::filesystem::canonical(path, ec);
      if (!ec) name = target.string();
    }
    return edit_where_it_lies(name, request, options);
  }
  // --output: plan on the source, write an edited copy next to the destination.
  std::string dest = options.output->string();
  UniqueFd source(::open(name.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting));
  if (source.get() < 0) return make_error(name, errno_text("cannot open"));
  RUNPATCH_TRY(Planned p, plan_edit(source.get(), name, request, options));
  if (!options.dry_run) RUNPATCH_CHECK(replace_by_copy(name, dest, p.plan, DestLock::NotHeld));
  return std::move(p.outcome);
}

}  // namespace runpatch
