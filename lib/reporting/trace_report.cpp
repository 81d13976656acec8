// Renderings of a trace: text and JSON reports and their fix lines (the analysis is lib/tracing's).
#include "runpatch/reporting/trace_report.hpp"

#include <fmt/core.h>

namespace runpatch {

namespace {

// A word for the shell, quoted only when it has to be.
std::string trace_shell_word(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "/._-+=:,@%") == std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string trace_fix_command(const std::string& directory, const std::string& file) {
  return "runpatch set --add-runpath " + trace_shell_word(directory) + " " + trace_shell_word(file);
}

namespace {

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

}  // namespace

nlohmann::json trace_report_json(const std::vector<std::string>& command, const TraceRun& run, const TraceAnalysis& a) {
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

namespace {

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

}  // namespace

std::string trace_report_text(const std::vector<std::string>& command, const TraceRun& run, const TraceAnalysis& a) {
  // A process that execs shows once per program it runs, a forked child once more.
  std::string out = fmt::format("trace: {} {} {}; {} program run{}, {} load{}\n", trace_shell_word(command[0]),
                                run.signal ? "was killed by signal" : "exited with",
                                run.signal ? run.signal : run.exit_code, a.processes.size(),
                                a.processes.size() == 1 ? "" : "s", a.loads.size(), a.loads.size() == 1 ? "" : "s");
  trace_section(out, a, "host-dependent (found only through LD_LIBRARY_PATH, ld.so.cache or a default directory)",
                [](const TracedLoad& l) { return is_kind(l, TraceKind::HostDependent); });
  trace_section(out, a, "undeclared dlopen (in no DT_NEEDED or .note.dlopen of its requester)",
                [](const TracedLoad& l) { return is_kind(l, TraceKind::UndeclaredDlopen); });
  trace_section(out, a, "failed", [](const TracedLoad& l) { return is_kind(l, TraceKind::Failed); });
  trace_section(out, a,
                "probes (a failed dlopen the same requester follows with a name of the same library that loads)",
                [](const TracedLoad& l) { return l.probe; });
  trace_section(out, a, "all loads", [](const TracedLoad&) { return true; });
  if (!a.fixes.empty()) out += "fixes:\n";
  for (const auto& f : a.fixes)
    for (const auto& d : f.directories) out += "  " + trace_fix_command(d, f.file) + "\n";
  return out;
}

}  // namespace runpatch
