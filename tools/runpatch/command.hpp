// Each subcommand registers its options and returns the action to run when chosen.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "../common/exit_codes.hpp"
#include "runpatch/editing/edit_options.hpp"
#include "runpatch/editing/edit_request.hpp"
#include "runpatch/tracing/trace_run.hpp"

namespace runpatch::cli {

// A list option that takes one value per occurrence (--x a --x b), so that
// it never swallows the positional arguments after it.
inline CLI::Option* repeatable(CLI::Option* option) {
  return option->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// The names of an enum's values, for an option's IsMember check: one list, the library's.
template <class Values, class Name>
std::vector<std::string> names_of(const Values& values, Name name) {
  std::vector<std::string> names;
  for (const auto& v : values) names.emplace_back(name(v));
  return names;
}

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_print_command(CLI::App& root);
Command add_scan_command(CLI::App& root);
Command add_set_command(CLI::App& root);
Command add_tree_command(CLI::App& root);
Command add_why_command(CLI::App& root);
Command add_driver_command(CLI::App& root);
Command add_compat_command(CLI::App& root);
Command add_apply_command(CLI::App& root);
Command add_auto_patchelf_command(CLI::App& root);
Command add_check_command(CLI::App& root);
Command add_doctor_command(CLI::App& root);
Command add_trace_command(CLI::App& root);
// Runs command under the audit library (runpatch trace, doctor --run); an error
// says why it cannot be traced (setuid, static, musl, foreign, no audit library).
Expected<TraceRun> trace_command(const std::vector<std::string>& command);
// `auto-patchelf ARGS...` (argv after the command name), parsed as Python's argparse would.
int run_auto_patchelf(const std::vector<std::string>& argv);

// The words every command that walks trees says about symlinks (as the help of
// its PATH argument and as a footer), so that they never drift apart.
inline constexpr const char* kTreeWalkFooter =
    "Trees are walked as `find -type f` walks them (as Nixpkgs' hooks do): symlinked directories are not "
    "entered and symlinked files are not read or edited through the link, so nothing outside the tree is "
    "touched. A symlink named on the command line is followed, as patchelf follows it: its target is meant.";

// PATH: files or trees, walked as kTreeWalkFooter says.
inline CLI::Option* add_tree_paths(CLI::App* app, std::vector<std::string>& paths, const std::string& what) {
  app->footer(kTreeWalkFooter);
  return app->add_option("PATH", paths, what + "; symlinks inside trees are skipped (see below)")->required();
}

// The same flags, with the same words, on every subcommand that writes files.
inline void add_in_place_flag(CLI::App* app, bool& in_place, bool& atomic_copy) {
  auto* in_place_flag = app->add_flag("--in-place", in_place,
                                      "Write an edit that appends a segment into each file (fast on huge files; "
                                      "crash-safe, staged) instead of through an edited copy renamed over it; the "
                                      "default inside a Nix build ($NIX_BUILD_TOP)");
  app->add_flag("--atomic-copy", atomic_copy,
                "Always replace each file with an edited copy, even where one write in place would do (hard-linked "
                "files then get the copy under this name only)")
      ->excludes(in_place_flag);
}

// Two flags that each set `target` to their value; giving both is a usage error.
template <class T>
void add_exclusive_flags(CLI::App* app, T& target, const char* first, T first_value, const char* first_help,
                         const char* second, T second_value, const char* second_help) {
  auto* one = app->add_flag_callback(
      first, [&target, first_value] { target = first_value; }, first_help);
  auto* other = app->add_flag_callback(
      second, [&target, second_value] { target = second_value; }, second_help);
  one->excludes(other);
}

// --sync / --no-sync: whether edits wait for the disk (EditOptions::durability).
inline void add_durability_flags(CLI::App* app, Durability& durability) {
  add_exclusive_flags(app, durability, "--sync", Durability::Sync,
                      "Wait for the edits to reach the disk between their phases: they survive a power cut; the files "
                      "of one run share each wait (syncfs); the default outside a Nix build",
                      "--no-sync", Durability::NoSync,
                      "Do not wait for the disk: the write order still survives a killed process; the default inside "
                      "a Nix build ($NIX_BUILD_TOP), whose outputs are discarded if it fails");
}

// --ldcache / --remove-ldcache: what the edit does to the resolution-cache note.
inline void add_ldcache_flags(CLI::App* app, ResolutionCacheMode& mode) {
  add_exclusive_flags(app, mode, "--ldcache", ResolutionCacheMode::Write,
                      "Write or refresh the resolution-cache note (.note.nixos.ldcache) for the final runpath, in the "
                      "same write (a note a file already has is always refreshed)",
                      "--remove-ldcache", ResolutionCacheMode::Remove, "Remove the resolution-cache note");
}

}  // namespace runpatch::cli
