#include <fmt/format.h>

#include "runpatch/reporting/open_attempts_report.hpp"

namespace runpatch {

namespace {
const char* note_source(const OpenAttemptStats& stats) {
  if (stats.note_in_file) return "the file's .note.nixos.ldcache";
  return stats.note_possible ? "the note --ldcache would write" : "no note (none can be written for this file)";
}
}  // namespace

std::string format_open_attempts(const OpenAttemptStats& stats) {
  std::string out = fmt::format("open attempts for the direct DT_NEEDED (with: {}):\n", note_source(stats));
  for (const auto& n : stats.needed) out += fmt::format("  {:<40} {:>5} -> {}\n", n.name, n.without_note, n.with_note);
  out += fmt::format("  {:<40} {:>5} -> {}\n", "total", stats.without_note, stats.with_note);
  return out;
}

nlohmann::json open_attempts_json(const OpenAttemptStats& stats) {
  nlohmann::json needed = nlohmann::json::array();
  for (const auto& n : stats.needed)
    needed.push_back({{"name", n.name}, {"without_note", n.without_note}, {"with_note", n.with_note}});
  return {{"without_note", stats.without_note},
          {"with_note", stats.with_note},
          {"note_in_file", stats.note_in_file},
          {"note_possible", stats.note_possible},
          {"needed", needed}};
}

}  // namespace runpatch
