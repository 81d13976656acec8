#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/reporting/elf_info_report.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch::cli {

Command add_scan_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> roots;
    bool json = false;
    bool paths_only = false;
    bool null_separated = false;
    unsigned threads = 0;
  };
  auto options = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("scan", "List every ELF file under directories with its runpath and needs");
  add_tree_paths(app, options->roots, "Directories or files");
  app->add_flag("--json", options->json, "Print one JSON array");
  auto* paths_only = app->add_flag("--dynamic-paths", options->paths_only,
                                   "Print only the paths of dynamically linked files (what runpath hooks act on)");
  app->add_flag("-0,--null", options->null_separated,
                "With --dynamic-paths: end each path with a NUL byte, not a newline (file names may hold newlines; "
                "read with xargs -0 or `read -d ''`)")
      ->needs(paths_only);
  app->add_option("-j,--jobs", options->threads, "Threads (default: one per core)");
  return {app, [options] {
            std::vector<std::filesystem::path> roots(options->roots.begin(), options->roots.end());
            TreeListing listing = list_elf_files(roots);
            int status = kExitOk;
            for (const auto& problem : listing.problems) {
              log_error("{}", problem.message());
              status = kExitProblem;
            }
            auto infos = read_elf_infos(listing.elf_files, options->threads);
            nlohmann::json all = nlohmann::json::array();
            std::string text;
            for (const auto& info : infos) {
              if (!info) {
                log_error("{}", info.error().message());
                status = kExitProblem;
              } else if (options->paths_only) {
                if (info->has_dynamic && info->type != 1 /*ET_REL*/)
                  text += info->path + (options->null_separated ? '\0' : '\n');
              } else if (options->json) {
                all.push_back(elf_info_json(*info));
              } else {
                text += format_scan_line(*info);
                text += '\n';
              }
            }
            if (options->json)
              fmt::print("{}\n", json_text(all));
            else
              fmt::print("{}", text);
            return status;
          }};
}

}  // namespace runpatch::cli
