#include <fmt/core.h>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/reporting/doctor_report.hpp"
#include "runpatch/tracing/trace_analysis.hpp"
#include "runpatch/scanning/scan.hpp"
#include "search_options.hpp"

namespace runpatch::cli {

namespace {

// doctor --run -- COMMAND: the prediction for the program the command runs,
// then the command under the audit library (runpatch trace), and what it loaded.
int run_doctor_traced(Doctor& doctor, const SearchEnvironment& env, const std::vector<std::string>& command,
                      bool json) {
  auto program = program_to_trace(command[0]);
  auto report = program ? doctor.diagnose(*program) : Expected<DoctorReport>(program.error());
  if (!report) {
    log_error("{}", report.error().message());
    return exit_code_for(report.error(), ErrorSource::WorkedOn);
  }
  auto run = trace_command(command);
  if (!run) {
    log_error("cannot trace: {}", run.error().message());
    return exit_code_for(run.error(), ErrorSource::WorkedOn);
  }
  DoctorRun traced = doctor_traced_run(doctor, std::move(*report), analyze_trace(run->records, env), run->exit_code);
  if (json) {
    nlohmann::json j = doctor_run_json(traced);
    j["driver"] = driver_facts_json(doctor.driver());
    fmt::print("{}\n", json_text(j));
  } else {
    fmt::print("{}", format_doctor_run(traced, command[0], stdout_wants_color()));
  }
  return traced.ok() ? kExitOk : kExitProblem;
}

// The files one PATH names: itself, or every ELF file of a tree (problems logged).
std::vector<std::filesystem::path> doctor_files_of(const std::string& path, bool tree) {
  if (!tree) return {path};
  auto listing = list_elf_files({path});
  for (const auto& p : listing.problems) log_error("{}", p.message());
  return std::move(listing.elf_files);
}

}  // namespace

Command add_doctor_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> paths;
    bool json = false, run = false;
    std::string proc_root = "/";
    SearchOptions search;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand(
      "doctor", "On the machine where CUDA programs run: which libcuda each one loads, and whether it will work");
  add_tree_paths(app, o->paths, "Programs and libraries, or trees of them");
  app->add_flag("--json", o->json, "Print JSON");
  app->add_flag("--run", o->run,
                "PATH... is a command (after --): predict for the program it runs, then run it under the audit "
                "library (as runpatch trace) and report which libcuda it really loaded");
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
            if (o->run) return run_doctor_traced(doctor, env, o->paths, o->json);
            bool color = stdout_wants_color();
            int status = kExitOk;
            nlohmann::json files = nlohmann::json::array();
            if (!o->json) fmt::print("{}{}", format_host(doctor.driver()), format_driver_facts(doctor.driver()));
            for (const auto& path : o->paths) {
              // A tree: every ELF file in it, reporting only CUDA programs. A file: always reported.
              bool tree = std::filesystem::is_directory(path);
              for (const auto& file : doctor_files_of(path, tree)) {
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
