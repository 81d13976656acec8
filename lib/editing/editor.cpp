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
#include "runpatch/edit.hpp"
#include "runpatch/mapped_file.hpp"
#include "runpatch/resolution_cache.hpp"

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
  RUNPATCH_TRY(p.plan, visit_elf(mapping.bytes(), path, [&](const auto& view) {
                 return plan_edit(view, outcome.before, options, request);
               }));
  spoil_plan_for_testing(p.plan, options);
  RUNPATCH_CHECK(verify_edit_plan(mapping.bytes(), path, outcome.before, request, p.plan));
  outcome.strategy = p.plan.strategy;
  outcome.layout_note = p.plan.layout_note;
  outcome.old_size = mapping.bytes().size();
  outcome.new_size = p.plan.new_size;
  outcome.warnings = p.plan.warnings;
  for (const auto& w : p.plan.writes) outcome.writes.push_back({w.offset, w.bytes.size(), w.what});
  return p;
}

// One write inside one page, file size unchanged: a process dies before or
// after such a pwrite, never in its middle, so editing in place is atomic too.
bool is_single_page_write(const EditPlan& plan, uint64_t old_size) {
  if (plan.writes.size() != 1 || plan.new_size != old_size) return false;
  const auto& w = plan.writes[0];
  constexpr uint64_t kPage = 4096;
  return !w.bytes.empty() && w.offset / kPage == (w.offset + w.bytes.size() - 1) / kPage;
}

Expected<EditOutcome> edit_where_it_lies(const std::string& name, const EditRequest& request,
                                         const EditOptions& options) {
  if (options.dry_run) {
    UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting));
    if (fd.get() < 0) return make_error(name, "cannot open");
    RUNPATCH_TRY(Planned p, plan_edit(fd.get(), name, request, options));
    return std::move(p.outcome);
  }
  // The lock is held on this descriptor until the edit is done, whichever way it is written.
  RUNPATCH_TRY(UniqueFd locked, open_for_edit(name, /*writable=*/options.in_place));
  struct stat st {};
  if (::fstat(locked.get(), &st) != 0) return make_error(name, errno_text("cannot stat"));
  remove_stale_copy(name);
  // Every hard link must see the edit, and a copy must not change the owner:
  // then the file itself is written, and the plan must leave bytes that
  // running processes read where they are.
  bool must_write_in_place = options.in_place || st.st_nlink > 1 || !copy_can_keep_owner(st);
  EditOptions planning = options;
  planning.in_place = must_write_in_place && !options.atomic_copy;
  RUNPATCH_TRY(Planned p, plan_edit(locked.get(), name, request, planning));
  if (p.plan.strategy == EditStrategy::Unchanged) return std::move(p.outcome);
  if (!options.atomic_copy && (must_write_in_place || is_single_page_write(p.plan, p.outcome.old_size))) {
    UniqueFd writable(options.in_place ? locked.release() : ::open(name.c_str(), O_RDWR | O_CLOEXEC));
    if (writable.get() >= 0) {
      RUNPATCH_CHECK(apply_plan(writable.get(), name, p.plan, p.outcome.old_size, options.stop_after_writes));
      return std::move(p.outcome);
    }
    if (must_write_in_place) return make_error(name, errno_text("cannot open for writing"));
    // A running program (ETXTBSY): an atomic replacement still works.
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
  if (!options.output || (std::filesystem::exists(*options.output) && std::filesystem::equivalent(path, *options.output))) {
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
