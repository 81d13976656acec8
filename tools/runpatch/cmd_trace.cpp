#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "output_file.hpp"
#include "runpatch/reporting/trace_report.hpp"
#include "runpatch/tracing.hpp"

#ifndef RUNPATCH_AUDIT_FROM_BINDIR
#define RUNPATCH_AUDIT_FROM_BINDIR "../lib/runpatch"
#endif

namespace runpatch::cli {

namespace {

// The audit library beside this executable: installed, BINDIR/../LIBDIR/runpatch
// (cmake/install.cmake); in the build tree, bin/../lib/runpatch. RUNPATCH_AUDIT_LIBRARY overrides both.
std::optional<std::filesystem::path> trace_audit_library() {
  if (const char* forced = std::getenv("RUNPATCH_AUDIT_LIBRARY"); forced && *forced) return forced;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  auto bin = self.parent_path();
  for (const auto& dir : {bin / RUNPATCH_AUDIT_FROM_BINDIR, bin / "../lib/runpatch", bin})
    if (std::filesystem::exists(dir / "runpatch-audit.so", ec)) return (dir / "runpatch-audit.so").lexically_normal();
  return std::nullopt;
}

bool trace_fails(const std::vector<std::string>& fail_on, const TraceAnalysis& a) {
  return std::any_of(fail_on.begin(), fail_on.end(), [&](const std::string& name) {
    auto kind = parse_trace_kind(name);  // the option's check admits only kinds
    return kind && a.count(*kind) > 0;
  });
}

}  // namespace

namespace {

struct TraceOptions {
  std::vector<std::string> command, fail_on;
  std::string output;
  bool json = false;
};

// Everything that makes a trace impossible, as one message; or the audit library to use.
Expected<std::filesystem::path> trace_preflight(const std::vector<std::string>& command) {
  auto audit = trace_audit_library();
  if (!audit)
    return make_error(ErrorCode::CannotTrace, "runpatch-audit.so",
                      "not found beside the runpatch executable (lib/runpatch/ next to its "
                      "bin/); set RUNPATCH_AUDIT_LIBRARY to its path");
  RUNPATCH_TRY(ElfInfo audit_info, read_elf_info(*audit));
  RUNPATCH_TRY(auto program, program_to_trace(command[0]));
  RUNPATCH_CHECK(check_traceable(program, audit_info));
  return *audit;
}

}  // namespace

Expected<TraceRun> trace_command(const std::vector<std::string>& command) {
  RUNPATCH_TRY(auto audit, trace_preflight(command));
  return run_traced(command, audit);
}

namespace {

int run_trace(const TraceOptions& o) {
  std::optional<OutputFile> out;
  if (!o.output.empty()) {
    auto opened = OutputFile::open(o.output);
    if (!opened) return report_unwritable(opened.error());
    out.emplace(std::move(*opened));
  }
  auto run = trace_command(o.command);
  if (!run) {
    log_error("cannot trace: {}", run.error().message());
    return exit_code_for(run.error(), ErrorSource::WorkedOn);
  }
  if (run->records.empty())
    log_warning("no loader records: the command cleared its environment (RUNPATCH_TRACE_FD), or /proc is not mounted");
  TraceAnalysis analysis = analyze_trace(run->records, SearchEnvironment::host(true));
  std::string report = o.json ? json_text(trace_report_json(o.command, *run, analysis)) + "\n"
                              : trace_report_text(o.command, *run, analysis);
  if (out) {
    if (auto written = out->write_and_close(report); !written) return report_unwritable(written.error());
  } else {
    fmt::print("{}", report);
  }
  // In CI (--fail-on) a command that failed fails the step too, with its own
  // status (128 + the signal that ended it), whatever the trace found.
  if (!o.fail_on.empty() && run->exit_code != 0) return run->exit_code;
  return trace_fails(o.fail_on, analysis) ? kExitProblem : kExitOk;
}

}  // namespace

Command add_trace_command(CLI::App& root) {
  auto o = std::make_shared<TraceOptions>();
  CLI::App* app = root.add_subcommand(
      "trace", "Run a command under an rtld audit library and report how every library was found or not");
  app->add_flag("--json", o->json, "Print JSON");
  app->add_option("-o,--output", o->output,
                  "Write the report to FILE instead of stdout (the command's own output "
                  "stays on stdout)");
  repeatable(app->add_option("--fail-on", o->fail_on,
                             "Exit 1 if the trace finds this kind of load: host-dependent, undeclared-dlopen, failed"))
      ->check(CLI::IsMember(names_of(kTraceKinds, trace_kind_name)));
  app->add_option("COMMAND", o->command, "The command and its arguments, after --")->required();
  app->footer(
      "The command runs with LD_AUDIT naming runpatch's audit library (lib/runpatch/runpatch-audit.so), which "
      "writes what the loader does to a file runpatch reads afterwards; the command's output and behaviour are "
      "its own. Programs it runs are traced too. Setuid, static, musl and foreign-architecture programs cannot "
      "be traced (runpatch says so and exits 1).");
  return {app, [o] { return run_trace(*o); }};
}

}  // namespace runpatch::cli
