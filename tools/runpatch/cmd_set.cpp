#include <fmt/core.h>
#include <fmt/ranges.h>

#include "command.hpp"
#include "runpatch/edit.hpp"
#include "runpatch/header_edit.hpp"
#include "runpatch/runpath_ops.hpp"

namespace runpatch::cli {

namespace {

// The dynamic-section edit (when asked for), then the header fields on its
// result (the output it wrote, with --output). One line per step.
bool edit_headers_of(const std::string& file, const EditRequest& request, const HeaderEditRequest& headers,
                     EditOptions options) {
  std::string target = file;
  if (!request.empty()) {
    auto outcome = edit_elf_file(file, request, options);
    if (!outcome) {
      fmt::print(stderr, "runpatch: {}\n", outcome.error().message());
      return false;
    }
    for (const auto& warning : outcome->warnings) fmt::print(stderr, "runpatch: {}: warning: {}\n", file, warning);
    if (outcome->strategy == EditStrategy::Unchanged) fmt::print("{}: unchanged\n", file);
    else fmt::print("{}: {}{} ({})\n", file, options.dry_run ? "would edit, " : "", strategy_name(outcome->strategy),
                    outcome->layout_note);
    if (options.output && !options.dry_run) target = options.output->string(), options.output.reset();
  }
  auto outcome = edit_elf_headers(target, headers, options);
  if (!outcome) {
    fmt::print(stderr, "runpatch: {}\n", outcome.error().message());
    return false;
  }
  std::vector<std::string> fields;
  for (const auto& w : outcome->writes) fields.push_back(w.what);
  if (fields.empty()) fmt::print("{}: header fields unchanged\n", file);
  else fmt::print("{}: {}header fields in place ({})\n", file, options.dry_run ? "would edit, " : "", fmt::join(fields, ", "));
  return true;
}

}  // namespace

Command add_set_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> files;
    std::optional<std::string> runpath, add_runpath, prepend_runpath, interpreter, soname, output;
    bool remove_runpath = false, force_rpath = false, dry_run = false, in_place = false;
    std::vector<std::string> add_needed, remove_needed, replace_needed;
    ResolutionCacheMode ldcache = ResolutionCacheMode::Refresh;
    // Fixed-size header fields (runpatch/header_edit.hpp).
    std::optional<std::string> os_abi;
    bool execstack = false, no_execstack = false, no_default_lib = false;
    std::vector<std::string> clear_symbol_version;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("set", "Edit runpath, interpreter, soname or needed entries, in one pass");
  app->add_option("FILE", o->files, "ELF files")->required();
  auto* set = app->add_option("--runpath", o->runpath, "Set the runpath (DT_RUNPATH)");
  auto* add = app->add_option("--add-runpath", o->add_runpath, "Append entries to the runpath (entries already there are not repeated)");
  auto* prepend = app->add_option("--prepend-runpath", o->prepend_runpath, "Prepend entries to the runpath (moved to the front if already there)");
  auto* remove = app->add_flag("--remove-runpath", o->remove_runpath, "Remove DT_RUNPATH and DT_RPATH");
  set->excludes(add, prepend, remove);
  add->excludes(prepend, remove);
  prepend->excludes(remove);
  app->add_flag("--force-rpath", o->force_rpath, "Write DT_RPATH instead of DT_RUNPATH");
  app->add_option("--interpreter", o->interpreter, "Set the program interpreter");
  app->add_option("--soname", o->soname, "Set DT_SONAME");
  repeatable(app->add_option("--add-needed", o->add_needed, "Add a DT_NEEDED entry (first)"));
  repeatable(app->add_option("--remove-needed", o->remove_needed, "Remove a DT_NEEDED entry"));
  app->add_option("--replace-needed", o->replace_needed, "Replace DT_NEEDED OLD by NEW")->expected(2)->allow_extra_args(false);
  app->add_option("--os-abi", o->os_abi, "Set EI_OSABI (patchelf's names: 'System V', Linux, FreeBSD, ...)")
      ->check([](const std::string& name) { return osabi_from_name(name) ? "" : "unknown OS ABI name '" + name + "'"; });
  auto* execstack = app->add_flag("--execstack", o->execstack, "Request an executable stack (PF_X on PT_GNU_STACK)");
  execstack->excludes(app->add_flag("--no-execstack", o->no_execstack, "Request a non-executable stack"));
  app->add_flag("--no-default-lib", o->no_default_lib, "Set DF_1_NODEFLIB: never search the default library directories");
  repeatable(app->add_option("--clear-symbol-version", o->clear_symbol_version,
                             "Make this dynamic symbol unversioned (VER_NDX_GLOBAL)"));
  auto* output = app->add_option("-o,--output", o->output, "Write the result here instead of in place");
  app->add_flag("-n,--dry-run", o->dry_run, "Show what would change, write nothing");
  add_in_place_flag(app, o->in_place);
  add_ldcache_flags(app, o->ldcache);
  return {app, [o, output] {
            if (o->output && o->files.size() != 1) {
              fmt::print(stderr, "runpatch: {} takes exactly one FILE\n", output->get_name());
              return kExitUsage;
            }
            EditRequest request;
            request.force_rpath = o->force_rpath;
            request.resolution_cache = o->ldcache;
            if (o->runpath) request.runpath = set_runpath_update(*o->runpath);
            if (o->add_runpath) request.runpath = add_runpath_update(*o->add_runpath, false, true);
            if (o->prepend_runpath) request.runpath = add_runpath_update(*o->prepend_runpath, true, true);
            if (o->remove_runpath) request.runpath = remove_runpath_update();
            request.interpreter = o->interpreter;
            request.soname = o->soname;
            request.add_needed = o->add_needed;
            request.remove_needed = o->remove_needed;
            for (size_t i = 0; i + 1 < o->replace_needed.size(); i += 2)
              request.replace_needed.emplace_back(o->replace_needed[i], o->replace_needed[i + 1]);
            EditOptions options;
            options.dry_run = o->dry_run;
            options.in_place = o->in_place;
            if (o->output) options.output = *o->output;
            HeaderEditRequest headers;
            if (o->os_abi) headers.osabi = osabi_from_name(*o->os_abi);
            if (o->execstack || o->no_execstack) headers.exec_stack = o->execstack;
            headers.no_default_lib = o->no_default_lib;
            headers.clear_symbol_version = o->clear_symbol_version;
            int status = kExitOk;
            for (const auto& file : o->files) {
              if (!headers.empty()) {
                if (!edit_headers_of(file, request, headers, options)) status = kExitProblem;
                continue;
              }
              auto outcome = edit_elf_file(file, request, options);
              if (!outcome) {
                fmt::print(stderr, "runpatch: {}\n", outcome.error().message());
                status = kExitProblem;
                continue;
              }
              for (const auto& warning : outcome->warnings) fmt::print(stderr, "runpatch: {}: warning: {}\n", file, warning);
              if (outcome->strategy == EditStrategy::Unchanged) {
                fmt::print("{}: unchanged\n", file);
              } else {
                fmt::print("{}: {}{} ({})\n", file, o->dry_run ? "would edit, " : "", strategy_name(outcome->strategy),
                           outcome->layout_note);
              }
            }
            return status;
          }};
}

}  // namespace runpatch::cli
