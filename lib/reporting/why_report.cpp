#include "runpatch/reporting/why_report.hpp"

#include <fmt/core.h>

#include "runpatch/reporting/check_report.hpp"
#include "runpatch/reporting/tree_report.hpp"

namespace runpatch {

std::string why_text(const std::string& file, const WhyAnswer& answer) {
  std::string out = fmt::format("{}: {}\n", file, answer.loader.describe());
  for (const auto& need : answer.needs) {
    const Resolution& r = need.resolution;
    out += fmt::format("{} needed by {}\n", r.name, need.needed_by);
    for (const auto& a : r.attempts) out += fmt::format("  {:<60} {} ({})\n", a.path, a.outcome_text(), a.rule);
    out += r.path ? fmt::format("  => {} via {}\n", *r.path, found_via_name(r.via)) : "  => not found\n";
    for (const auto& s : need.suggestions) out += fmt::format("  fix: {}\n", s.advice);
  }
  if (!answer.needed())
    out += fmt::format("{} does not need {} (directly or through its dependencies)\n", file, answer.library);
  return out + format_findings(answer.related);
}

nlohmann::json why_json(const WhyAnswer& answer) {
  nlohmann::json report = nlohmann::json::array();
  for (const auto& need : answer.needs) {
    auto j = resolution_json(need.resolution);
    j["needed_by"] = need.needed_by;
    j["loader"] = loader_model_json(answer.loader);
    for (const auto& s : need.suggestions)
      j["suggestions"].push_back({{"candidate", s.candidate}, {"verdict", s.verdict}, {"advice", s.advice}});
    report.push_back(j);
  }
  return report;
}

}  // namespace runpatch
