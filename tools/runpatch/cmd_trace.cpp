#include <fmt/core.h>
#include <unistd.h>

#include <set>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "output_file.hpp"
#include "runpatch/tracing.hpp"

#ifndef RUNPATCH_AUDIT_FROM_BINDIR
#define RUNPATCH_AUDIT_FROM_BINDIR "../lib/runpatch"
#endif

namespace runpatch::cli {

namespace {

constexpr const char* kTraceKinds[] = {"host-dependent", "undeclared-dlopen", "failed"};

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

// A word for the shell, quoted only when it has to be.
std::string trace_shell_word(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "/._-+=:,@%") == std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string trace_fix_command(const std::string& directory, const std::string& file) {
  return "runpatch set --add-runpath " + trace_shell_word(directory) + " " + trace_shell_word(file);
}

std::string trace_request_words(const TracedLoad& l) {
  switch (l.request) {
    case LoadRequest::Needed: return "needed by " + l.requester;
    case LoadRequest::DeclaredDlopen: return "dlopened (declared in .note.dlopen) by " + l.requester;
    case LoadRequest::UndeclaredDlopen: return "dlopened by " + l.requester;
    case LoadRequest::DlopenByPath: return "dlopened by path (the loader names no requester)";
  }
  return "";
}

std::string trace_outcome_words(const TracedLoad& l) {
  if (!l.path) return fmt::format("not found ({} paths tried)", l.steps.size());
  std::string rule = l.rule_object.empty() || l.rule.find(l.rule_object) != std::string::npos
                         ? l.rule
                         : l.rule + " of " + l.rule_object;
  return *l.path + " via " + rule + (l.model_agrees ? "" : " (the static model finds another file)");
}

// null for a failed load; "rpath" apart from "runpath" (DT_RPATH is inherited).
nlohmann::json trace_found_by(const TracedLoad& l) {
  if (!l.path) return nullptr;
  return l.found_by_rpath ? std::string("rpath") : search_step_id(l.found_by);
}

nlohmann::json trace_load_json(const TracedLoad& l) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : l.steps) steps.push_back({{"step", search_step_id(s.step)}, {"path", s.path}});
  nlohmann::json j = {{"pid", l.pid},
                      {"program", l.program},
                      {"requester", l.requester.empty() ? nlohmann::json(nullptr) : nlohmann::json(l.requester)},
                      {"name", l.name},
                      {"request", load_request_id(l.request)},
                      {"path", l.path ? nlohmann::json(*l.path) : nlohmann::json(nullptr)},
                      {"found_by", trace_found_by(l)},
                      {"rule", l.rule},
                      {"rule_object", l.rule_object},
                      {"model_agrees", l.model_agrees},
                      {"host_dependent", l.host_dependent},
                      {"probe", l.probe},
                      {"steps", steps}};
  if (l.host_dependent) {
    j["runpath_directory"] = l.runpath_directory;
    j["requester_host_dependent"] = l.requester_host_dependent;
  }
  return j;
}

nlohmann::json trace_json(const std::vector<std::string>& command, const TraceRun& run, const TraceAnalysis& a) {
  nlohmann::json processes = nlohmann::json::array(), loads = nlohmann::json::array(), fixes = nlohmann::json::array();
  for (const auto& p : a.processes)
    processes.push_back({{"pid", p.pid}, {"parent", p.parent}, {"executable", p.executable}});
  for (const auto& l : a.loads) loads.push_back(trace_load_json(l));
  for (const auto& f : a.fixes) {
    nlohmann::json commands = nlohmann::json::array();
    for (const auto& d : f.directories) commands.push_back(trace_fix_command(d, f.file));
    fixes.push_back(
        {{"file", f.file}, {"directories", f.directories}, {"libraries", f.libraries}, {"commands", commands}});
  }
  return {{"command", command},
          {"exit_code", run.exit_code},
          {"signal", run.signal},
          {"processes", processes},
          {"loads", loads},
          {"fixes", fixes},
          {"summary",
           {{"host_dependent", a.host_dependent()},
            {"undeclared_dlopen", a.undeclared_dlopens()},
            {"failed", a.failed()},
            {"probes", a.probes()}}}};
}

// One section of the text report: the loads a predicate picks.
template <class Pick>
void trace_section(std::string& out, const TraceAnalysis& a, const std::string& title, Pick pick) {
  bool any = false;
  for (const auto& l : a.loads) {
    if (!pick(l)) continue;
    if (!any) out += title + ":\n";
    any = true;
    out += fmt::format("  {} {}\n    => {}\n", l.name, trace_request_words(l), trace_outcome_words(l));
    if (l.host_dependent)
      out += l.requester_host_dependent
                 ? "    (its requester was itself found through the host: fix that first)\n"
                 : fmt::format("    a closure needs {} on the runpath of {}\n", l.runpath_directory, l.requester);
  }
}

std::string trace_text(const std::vector<std::string>& command, const TraceRun& run, const TraceAnalysis& a) {
  // A process that execs shows once per program it runs, a forked child once more.
  std::string out = fmt::format("trace: {} {} {}; {} program run{}, {} load{}\n", trace_shell_word(command[0]),
                                run.signal ? "was killed by signal" : "exited with",
                                run.signal ? run.signal : run.exit_code, a.processes.size(),
                                a.processes.size() == 1 ? "" : "s", a.loads.size(), a.loads.size() == 1 ? "" : "s");
  trace_section(out, a, "host-dependent (found only through LD_LIBRARY_PATH, ld.so.cache or a default directory)",
                [](const TracedLoad& l) { return l.host_dependent; });
  trace_section(out, a, "undeclared dlopen (in no DT_NEEDED or .note.dlopen of its requester)",
                [](const TracedLoad& l) { return l.request == LoadRequest::UndeclaredDlopen && !l.probe; });
  trace_section(out, a, "failed", [](const TracedLoad& l) { return !l.path && !l.probe; });
  trace_section(out, a,
                "probes (a failed dlopen the same requester follows with a name of the same library that loads)",
                [](const TracedLoad& l) { return l.probe; });
  trace_section(out, a, "all loads", [](const TracedLoad&) { return true; });
  if (!a.fixes.empty()) out += "fixes:\n";
  for (const auto& f : a.fixes)
    for (const auto& d : f.directories) out += "  " + trace_fix_command(d, f.file) + "\n";
  return out;
}

bool trace_fails(const std::vector<std::string>& fail_on, const TraceAnalysis& a) {
  std::set<std::string> kinds(fail_on.begin(), fail_on.end());
  return (kinds.count("host-dependent") && a.host_dependent()) ||
         (kinds.count("undeclared-dlopen") && a.undeclared_dlopens()) || (kinds.count("failed") && a.failed());
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
  std::string error;
  std::optional<OutputFile> out;
  if (!o.output.empty() && !(out = OutputFile::open(o.output, error))) return report_unwritable(error);
  auto run = trace_command(o.command);
  if (!run) {
    log_error("cannot trace: {}", run.error().message());
    return exit_code_for(run.error(), ErrorSource::WorkedOn);
  }
  if (run->records.empty())
    log_warning("no loader records: the command cleared its environment (RUNPATCH_TRACE_FD), or /proc is not mounted");
  TraceAnalysis analysis = analyze_trace(run->records, SearchEnvironment::host(true));
  std::string report =
      o.json ? json_text(trace_json(o.command, *run, analysis)) + "\n" : trace_text(o.command, *run, analysis);
  if (out) {
    if (!out->write_and_close(report, error)) return report_unwritable(error);
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
      ->check(CLI::IsMember({kTraceKinds[0], kTraceKinds[1], kTraceKinds[2]}));
  app->add_option("COMMAND", o->command, "The command and its arguments, after --")->required();
  app->footer(
      "The command runs with LD_AUDIT naming runpatch's audit library (lib/runpatch/runpatch-audit.so), which "
      "writes what the loader does to a file runpatch reads afterwards; the command's output and behaviour are "
      "its own. Programs it runs are traced too. Setuid, static, musl and foreign-architecture programs cannot "
      "be traced (runpatch says so and exits 1).");
  return {app, [o] { return run_trace(*o); }};
}

}  // namespace runpatch::cli
