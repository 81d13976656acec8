#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "command.hpp"

int main(int argc, char** argv) {
  using namespace runpatch::cli;
  CLI::App app{"runpatch: read and rewrite the runpaths of ELF files"};
  app.set_version_flag("--version", RUNPATCH_VERSION);
  app.require_subcommand(1);
  std::vector<Command> commands = {add_print_command(app), add_scan_command(app), add_set_command(app),
                                  add_tree_command(app), add_why_command(app),
                                  add_driver_command(app), add_compat_command(app), add_apply_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (auto& command : commands)
    if (command.app->parsed()) return command.run();
  return kExitUsage;
}
