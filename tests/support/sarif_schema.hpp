// SARIF logs checked against the official SARIF 2.1.0 JSON schema (OASIS'
// sarif-schema-2.1.0.json, kept as data in tests/data).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace runpatch::test {

// Each violation of the schema as "JSON path: what is wrong" (empty: valid),
// as Python's jsonschema (Debian's python3-jsonschema, draft 4) finds them;
// nullopt when that validator is not installed.
std::optional<std::vector<std::string>> sarif_schema_violations(const nlohmann::json& log);

}  // namespace runpatch::test
