#include <fcntl.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "editing/edit_planner.hpp"
#include "editing/edit_testing.hpp"
#include "editing/plan_options.hpp"
#include "editing/edit_verifier.hpp"
#include "editing/rpath_conversion.hpp"
#include "editing/file_io.hpp"
#include "editing/replacement.hpp"
#include "editing/staged_commit.hpp"
#include "reading/file_checks.hpp"
#include "reading/elf_dispatch.hpp"
#include "runpatch/editing/commit_group.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "runpatch/resolving/resolution_cache.hpp"

namespace runpatch {

namespace {

struct Planned {
  EditOutcome outcome;
  EditPlan plan;
};

void spoil_plan_for_testing(EditPlan& plan, const EditTestHooks& hooks) {
  if (hooks.drop_writes)
    std::erase_if(plan.writes, [&](const PlannedWrite& w) { return w.kind == *hooks.drop_writes; });
  if (hooks.inject_write) {
    const auto& [offset, bytes] = *hooks.inject_write;
    plan.writes.push_back({WritePhase::Commit, offset, bytes, WriteKind::Injected});
  }
}

// The file as every planning pass of one edit reads it: mapped and read once.
struct Source {
  std::string path;
  MappedFile mapping;
  ElfInfo before;
};

Expected<Source> read_source(int fd, const std::string& path, const EditOptions& options) {
  RUNPATCH_TRY(MappedFile mapping, MappedFile::map(fd, path));
  RUNPATCH_TRY(ElfInfo before, read_elf_info(mapping.bytes(), path, options.dynamic_source));
  return Source{path, std::move(mapping), std::move(before)};
}

Expected<Planned> plan_edit(const Source& source, const EditRequest& request, const PlanOptions& options,
                            const EditTestHooks& hooks) {
  std::span<const uint8_t> bytes = source.mapping.bytes();
  Planned p;
  EditOutcome& outcome = p.outcome;
  outcome.before = source.before;
  // The request's runpath was evaluated once (evaluated_once): this is that answer, kept for the tools.
  if (request.runpath) {
    RUNPATCH_TRY(outcome.runpath_change, request.runpath(source.before));
  }
  RUNPATCH_TRY(p.plan, visit_elf(bytes, source.path,
                                 [&](const auto& view) { return plan_edit(view, outcome.before, options, request); }));
  spoil_plan_for_testing(p.plan, hooks);
  RUNPATCH_CHECK(verify_edit_plan(bytes, source.path, outcome.before, request, p.plan));
  // Strings moved to their own place through an interim one: what a crash there leaves is verified too.
  if (has_phase(p.plan, WritePhase::Switch))
    RUNPATCH_CHECK(verify_edit_plan(bytes, source.path, outcome.before, request, interim_of_staged(p.plan)));
  outcome.strategy = p.plan.strategy;
  outcome.layout = p.plan.layout;
  outcome.layout_description = describe_layout(p.plan.layout);
  outcome.old_size = bytes.size();
  outcome.new_size = p.plan.new_size;
  outcome.warnings = p.plan.warnings;
  for (const auto& w : p.plan.writes) outcome.writes.push_back({w.offset, w.bytes.size(), w.kind, w.description()});
  return p;
}

struct Chosen {
  Planned planned;
  EditWay way = EditWay::Copy;
};

// Inside a Nix build (the hooks' environment) nothing maps the outputs and a
// failed build discards them: edits go into the file, as with --in-place.
bool in_nix_build() {
  const char* top = std::getenv("NIX_BUILD_TOP");
  return top && *top;
}

// Whether another process may have the file open or mapped (a running
// program, a loaded library): the kernel grants a write lease only when no
// other open file refers to it, and a mapping holds one. Unknown (a file
// system without leases, a file the caller does not own) counts as open.
// A process that opens the file while the lease is held makes the kernel
// signal its holder, by default with SIGIO, which terminates: the signal is
// SIGURG instead, which by default nothing does (a reader of the outputs
// killed one edit in ten here).
bool open_elsewhere(int fd) {
  if (::fcntl(fd, F_SETSIG, SIGURG) != 0) return true;
  if (::fcntl(fd, F_SETLEASE, F_WRLCK) != 0) return true;
  ::fcntl(fd, F_SETLEASE, F_UNLCK);
  return false;
}

// The layout and the way to write it (docs/editing.md §4): an edit that fits
// the existing tables is committed by one write into the file; one that
// appends a segment takes the smallest layout, whose program header table
// stays at the front of the file where strip, objcopy and eu-strip need it,
// written into the file in staged phases (--in-place, a Nix build, hard
// links, an owner a copy cannot keep, an unwritable directory) or copied.
bool rebuilds_earlier_segment(const Planned& p) {
  return p.plan.reclaimed_from && p.plan.reclaimed_from != p.outcome.before.interrupted_edit_tail;
}

bool rebuild_can_be_staged(const Source& source, const EditPlan& plan) {
  EditPlan trial = plan;
  auto staged = stage_segment_rebuild(source.mapping.bytes(), source.path, trial);
  return staged && *staged;
}

// Where the edit may go, as edit_where_it_lies found the file.
struct WayOpen {
  bool into_file = false;            // the file itself may be written (--in-place, a build, hard links)
  bool must_write_in_place = false;  // and nothing else may be
  bool mapped_elsewhere = true;      // another process may have it open or mapped
};

Expected<Chosen> choose_edit(const Source& source, const EditRequest& request, const EditOptions& options,
                             const EditTestHooks& hooks, WayOpen way) {
  const WayContext context{way.mapped_elsewhere, way.must_write_in_place};
  // Written into a file that a process may have mapped (outside a build), the
  // dynamic tables stay where that process reads them; a copy, a build's
  // outputs, or a file no process has open may move them out of the table's way.
  EditWay smallest = way.into_file ? EditWay::IntoFile : EditWay::Copy;
  std::optional<Planned> small;
  if (!options.atomic_copy) {
    auto committed = plan_edit(source, request, options_for(EditWay::OneWrite, options, context), hooks);
    if (committed && committed->plan.strategy == EditStrategy::Unchanged)
      return Chosen{std::move(*committed), EditWay::OneWrite};
    if (committed && committed->plan.strategy != EditStrategy::Appended && commits_in_one_write(committed->plan)) {
      // An earlier edit's segment is rebuilt rather than edited in its slack
      // (edit_planner.cpp, rebuilt_earlier_tail): the bytes then depend only
      // on the original file and the final content, whichever edits led there.
      if (way.must_write_in_place) return Chosen{std::move(*committed), EditWay::OneWrite};
      RUNPATCH_TRY(small, plan_edit(source, request, options_for(smallest, options, context), hooks));
      if (!rebuilds_earlier_segment(*small)) return Chosen{std::move(*committed), EditWay::OneWrite};
    }
  }
  if (!small) {
    RUNPATCH_TRY(small, plan_edit(source, request, options_for(smallest, options, context), hooks));
  }
  if (smallest == EditWay::IntoFile && way.mapped_elsewhere && !small->plan.fits_later_tools &&
      !way.must_write_in_place) {
    // Strip or a later patchelf would break the file unless the dynamic tables move: a copy moves them.
    smallest = EditWay::Copy;
    RUNPATCH_TRY(small, plan_edit(source, request, options_for(smallest, options, context), hooks));
  }
  // A program's string table grows where it lies only in a copy (the tables
  // after it move, which no phase order makes crash-safe in the file): that
  // copy, where the file may be replaced, rather than a segment carrying the table.
  if (smallest == EditWay::IntoFile && !way.must_write_in_place && source.before.type == elf::ET_EXEC &&
      small->plan.strategy == EditStrategy::Appended) {
    RUNPATCH_TRY(Planned copied, plan_edit(source, request, options_for(EditWay::Copy, options, context), hooks));
    if (has_layout_step(copied.plan, LayoutStep::StringTableGrown)) return Chosen{std::move(copied), EditWay::Copy};
  }
  // Written over an earlier edit's segment (not an interrupted tail): into the
  // file only where no process may have it mapped and the rebuild can be
  // staged (stage_segment_rebuild), else a copy.
  if (smallest == EditWay::IntoFile && rebuilds_earlier_segment(*small) &&
      (way.mapped_elsewhere || !rebuild_can_be_staged(source, small->plan)))
    smallest = EditWay::Copy;
  return Chosen{std::move(*small), smallest};
}

// A plan written into the file: a grown program header table is committed in
// two one-sector steps (staged_commit.hpp), the interim state verified too.
Status stage_for_file(const Source& source, Planned& p, const EditRequest& request) {
  std::span<const uint8_t> bytes = source.mapping.bytes();
  Expected<bool> staged = false;
  if (rebuilds_earlier_segment(p)) staged = stage_segment_rebuild(bytes, source.path, p.plan);
  if (staged && !*staged) staged = stage_table_commit(bytes, source.path, p.plan);
  if (!staged) return staged.error();
  if (!*staged) return {};
  p.outcome.written_as = WrittenAs::IntoFileStaged;
  RUNPATCH_CHECK(verify_edit_plan(bytes, source.path, p.outcome.before, request, p.plan));
  EditPlan interim = interim_of_staged(p.plan);
  RUNPATCH_CHECK(verify_edit_plan(bytes, source.path, p.outcome.before, request, interim));
  p.outcome.writes.clear();
  for (const auto& w : p.plan.writes) p.outcome.writes.push_back({w.offset, w.bytes.size(), w.kind, w.description()});
  return {};
}

// What turning an inherited DT_RPATH into DT_RUNPATH loses, named from the
// plan's reading of the file while the file is still the old one.
void warn_of_rpath_conversion(const std::string& name, const EditRequest& request, EditOutcome& outcome) {
  if (outcome.strategy == EditStrategy::Unchanged || !converts_rpath(outcome.before, request)) return;
  auto warnings = inherited_rpath_warnings(name);
  outcome.warnings.insert(outcome.warnings.end(), warnings.begin(), warnings.end());
}

// Alone, each step followed by its sync (when durable); in a group, the rest
// waits for the group's commit.
Status commit(PendingCommit pending, const EditOptions& options) {
  if (options.group) {
    pending.ticket = options.group_ticket;
    return options.group->add(std::move(pending));
  }
  return run_alone(pending, syncs(options.durability, pending.path));
}

// The request with its runpath computed once, from the file as it is now:
// the callback is policy code that may read other files (shrinking reads the
// library directories), and every planning pass, the verifier and the
// RPATH-conversion warning must see one answer.
Expected<EditRequest> evaluated_once(const Source& source, const EditRequest& request) {
  if (!request.runpath) return request;
  RUNPATCH_TRY(RunpathChange change, request.runpath(source.before));
  EditRequest fixed = request;
  fixed.runpath = [change](const ElfInfo&) -> Expected<RunpathChange> { return change; };
  return fixed;
}

Expected<EditOutcome> edit_where_it_lies(const std::string& name, const EditRequest& asked, const EditOptions& options,
                                         const EditTestHooks& hooks) {
  // The lock is held on this descriptor until the edit is done, whichever way it is written.
  bool writable = options.in_place && !options.dry_run;
  UniqueFd locked;
  if (options.dry_run) {
    locked = UniqueFd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting));
    if (locked.get() < 0) return system_error(name, "cannot open");
  } else {
    // A lock held by an edit of our own group (the same file under a second
    // name) would never be released while we wait: the group commits first.
    std::function<void()> before_waiting;
    if (options.group) before_waiting = [&] { options.group->commit_before_waiting(); };
    RUNPATCH_TRY(locked, open_for_edit(name, writable, before_waiting));
  }
  RUNPATCH_TRY(Source source, read_source(locked.get(), name, options));
  RUNPATCH_TRY(EditRequest request, evaluated_once(source, asked));
  struct stat st {};
  if (::fstat(locked.get(), &st) != 0) return system_error(name, "cannot stat");
  // Every hard link must see the edit, and a copy must not change the owner:
  // then the file itself is written.
  bool must_write_in_place =
      !options.atomic_copy && (st.st_nlink > 1 || !copy_can_keep_owner(st) || !copy_can_be_created(name));
  bool into_file = !options.atomic_copy && (options.in_place || in_nix_build() || must_write_in_place);
  // One write may go into the file even when a copy was asked for: whether a process has it open counts then too.
  WayOpen way{into_file, must_write_in_place, !in_nix_build() && open_elsewhere(locked.get())};
  RUNPATCH_TRY(Chosen chosen, choose_edit(source, request, options, hooks, way));
  Planned& p = chosen.planned;
  warn_of_rpath_conversion(name, request, p.outcome);
  if (options.dry_run || p.plan.strategy == EditStrategy::Unchanged) return std::move(p.outcome);
  if (chosen.way == EditWay::OneWrite || chosen.way == EditWay::IntoFile) {
    UniqueFd into(writable ? locked.release() : ::open(name.c_str(), O_RDWR | O_CLOEXEC));
    if (into.get() >= 0) {
      RUNPATCH_CHECK(stage_for_file(source, p, request));
      PendingCommit pending =
          commit_into_file(std::move(into), name, std::move(p.plan), p.outcome.old_size, hooks.stop_after_writes);
      pending.lock = std::move(locked);  // when the file was opened for writing apart from its lock
      RUNPATCH_CHECK(commit(std::move(pending), options));
      if (p.outcome.written_as == WrittenAs::NotWritten) p.outcome.written_as = WrittenAs::IntoFile;
      return std::move(p.outcome);
    }
    if (must_write_in_place) return system_error(name, "cannot open for writing");
    // A running program (ETXTBSY) cannot be written: an edited copy replaces it.
    if (p.plan.strategy == EditStrategy::Appended && into_file) {
      RUNPATCH_TRY(p, plan_edit(source, request, options_for(EditWay::Copy, options, {}), hooks));
      warn_of_rpath_conversion(name, request, p.outcome);  // a new outcome: its warnings again
    }
  }
  RUNPATCH_TRY(PendingCommit pending, commit_by_copy(name, name, std::move(p.plan), DestLock::Held));
  pending.lock = std::move(locked);
  RUNPATCH_CHECK(commit(std::move(pending), options));
  p.outcome.written_as = WrittenAs::Copy;
  return std::move(p.outcome);
}

}  // namespace

bool is_system_file(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::weakly_canonical(std::filesystem::absolute(file, ec), ec);
  if (ec) real = file;
  std::string text = real.string();
  for (std::string_view dir :
       {"/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/", "/etc/", "/opt/", "/boot/"})
    if (text.starts_with(dir)) return true;
  return false;
}

bool syncs(Durability durability, const std::filesystem::path& file) {
  switch (durability) {
    case Durability::Sync: return true;
    case Durability::NoSync: return false;
    case Durability::Auto: break;
  }
  return !in_nix_build() && is_system_file(file);
}

namespace {

// The one entry point: edit_elf_file without hooks, tests with them.
Expected<EditOutcome> edit_with_hooks(const std::filesystem::path& path, const EditRequest& request,
                                      const EditOptions& options, const EditTestHooks& hooks) {
  std::string name = path.string();
  // The kernel cannot execute a program whose PT_INTERP is empty.
  if (request.interpreter && request.interpreter->empty())
    return make_error(ErrorCode::InvalidRequest, name,
                      "an empty interpreter cannot be written (the program could no longer be executed)");
  std::error_code ec;
  if (!options.output ||
      (std::filesystem::exists(*options.output) && std::filesystem::equivalent(path, *options.output))) {
    // A symlink is followed: its target is edited (and replaced), never the link itself.
    if (std::filesystem::is_symlink(path, ec)) {
      auto target = std::filesystem::canonical(path, ec);
      if (!ec) name = target.string();
    }
    return edit_where_it_lies(name, request, options, hooks);
  }
  // --output: plan on the source, write an edited copy next to the destination.
  std::string dest = options.output->string();
  UniqueFd source(::open(name.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting));
  if (source.get() < 0) return system_error(name, "cannot open");
  RUNPATCH_TRY(Source read, read_source(source.get(), name, options));
  RUNPATCH_TRY(EditRequest fixed, evaluated_once(read, request));
  RUNPATCH_TRY(Planned p, plan_edit(read, fixed, options_for(EditWay::Output, options, {}), hooks));
  warn_of_rpath_conversion(name, fixed, p.outcome);
  if (!options.dry_run) {
    RUNPATCH_TRY(PendingCommit pending, commit_by_copy(name, dest, std::move(p.plan), DestLock::NotHeld));
    RUNPATCH_CHECK(commit(std::move(pending), options));
    p.outcome.written_as = WrittenAs::Output;
  }
  return std::move(p.outcome);
}

}  // namespace

Expected<EditOutcome> edit_elf_file(const std::filesystem::path& path, const EditRequest& request,
                                    const EditOptions& options) {
  return edit_with_hooks(path, request, options, EditTestHooks{});
}

Expected<EditOutcome> edit_elf_file_for_testing(const std::filesystem::path& path, const EditRequest& request,
                                                const EditOptions& options, const EditTestHooks& hooks) {
  return edit_with_hooks(path, request, options, hooks);
}

}  // namespace runpatch
