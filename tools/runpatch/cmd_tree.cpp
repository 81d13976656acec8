#include <fmt/core.h>

#include <filesystem>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/checking/check.hpp"
#include "runpatch/reporting/tree_report.hpp"
#include "runpatch/reporting/check_report.hpp"
#include "runpatch/reporting/open_attempts_report.hpp"
#include "runpatch/resolving/resolution_cache.hpp"
#include "search_options.hpp"

namespace runpatch::cli {

Command add_tree_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> files;
    bool json = false, stats = false;
    SearchOptions search;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app =
      root.add_subcommand("tree", "Show the dependency tree as ld.so resolves it, and where each came from");
  app->add_option("FILE", o->files, "ELF files")->required();
  app->add_flag("--json", o->json, "Print JSON");
  app->add_flag("--stats", o->stats,
                "Also count the loader's open attempts for the direct DT_NEEDED without and with a resolution-cache "
                "note (the file's, or the one --ldcache would write)");
  o->search.add_to(app);
  return {app, [o] {
            SearchEnvironment session_env = o->search.environment();
            session_env.record_attempts = o->json;  // the text tree shows no attempts
            ResolutionSession session(session_env);
            int status = kExitOk;
            nlohmann::json all = nlohmann::json::array();
            bool color = stdout_wants_color();
            for (const auto& file : o->files) {
              auto tree = session.resolve_tree(file);
              if (!tree) {
                log_error("{}", tree.error().message());
                status = kExitProblem;
                continue;
              }
              if (!tree->all_found()) status = kExitProblem;
              auto findings = tree_findings(file, *tree, session_env);
              std::optional<OpenAttemptStats> stats;
              if (o->stats) {
                auto counted = count_open_attempts(file, session_env);
                if (!counted) {
                  log_error("{}", counted.error().message());
                  status = kExitProblem;
                } else {
                  stats = std::move(*counted);
                }
              }
              if (o->json) {
                auto json = tree_json(*tree);
                json["findings"] = findings_json(findings);
                if (stats) json["open_attempts"] = open_attempts_json(*stats);
                all.push_back(std::move(json));
              } else {
                // A symlink's title names it too (python3 -> python3.11).
                std::error_code ec;
                std::string named = std::filesystem::is_symlink(file, ec) ? file : "";
                fmt::print("{}{}", format_tree(*tree, color, named), format_findings(findings));
                if (stats) fmt::print("{}", format_open_attempts(*stats));
              }
            }
            if (o->json) fmt::print("{}\n", json_text(all));
            return status;
          }};
}

}  // namespace runpatch::cli
