#include <fmt/core.h>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/reporting/doctor_report.hpp"
#include "runpatch/scanning/scan.hpp"
#include "search_options.hpp"

namespace runpatch::cli {

Command add_doctor_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> paths;
    bool json = false;
    std::string proc_root = "/";
    SearchOptions search;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand(
      "doctor", "On the machine where CUDA programs run: which libcuda each one loads, and whether it will work");
  add_tree_paths(app, o->paths, "Programs and libraries, or trees of them");
  app->add_flag("--json", o->json, "Print JSON");
  CLI::Option* proc_root =
      app->add_option("--proc-root", o->proc_root,
                      "Read /proc and /sys under this directory (default: --root's, so that an offline root is "
                      "judged by its own kernel facts, never this machine's)")
          ->check(CLI::ExistingDirectory);
  o->search.add_to(app);
  return {app, [o, proc_root] {
            SearchEnvironment env = o->search.environment();
            // --root R describes another machine: its /proc, not this one's, unless told otherwise.
            std::string facts_root = proc_root->count() == 0 && env.root != "/" ? env.root.string() : o->proc_root;
            Doctor doctor(DoctorOptions{env, facts_root});
            bool color = stdout_wants_color();
            int status = kExitOk;
            nlohmann::json files = nlohmann::json::array();
            if (!o->json) fmt::print("{}{}", format_host(doctor.driver()), format_driver_facts(doctor.driver()));
            for (const auto& path : o->paths) {
              // A tree: every ELF file in it, reporting only CUDA programs. A file: always reported.
              bool tree = std::filesystem::is_directory(path);
              std::vector<std::filesystem::path> files_here;
              if (tree) {
                auto listing = list_elf_files({path});
                for (const auto& p : listing.problems) log_error("{}", p.message());
                files_here = std::move(listing.elf_files);
              } else {
                files_here.push_back(path);
              }
              for (const auto& file : files_here) {
                auto report = doctor.diagnose(file);
                if (!report) {
                  if (!tree) {
                    log_error("{}", report.error().message());
                    status = kExitProblem;
                  }
                  continue;
                }
                if (tree && !report->uses_cuda && !report->unknown()) continue;
                if (!report->ok()) status = kExitProblem;
                if (o->json)
                  files.push_back(doctor_json(*report));
                else
                  fmt::print("{}", format_doctor(*report, color));
              }
            }
            if (o->json)
              fmt::print("{}\n", json_text(nlohmann::json{{"host_kind", host_kind_name(doctor.driver().host_kind())},
                                                          {"driver", driver_facts_json(doctor.driver())},
                                                          {"files", files}}));
            return status;
          }};
}

}  // namespace runpatch::cli
