// Renderings of check's findings: text, JSON, JUnit XML and SARIF.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runpatch/checking/check.hpp"

namespace runpatch {

// Findings by file, then (with summary) one "N files checked: ..." line.
std::string format_check_text(const CheckReport& report, bool color, bool summary = true);
// Findings under a tree or a why: "  RULE: message" lines, or nothing.
std::string format_findings(const std::vector<Finding>& findings);
nlohmann::json findings_json(const std::vector<Finding>& findings);
nlohmann::json check_json(const CheckReport& report);
// JUnit XML: one testcase per file, failing when it has findings at or above fail_on.
std::string check_junit(const CheckReport& report, Severity fail_on);
// SARIF 2.1.0: one run, every rule described, one result per finding.
nlohmann::json check_sarif(const CheckReport& report, const std::string& version);

}  // namespace runpatch
