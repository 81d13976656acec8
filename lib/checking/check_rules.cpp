#include "runpatch/checking/check.hpp"

namespace runpatch {

std::optional<CheckRule> find_check_rule(std::string_view id) {
  for (const auto& r : kCheckRules)
    if (id == r.id) return r.rule;
  return std::nullopt;
}

std::string severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

std::optional<Severity> parse_severity(const std::string& name) {
  if (name == "info") return Severity::Info;
  if (name == "warning") return Severity::Warning;
  if (name == "error") return Severity::Error;
  return std::nullopt;
}

bool CheckReport::any_at_least(Severity s) const {
  for (const auto& f : findings)
    if (f.severity >= s) return true;
  return false;
}

}  // namespace runpatch
