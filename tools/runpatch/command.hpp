// Each subcommand registers its options and returns the action to run when chosen.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "runpatch/edit.hpp"

namespace runpatch::cli {

// Exit codes shared by every tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitProblem = 1;
inline constexpr int kExitUsage = 2;

// A list option that takes one value per occurrence (--x a --x b), so that
// it never swallows the positional arguments after it.
inline CLI::Option* repeatable(CLI::Option* option) {
  return option->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
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
// `auto-patchelf ARGS...` (argv after the command name), parsed as Python's argparse would.
int run_auto_patchelf(const std::vector<std::string>& argv);

// The same flag, with the same words, on every subcommand that writes files.
inline CLI::Option* add_in_place_flag(CLI::App* app, bool& in_place) {
  return app->add_flag("--in-place", in_place,
                       "Write into each file directly (fast on huge files) instead of replacing it atomically "
                       "with an edited copy; a crash may then leave a mix of old and new");
}

// --ldcache / --remove-ldcache: what the edit does to the resolution-cache note.
inline void add_ldcache_flags(CLI::App* app, ResolutionCacheMode& mode) {
  auto* write = app->add_flag_callback(
      "--ldcache", [&mode] { mode = ResolutionCacheMode::Write; },
      "Write or refresh the resolution-cache note (.note.nixos.ldcache) for the final runpath, in the same write "
      "(a note a file already has is always refreshed)");
  auto* remove = app->add_flag_callback(
      "--remove-ldcache", [&mode] { mode = ResolutionCacheMode::Remove; }, "Remove the resolution-cache note");
  write->excludes(remove);
}

}  // namespace runpatch::cli
