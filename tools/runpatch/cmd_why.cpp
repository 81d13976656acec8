#include <fmt/core.h>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/checking/check.hpp"
#include "runpatch/diagnosing/diagnose.hpp"
#include "runpatch/reporting/tree_report.hpp"
#include "runpatch/reporting/check_report.hpp"
#include "search_options.hpp"

namespace runpatch::cli {

Command add_why_command(CLI::App& root) {
  struct Options {
    std::string library, file;
    std::vector<std::string> search_dirs;
    bool json = false;
    SearchOptions search;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("why", "Explain every step the loader takes for LIB when loading FILE");
  app->add_option("LIB", o->library, "Library name as in DT_NEEDED (e.g. libcudart.so.13)")->required();
  app->add_option("FILE", o->file, "The program or library that (indirectly) needs it")->required();
  repeatable(app->add_option("--search", o->search_dirs, "Directories (e.g. other outputs) to look for a fix in"));
  app->add_flag("--json", o->json, "Print JSON");
  o->search.add_to(app);
  return {
      app, [o] {
        SearchEnvironment env = o->search.environment();
        auto tree = resolve_tree(o->file, env);
        if (!tree) {
          log_error("{}", tree.error().message());
          return exit_code_for(tree.error(), ErrorSource::WorkedOn);
        }
        if (!o->json) fmt::print("{}: {}\n", o->file, tree->loader.describe());
        std::vector<std::filesystem::path> dirs(o->search_dirs.begin(), o->search_dirs.end());
        nlohmann::json report = nlohmann::json::array();
        bool any = false, missing = false;
        for (const auto& edge : tree->edges) {
          const auto& r = edge.resolution;
          if (r.name != o->library) continue;
          any = true;
          missing = missing || !r.path;
          auto suggestions = r.path ? std::vector<Suggestion>{} : suggest_fixes(*tree, edge, dirs);
          if (o->json) {
            auto j = resolution_json(r);
            j["needed_by"] = tree->objects[edge.from].path;
            j["loader"] = loader_model_json(tree->loader);
            for (const auto& s : suggestions)
              j["suggestions"].push_back({{"candidate", s.candidate}, {"verdict", s.verdict}, {"advice", s.advice}});
            report.push_back(j);
            continue;
          }
          fmt::print("{} needed by {}\n", r.name, tree->objects[edge.from].path);
          for (const auto& a : r.attempts) fmt::print("  {:<60} {} ({})\n", a.path, a.outcome_text(), a.rule);
          if (r.path)
            fmt::print("  => {} via {}\n", *r.path, found_via_name(r.via));
          else
            fmt::print("  => not found\n");
          for (const auto& s : suggestions) fmt::print("  fix: {}\n", s.advice);
        }
        // Findings about the whole tree that concern this library (a version mix, shadowing, a stub).
        std::vector<Finding> related;
        for (auto& f : tree_findings(o->file, *tree, env))
          if (f.message.find(o->library) != std::string::npos) related.push_back(std::move(f));
        if (o->json)
          fmt::print("{}\n", json_text(report));
        else if (!any)
          fmt::print("{} does not need {} (directly or through its dependencies)\n", o->file, o->library);
        if (!o->json) fmt::print("{}", format_findings(related));
        return any && !missing ? kExitOk : kExitProblem;
      }};
}

}  // namespace runpatch::cli
