#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>

#include "command.hpp"
#include "runpatch/report.hpp"
#include "search_options.hpp"

namespace runpatch::cli {

bool stdout_wants_color() { return ::isatty(1) && !std::getenv("NO_COLOR"); }

Command add_tree_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> files;
    bool json = false;
    SearchOptions search;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("tree", "Show the dependency tree as ld.so resolves it, and where each came from");
  app->add_option("FILE", o->files, "ELF files")->required();
  app->add_flag("--json", o->json, "Print JSON");
  o->search.add_to(app);
  return {app, [o] {
            SearchEnvironment env = o->search.environment();
            env.record_attempts = o->json;  // the text tree shows no attempts
            ResolutionSession session(std::move(env));
            int status = kExitOk;
            nlohmann::json all = nlohmann::json::array();
            for (const auto& file : o->files) {
              auto tree = session.resolve_tree(file);
              if (!tree) {
                fmt::print(stderr, "runpatch: {}\n", tree.error().message());
                status = kExitProblem;
                continue;
              }
              if (!tree->all_found()) status = kExitProblem;
              if (o->json) all.push_back(tree_json(*tree));
              else fmt::print("{}", format_tree(*tree, stdout_wants_color()));
            }
            if (o->json) fmt::print("{}\n", all.dump(2));
            return status;
          }};
}

}  // namespace runpatch::cli
