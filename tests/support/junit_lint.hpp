// JUnit reports checked by xmllint (libxml2-utils, which scripts/install-deps
// installs): every test that writes one checks it, as strict_json checks JSON.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace runpatch::test {

// What xmllint finds wrong with the XML file (empty: well-formed); nullopt
// when xmllint is not installed — but under CI=true a missing xmllint is an
// error, so the check cannot pass unnoticed where the CI promises it.
std::optional<std::string> junit_lint_errors(const std::filesystem::path& report);

}  // namespace runpatch::test
