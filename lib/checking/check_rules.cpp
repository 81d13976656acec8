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
  for (Severity s : kSeverities)
    if (severity_name(s) == name) return s;
  return std::nullopt;
}

std::string_view closure_name(CheckOptions::Closure closure) {
  switch (closure) {
    case CheckOptions::Closure::Auto: return "auto";
    case CheckOptions::Closure::Nix: return "nix";
    case CheckOptions::Closure::Host: return "host";
  }
  return "?";
}

std::optional<CheckOptions::Closure> parse_closure(std::string_view name) {
  for (auto closure : kClosures)
    if (closure_name(closure) == name) return closure;
  return std::nullopt;
}

bool CheckReport::any_at_least(Severity s) const {
  for (const auto& f : findings)
    if (f.severity >= s) return true;
  return false;
}

}  // namespace runpatch
