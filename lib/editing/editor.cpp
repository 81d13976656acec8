#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "editing/edit_planner.hpp"
#include "editing/file_io.hpp"
#include "reading/elf_dispatch.hpp"
#include "runpatch/edit.hpp"
#include "runpatch/mapped_file.hpp"

namespace runpatch {

namespace {

Expected<EditOutcome> edit_open_file(int fd, const std::string& path, const EditRequest& request,
                                     const EditOptions& options) {
  RUNPATCH_TRY(MappedFile mapping, MappedFile::map(fd, path));
  EditOutcome outcome;
  RUNPATCH_TRY(outcome.before, read_elf_info(mapping.bytes(), path));
  RUNPATCH_TRY(EditPlan plan, visit_elf(mapping.bytes(), path, [&](const auto& view) {
                 using View = std::decay_t<decltype(view)>;
                 return EditPlanner<typename View::Target>(view, outcome.before, options).plan(request);
               }));
  outcome.strategy = plan.strategy;
  outcome.layout_note = plan.layout_note;
  outcome.old_size = mapping.bytes().size();
  outcome.new_size = plan.new_size;
  for (const auto& w : plan.writes) outcome.writes.push_back({w.offset, w.bytes.size(), w.what});
  if (!options.dry_run && plan.strategy != EditStrategy::Unchanged)
    RUNPATCH_CHECK(apply_plan(fd, path, plan, outcome.old_size, options.stop_after_writes));
  return outcome;
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
  if (!options.output || (std::filesystem::exists(*options.output) &&
                          std::filesystem::equivalent(path, *options.output))) {
    if (options.dry_run) {
      UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
      if (fd.get() < 0) return make_error(name, "cannot open");
      return edit_open_file(fd.get(), name, request, options);
    }
    RUNPATCH_TRY(UniqueFd fd, open_for_edit(name));
    return edit_open_file(fd.get(), name, request, options);
  }
  // --output: edit a copy next to the destination, then rename it into place.
  std::string dest = options.output->string();
  RUNPATCH_TRY(auto temp, copy_to_temporary(name, dest));
  auto outcome = edit_open_file(temp.first.get(), name, request, options);
  if (!outcome || options.dry_run || ::rename(temp.second.c_str(), dest.c_str()) != 0) {
    ::unlink(temp.second.c_str());
    if (outcome && !options.dry_run) return make_error(dest, "cannot rename the edited copy into place");
  }
  return outcome;
}

std::vector<std::string> split_runpath(const std::string& runpath) {
  std::vector<std::string> entries;
  if (runpath.empty()) return entries;
  size_t start = 0;
  for (;;) {
    size_t colon = runpath.find(':', start);
    entries.push_back(runpath.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return entries;
}

std::string join_runpath(const std::vector<std::string>& entries) {
  std::string out;
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? ":" : "") + entries[i];
  return out;
}

}  // namespace runpatch
