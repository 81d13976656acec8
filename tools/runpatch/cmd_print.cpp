#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reporting/elf_info_report.hpp"

namespace runpatch::cli {

Command add_print_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> files;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("print", "Show interpreter, needed libraries and runpaths of ELF files");
  app->add_option("FILE", options->files, "ELF files")->required();
  app->add_flag("--json", options->json, "Print one JSON array");
  return {app, [options] {
            int status = kExitOk;
            nlohmann::json all = nlohmann::json::array();
            for (const auto& file : options->files) {
              auto info = read_elf_info(file);
              if (!info) {
                log_error("{}", info.error().message());
                status = kExitProblem;
                continue;
              }
              if (options->json)
                all.push_back(elf_info_json(*info));
              else
                fmt::print("{}", format_elf_info(*info));
            }
            if (options->json) fmt::print("{}\n", json_text(all));
            return status;
          }};
}

}  // namespace runpatch::cli
