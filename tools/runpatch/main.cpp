#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "console.hpp"

namespace {

// A run over a tree commits its edits as a group that holds every file's lock
// until the last barrier (commit_group.hpp): the soft descriptor limit (often
// 1024) would split it into groups of a few hundred files. The hard limit is
// the system's word; anything up to it is ours to take.
void raise_descriptor_limit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, rlim_t(1) << 16);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace runpatch::cli;
  raise_descriptor_limit();
  // Called as `auto-patchelf`: the auto-patchelf subcommand, like Nixpkgs' script.
  std::vector<char*> args(argv, argv + argc);
  std::string_view self = argv[0];
  if (self.substr(self.rfind('/') + 1) == "auto-patchelf")
    args.insert(args.begin() + 1, const_cast<char*>("auto-patchelf"));
  // auto-patchelf has its own parser: argparse's rules, which CLI11 cannot express.
  if (args.size() > 1 && std::string_view(args[1]) == "auto-patchelf")
    return run_auto_patchelf(std::vector<std::string>(args.begin() + 2, args.end()));
  CLI::App app{"runpatch: read and rewrite the runpaths of ELF files"};
  app.set_version_flag("--version", RUNPATCH_VERSION);
  app.require_subcommand(1);
  using Adder = Command (*)(CLI::App&);
  static constexpr std::pair<std::string_view, Adder> kCommands[] = {
      {"print", add_print_command},   {"scan", add_scan_command},     {"set", add_set_command},
      {"tree", add_tree_command},     {"why", add_why_command},       {"driver", add_driver_command},
      {"compat", add_compat_command}, {"apply", add_apply_command},   {"auto-patchelf", add_auto_patchelf_command},
      {"check", add_check_command},   {"doctor", add_doctor_command}, {"trace", add_trace_command},
  };
  // Build only the subcommand asked for (all of them for help and errors):
  // setting up every option parser is a measurable part of a short run.
  std::vector<Command> commands;
  for (const auto& [name, add] : kCommands)
    if (argc > 1 && name == argv[1]) commands.push_back(add(app));
  if (commands.empty())
    for (const auto& [name, add] : kCommands) commands.push_back(add(app));
  for (auto& command : commands) add_verbosity_flags(command.app, verbosity());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? kExitOk : kExitUsage;  // --help, --version
    // One line naming the tool, as every other error (docs/man: EXIT STATUS).
    fmt::print(stderr, "runpatch: {}\nRun with --help for more information.\n", e.what());
    return kExitUsage;
  }
  setup_logging(verbosity());
  for (auto& command : commands)
    if (command.app->parsed()) return command.run();
  return kExitUsage;
}
