// Running external commands (oracles, the CLI, programs under test) from tests.
#pragma once

#include <string>
#include <vector>

namespace runpatch::test {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout, plus stderr when merged
};

// Runs argv without a shell; stderr joins stdout when merge_stderr.
CommandResult run_command(const std::vector<std::string>& argv, bool merge_stderr = false);

// Single-quotes a word for /bin/sh.
std::string shell_quote(const std::string& word);

bool have_program(const std::string& name);

}  // namespace runpatch::test
