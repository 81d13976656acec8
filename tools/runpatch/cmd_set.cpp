#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "../common/log.hpp"
#include "../common/patchelf_args.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/editing/commit_group.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/header_edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"

namespace runpatch::cli {

namespace {

std::string shown(const std::optional<std::string>& value) { return value ? "'" + *value + "'" : "(none)"; }

// "  field: 'old' -> 'new'" for each value the request changes, read from the
// file as it is now: what --dry-run would write.
std::string planned_changes(const EditOutcome& outcome, const EditRequest& request) {
  const ElfInfo& before = outcome.before;
  std::string out;
  auto line = [&](const char* field, const std::string& old_value, const std::string& new_value) {
    if (old_value != new_value) out += fmt::format("  {}: {} -> {}\n", field, old_value, new_value);
  };
  if (const auto& change = outcome.runpath_change; change && change->kind != RunpathChange::Kind::Keep) {
    std::optional<std::string> old_runpath = before.runpath ? before.runpath : before.rpath;
    line(before.runpath || !before.rpath ? "runpath" : "rpath", shown(old_runpath),
         change->kind == RunpathChange::Kind::Set ? shown(change->value) : "(removed)");
  }
  if (request.interpreter) line("interpreter", shown(before.interpreter), shown(request.interpreter));
  if (request.soname) line("soname", shown(before.soname), shown(request.soname));
  for (const auto& name : request.add_needed) out += fmt::format("  needed: + '{}'\n", name);
  for (const auto& name : request.remove_needed) out += fmt::format("  needed: - '{}'\n", name);
  for (const auto& [from, to] : request.replace_needed) line("needed", shown(from), shown(to));
  for (const auto& [from, to] : request.rename_symbols) line("symbol (where the file has it)", shown(from), shown(to));
  return out;
}

void warn_about_empty_entries(const std::optional<std::string>& value, const char* option) {
  if (value && has_empty_runpath_entry(*value))
    log_warning("warning: {} '{}' holds an empty entry, which ld.so searches as the current directory", option, *value);
}

// "FILE: STRATEGY (how), HOW WRITTEN; OLD -> NEW bytes, +GROWTH, N bytes
// written", and with --dry-run the values that change. Growth is closure size
// in a Nix store; the bytes written are every byte the edit writes (a copy's
// unchanged bytes not counted).
void print_outcome(const std::string& name, const EditOutcome& outcome, bool dry_run, const EditRequest& request) {
  if (outcome.strategy == EditStrategy::Unchanged) {
    fmt::print("{}: unchanged\n", name);
    return;
  }
  uint64_t written = 0;
  for (const auto& w : outcome.writes) written += w.size;
  std::string way = written_as_name(outcome.written_as);
  fmt::print("{}: {}{} ({}){}; {} -> {} bytes, {:+} ({} bytes written)\n", name, dry_run ? "would edit, " : "",
             strategy_name(outcome.strategy), outcome.layout_description, way.empty() ? "" : ", " + way,
             outcome.old_size, outcome.new_size, int64_t(outcome.new_size) - int64_t(outcome.old_size), written);
  if (dry_run) fmt::print("{}", planned_changes(outcome, request));
}

struct SetOptions {
  std::vector<std::string> files;
  std::optional<std::string> runpath, add_runpath, prepend_runpath, interpreter, soname, output, rename_map;
  bool remove_runpath = false, force_rpath = false, dry_run = false, in_place = false, atomic_copy = false;
  std::vector<std::string> add_needed, remove_needed, replace_needed;
  ResolutionCacheMode ldcache = ResolutionCacheMode::Refresh;
  Durability durability = Durability::Auto;
  // Fixed-size header fields (runpatch/editing/header_edit.hpp).
  std::optional<std::string> os_abi;
  bool execstack = false, no_execstack = false, no_default_lib = false;
  std::vector<std::string> clear_symbol_version;

  bool any_operation() const {
    return runpath || add_runpath || prepend_runpath || remove_runpath || interpreter || soname ||
           !add_needed.empty() || !remove_needed.empty() || !replace_needed.empty() ||
           ldcache != ResolutionCacheMode::Refresh || os_abi || execstack || no_execstack || no_default_lib ||
           !clear_symbol_version.empty() || rename_map;
  }

  EditRequest edit_request() const {
    EditRequest request;
    request.force_rpath = force_rpath;
    request.resolution_cache = ldcache;
    if (runpath) request.runpath = set_runpath_update(*runpath);
    if (add_runpath) request.runpath = add_runpath_update(*add_runpath, false, true);
    if (prepend_runpath) request.runpath = add_runpath_update(*prepend_runpath, true, true);
    if (remove_runpath) request.runpath = remove_runpath_update();
    request.interpreter = interpreter;
    request.soname = soname;
    request.add_needed = add_needed;
    request.remove_needed = remove_needed;
    for (size_t i = 0; i + 1 < replace_needed.size(); i += 2)
      request.replace_needed.emplace_back(replace_needed[i], replace_needed[i + 1]);
    return request;
  }

  HeaderEditRequest header_request() const {
    HeaderEditRequest headers;
    if (os_abi) headers.osabi = osabi_from_name(*os_abi);
    if (execstack || no_execstack) headers.exec_stack = execstack;
    headers.no_default_lib = no_default_lib;
    headers.clear_symbol_version = clear_symbol_version;
    return headers;
  }
};

// Edits each file, all committed together (one barrier per commit step, not
// per file); a file's line is printed once its edit is committed.
int edit_each(const SetOptions& o, const EditRequest& request, EditOptions options) {
  CommitGroup group(options.durability);
  if (!options.dry_run) options.group = &group;
  int status = kExitOk;
  std::vector<std::pair<std::string, EditOutcome>> edited;  // the ticket of each is its index here
  for (const auto& file : o.files) {
    options.group_ticket = edited.size();
    auto outcome = edit_elf_file(file, request, options);
    if (!outcome) {
      log_error("{}", outcome.error().message());
      status = kExitProblem;
      continue;
    }
    edited.emplace_back(file, std::move(*outcome));
  }
  std::set<size_t> failed;
  for (const auto& failure : group.commit()) {
    log_error("{}", failure.error.message());
    failed.insert(failure.ticket);
    status = kExitProblem;
  }
  for (size_t i = 0; i < edited.size(); ++i) {
    const auto& [file, outcome] = edited[i];
    for (const auto& warning : outcome.warnings) log_warning("{}: warning: {}", file, warning.text);
    if (verbosity().quiet || failed.count(i)) continue;  // -q: problems only
    // With -o the edited file is the output: name both.
    print_outcome(o.output ? fmt::format("{} -> {}", file, *o.output) : file, outcome, o.dry_run, request);
  }
  return status;
}

}  // namespace

Command add_set_command(CLI::App& root) {
  auto o = std::make_shared<SetOptions>();
  CLI::App* app = root.add_subcommand("set", "Edit runpath, interpreter, soname or needed entries, in one pass");
  app->add_option("FILE", o->files, "ELF files")->required();
  auto* set = app->add_option("--runpath", o->runpath, "Set the runpath (DT_RUNPATH)");
  auto* add = app->add_option("--add-runpath", o->add_runpath,
                              "Append entries to the runpath (entries already there are not repeated)");
  auto* prepend = app->add_option("--prepend-runpath", o->prepend_runpath,
                                  "Prepend entries to the runpath (moved to the front if already there)");
  auto* remove = app->add_flag("--remove-runpath", o->remove_runpath, "Remove DT_RUNPATH and DT_RPATH");
  set->excludes(add, prepend, remove);
  add->excludes(prepend, remove);
  prepend->excludes(remove);
  app->add_flag("--force-rpath", o->force_rpath, "Write DT_RPATH instead of DT_RUNPATH");
  app->add_option("--interpreter", o->interpreter, "Set the program interpreter");
  app->add_option("--soname", o->soname, "Set DT_SONAME");
  repeatable(app->add_option("--add-needed", o->add_needed, "Add a DT_NEEDED entry (first)"));
  repeatable(app->add_option("--remove-needed", o->remove_needed, "Remove a DT_NEEDED entry"));
  app->add_option("--replace-needed", o->replace_needed, "Replace DT_NEEDED OLD by NEW")
      ->expected(2)
      ->allow_extra_args(false);
  app->add_option("--rename-dynamic-symbols", o->rename_map,
                  "Rename dynamic symbols as this file says: one 'OLD NEW' pair a line (patchelf's map file)");
  app->add_option("--os-abi", o->os_abi, "Set EI_OSABI (patchelf's names: 'System V', Linux, FreeBSD, ...)")
      ->check(
          [](const std::string& name) { return osabi_from_name(name) ? "" : "unknown OS ABI name '" + name + "'"; });
  auto* execstack = app->add_flag("--execstack", o->execstack, "Request an executable stack (PF_X on PT_GNU_STACK)");
  execstack->excludes(app->add_flag("--no-execstack", o->no_execstack, "Request a non-executable stack"));
  app->add_flag("--no-default-lib", o->no_default_lib,
                "Set DF_1_NODEFLIB: never search the default library directories");
  repeatable(app->add_option("--clear-symbol-version", o->clear_symbol_version,
                             "Make this dynamic symbol unversioned (VER_NDX_GLOBAL)"));
  auto* output = app->add_option("-o,--output", o->output, "Write the result here instead of in place");
  app->add_flag("-n,--dry-run", o->dry_run, "Show what would change, write nothing");
  add_in_place_flag(app, o->in_place, o->atomic_copy);
  add_durability_flags(app, o->durability);
  add_ldcache_flags(app, o->ldcache);
  return {app, [o, output] {
            if (o->output && o->files.size() != 1) {
              log_error("{} takes exactly one FILE", output->get_name());
              return kExitUsage;
            }
            if (!o->any_operation()) {
              log_error(
                  "set: nothing to do; give an edit such as --runpath, --add-runpath or --interpreter (see runpatch "
                  "set --help)");
              return kExitUsage;
            }
            if (o->interpreter && o->interpreter->empty()) {
              log_error("--interpreter: an empty interpreter cannot be executed; give the loader's path");
              return kExitUsage;
            }
            warn_about_empty_entries(o->runpath, "--runpath");
            warn_about_empty_entries(o->add_runpath, "--add-runpath");
            warn_about_empty_entries(o->prepend_runpath, "--prepend-runpath");
            EditRequest request = o->edit_request();
            if (o->rename_map) {
              auto pairs = read_rename_map(*o->rename_map);
              if (!pairs) {
                log_error("{}", pairs.error().message());
                return exit_code_for(pairs.error(), ErrorSource::CommandLine);
              }
              request.rename_symbols = std::move(*pairs);
            }
            EditOptions options;
            options.dry_run = o->dry_run;
            options.in_place = o->in_place;
            options.atomic_copy = o->atomic_copy;
            options.durability = o->durability;
            if (o->output) options.output = *o->output;
            request.headers = o->header_request();
            return edit_each(*o, request, options);
          }};
}

}  // namespace runpatch::cli
