#include <fmt/core.h>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/diagnosing/diagnose.hpp"
#include "runpatch/reporting/json_text.hpp"
#include "runpatch/reporting/why_report.hpp"
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
  return {app, [o] {
            std::vector<std::filesystem::path> dirs(o->search_dirs.begin(), o->search_dirs.end());
            auto answer = explain_why(o->file, o->library, dirs, o->search.environment());
            if (!answer) {
              log_error("{}", answer.error().message());
              return exit_code_for(answer.error(), ErrorSource::WorkedOn);
            }
            if (o->json)
              fmt::print("{}\n", json_text(why_json(*answer)));
            else
              fmt::print("{}", why_text(o->file, *answer));
            return answer->needed() && answer->all_found() ? kExitOk : kExitProblem;
          }};
}

}  // namespace runpatch::cli
