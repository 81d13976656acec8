// Each subcommand registers its options and returns the action to run when chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace runpatch::cli {

// Exit codes shared by every tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitProblem = 1;
inline constexpr int kExitUsage = 2;

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_print_command(CLI::App& root);
Command add_scan_command(CLI::App& root);
Command add_set_command(CLI::App& root);
Command add_tree_command(CLI::App& root);
Command add_why_command(CLI::App& root);

}  // namespace runpatch::cli
