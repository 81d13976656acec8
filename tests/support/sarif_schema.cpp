#include "sarif_schema.hpp"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <sstream>

#include "fixtures.hpp"
#include "process.hpp"
#include "synthetic_elf.hpp"

namespace runpatch::test {

namespace {

constexpr const char* kValidator = R"(import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(3)
schema = json.load(open(sys.argv[1]))
log = json.load(open(sys.argv[2]))
errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(log), key=lambda e: list(e.absolute_path))
for e in errors:
    print('/' + '/'.join(str(p) for p in e.absolute_path) + ': ' + e.message.splitlines()[0])
sys.exit(1 if errors else 0)
)";

}  // namespace

std::optional<std::vector<std::string>> sarif_schema_violations(const nlohmann::json& log) {
  static std::atomic<int> serial{0};
  // A folder per test process: ctest runs several at once, each numbering from 0.
  static const std::filesystem::path dir = scratch_dir("sarif-schema/" + std::to_string(::getpid()));
  auto file = dir / ("log-" + std::to_string(serial++) + ".sarif");
  std::string text = log.dump(2);
  write_file(file, std::vector<uint8_t>(text.begin(), text.end()));
  // The system's python3: Debian's python3-jsonschema is installed for it (scripts/install-deps).
  auto run = run_command(
      {"/usr/bin/python3", "-c", kValidator, RUNPATCH_TEST_DATA_DIR "/sarif-schema-2.1.0.json", file.string()}, true);
  if (run.exit_code == 3 || run.exit_code == 127) return std::nullopt;
  std::vector<std::string> violations;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) violations.push_back(line);
  if (run.exit_code != 0 && violations.empty())
    violations.push_back("validator failed: exit " + std::to_string(run.exit_code));
  return violations;
}

}  // namespace runpatch::test
