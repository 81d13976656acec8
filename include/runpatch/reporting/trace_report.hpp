// Renderings of `runpatch trace`'s analysis: the text report (sections of
// loads, then the fixes) and the JSON report, and the command that fixes a
// host-dependent load.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runpatch/tracing/trace_analysis.hpp"
#include "runpatch/tracing/trace_run.hpp"

namespace runpatch {

// `runpatch set --add-runpath DIR FILE`, each word quoted for the shell only where it must be.
std::string trace_fix_command(const std::string& directory, const std::string& file);
std::string trace_report_text(const std::vector<std::string>& command, const TraceRun& run, const TraceAnalysis& a);
nlohmann::json trace_report_json(const std::vector<std::string>& command, const TraceRun& run, const TraceAnalysis& a);

}  // namespace runpatch
