// runpatch auto-patchelf (also installed as `auto-patchelf`): Nixpkgs'
// auto-patchelf.py command line (parsed as argparse does, see
// tools/auto_patchelf/) and its messages, line for line, on the same streams.
#include <fmt/core.h>

#include <cstdio>
#include <variant>

#include "../auto_patchelf/auto_patchelf_args.hpp"
#include "../common/log.hpp"
#include "../common/patchelf_args.hpp"
#include "../common/patchelf_run.hpp"
#include "command.hpp"
#include "runpatch/autopatchelf/auto_patchelf.hpp"

namespace runpatch::cli {

namespace {

// stdout is the script's print(); stderr is sys.exit(message) and argparse,
// in the script's words (no prefix of ours).
void to_stderr(const std::string& text) { log_text(LogLevel::Error, text); }

// One patchelf run of the script's, its streams kept for the report's order.
Expected<PatchelfRunOutput> run_patchelf_captured(const std::vector<std::string>& words) {
  PatchelfRunOutput output;
  PatchelfStreams streams{[&](std::string_view text) { output.printed += text; },
                          [&](std::string_view text) { output.diagnostics += text; }};
  RUNPATCH_CHECK(run_patchelf(words, "patchelf", streams));
  return output;
}

void print_run(const std::optional<PatchelfRunOutput>& run) {
  if (!run) return;
  fmt::print("{}", run->printed);
  if (!run->diagnostics.empty()) to_stderr(run->diagnostics);
}

// The options the library takes, or a usage error's message.
std::variant<AutoPatchelfOptions, std::string> library_options(const AutoPatchelfArgs& a) {
  AutoPatchelfOptions o;
  o.paths.assign(a.paths.begin(), a.paths.end());
  o.libs.assign(a.libs.begin(), a.libs.end());
  for (const auto& [mode, path] : a.search_paths) o.search_paths.emplace_back(mode == "recursive", path);
  o.runtime_dependencies = a.runtime_dependencies;
  o.append_rpaths = a.append_rpaths;
  o.ignore_missing = a.ignore_missing;
  o.recurse = a.recursive;
  o.keep_libc = a.keep_libc;
  o.ignore_existing = !a.add_existing;
  o.origin = a.origin;
  o.edit.dry_run = a.dry_run;
  o.edit.in_place = a.in_place;
  o.interpreter = a.interpreter;
  use_nix_bintools(o);  // $NIX_BINTOOLS, as the hook sets it
  // The script's edits are patchelf's: a change drops a resolution-cache note.
  o.extra.resolution_cache = ResolutionCacheMode::DropOnChange;
  if (!a.extra_args.empty()) {
    // patchelf would fail on each run; one usage error says it before any edit.
    auto extra = parse_patchelf_arguments(a.extra_args);
    if (!extra) return "argument --extra-args: " + extra.error().what;
    o.patchelf_flags = a.extra_args;
    o.run_patchelf = run_patchelf_captured;
    // Runs that write one --output file, or edit the files the flags name, must come in the script's order.
    if (extra->output || !extra->files.empty()) o.threads = 1;
  }
  if (!a.driver_dirs.empty() || !a.libcuda_dirs.empty()) {
    // The three hooks' result in one write per file (hooks/auto-patchelf-cuda-hook.sh).
    o.layers.driver = !a.driver_dirs.empty();
    if (!a.driver_dirs.empty()) o.layers.driver_dirs = a.driver_dirs;
    o.layers.compat_dirs = a.libcuda_dirs;
    o.layers.forbidden_prefixes = a.forbid;
  } else if (!a.forbid.empty()) {
    return "argument --forbid: only with --driver-dir or --libcuda";
  }
  if (a.ldcache) o.extra.resolution_cache = ResolutionCacheMode::Write;
  if (a.remove_ldcache) o.extra.resolution_cache = ResolutionCacheMode::Remove;
  return o;
}

void print_file(const AutoPatchedFile& f, bool verbose) {
  if (f.unreadable) {
    if (verbose) to_stderr(fmt::format("auto-patchelf: passing over {}: {}\n", f.path, f.unreadable->message()));
    return;
  }
  if (!f.skip_reason.empty()) {
    fmt::print("{}\n", f.skip_reason);
    return;
  }
  if (f.set_interpreter) fmt::print("setting interpreter of {}\n", f.path);
  print_run(f.interpreter_run);
  fmt::print("searching for dependencies of {}\n", f.path);
  for (const auto& d : f.dependencies) {
    if (!d.printed) continue;
    if (d.found_dir)
      fmt::print("    {} -> found: {}\n", d.name, *d.found_dir);
    else
      fmt::print("    {} -> not found!\n", d.name);
  }
  if (f.runpath) fmt::print("setting RPATH to: {}\n", *f.runpath);
  print_run(f.runpath_run);
  if (f.error) to_stderr(fmt::format("auto-patchelf: {}\n", f.error->message()));
  for (const auto& w : f.warnings) to_stderr(fmt::format("auto-patchelf: {}: {}\n", f.path, w));
}

int report(const AutoPatchelfResult& result, bool verbose) {
  for (const auto& m : result.index_messages) fmt::print("{}\n", m);
  size_t edited = 0, errors = 0;
  for (const auto& f : result.files) {
    print_file(f, verbose);
    edited += f.runpath || f.set_interpreter;
    errors += f.error.has_value();
  }
  fmt::print("auto-patchelf: {} dependencies could not be satisfied\n", result.missing.size());
  bool failure = false;
  for (const auto& m : result.missing) {
    if (m.ignored)
      fmt::print("warn: auto-patchelf ignoring missing {} wanted by {}\n", m.name, m.wanted_by);
    else
      fmt::print("error: auto-patchelf could not satisfy dependency {} wanted by {}\n", m.name, m.wanted_by);
    failure = failure || !m.ignored;
  }
  if (verbose)
    fmt::print("runpatch: {} ELF files looked at, {} edited, {} failed\n", result.files.size(), edited, errors);
  if (failure)
    to_stderr(
        "auto-patchelf failed to find all the required dependencies.\n"
        "Add the missing dependencies to --libs or use `--ignore-missing=\"foo.so.1 bar.so etc.so\"`.\n");
  return failure || errors ? kExitProblem : kExitOk;
}

}  // namespace

int run_auto_patchelf(const std::vector<std::string>& argv) {
  fmt::print("automatically fixing dependencies for ELF files\n");
  AutoPatchelfParse parsed = parse_auto_patchelf_args(argv);
  if (!parsed.args) {
    to_stderr(auto_patchelf_usage() + "auto-patchelf: error: " + parsed.error + "\n");
    return kExitUsage;
  }
  const AutoPatchelfArgs& args = *parsed.args;
  if (args.help) {
    fmt::print("{}", auto_patchelf_help());
    return kExitOk;
  }
  fmt::print("{}", auto_patchelf_args_dump(args));
  auto options = library_options(args);
  if (auto* error = std::get_if<std::string>(&options)) {
    to_stderr(auto_patchelf_usage() + "auto-patchelf: error: " + *error + "\n");
    return kExitUsage;
  }
  auto& o = std::get<AutoPatchelfOptions>(options);
  if (o.paths.empty()) {
    to_stderr("No paths to patch, stopping.\n");
    return kExitProblem;  // sys.exit(message) exits with status 1
  }
  if (o.interpreter && !read_elf_info(*o.interpreter)) {
    to_stderr("Failed to parse dynamic linker (ld) properties.\n");
    return kExitProblem;
  }
  return report(auto_patchelf(o), args.verbose);
}

Command add_auto_patchelf_command(CLI::App& root) {
  // Listed in `runpatch --help` only: main() hands `auto-patchelf` to run_auto_patchelf before CLI11 parses.
  CLI::App* app = root.add_subcommand("auto-patchelf",
                                      "Drop-in for Nixpkgs' auto-patchelf.py (argparse command line; writes in place "
                                      "by default): see `runpatch auto-patchelf --help`");
  app->prefix_command();
  return {app, [app] { return run_auto_patchelf(app->remaining()); }};
}

}  // namespace runpatch::cli
