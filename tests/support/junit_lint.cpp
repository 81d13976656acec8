#include "junit_lint.hpp"

#include <cstdlib>

#include "process.hpp"

namespace runpatch::test {

std::optional<std::string> junit_lint_errors(const std::filesystem::path& report) {
  if (!have_program("xmllint")) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") return "xmllint is not installed (libxml2-utils, scripts/install-deps)";
    return std::nullopt;
  }
  auto lint = run_command({"xmllint", "--noout", report.string()}, true);
  if (lint.exit_code == 0) return std::string();
  return "xmllint exit " + std::to_string(lint.exit_code) + ": " + lint.output;
}

}  // namespace runpatch::test
