#include "elf_checks.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <vector>

namespace runpatch::test {

std::string readelf_warnings(const std::filesystem::path& file) {
  return run_command({"sh", "-c", "LC_ALL=C readelf -a -W -- " + shell_quote(file.string()) + " 2>&1 >/dev/null"})
      .output;
}

std::optional<bool> elflint_passes(const std::filesystem::path& file) {
  static const bool available = have_program("eu-elflint");
  if (!available) return std::nullopt;
  return run_command({"eu-elflint", "--gnu-ld", file.string()}, true).exit_code == 0;
}

CommandResult run_program(const FixtureArch& arch, const std::filesystem::path& program) {
  std::vector<std::string> argv = runner(arch);
  argv.push_back(program.string());
  return run_command(argv, true);
}

std::string strip_tool(const FixtureArch& arch) {
  if (arch.compiler == "cc") return "strip";
  return arch.compiler.substr(0, arch.compiler.size() - 3) + "strip";  // aarch64-linux-gnu-gcc -> ...-strip
}

void expect_greets(const FixtureArch& arch, const std::filesystem::path& program) {
  auto r = run_program(arch, program);
  EXPECT_EQ(r.exit_code, 0) << program << ": " << r.output;
  EXPECT_EQ(r.output, "hello from lib\n") << program;
}

bool can_run(const FixtureArch& arch) { return arch.qemu == "-" || have_program(arch.qemu); }

std::vector<FixtureArch> runnable_arches() {
  std::vector<FixtureArch> runnable;
  for (const auto& arch : fixture_arches()) {
    if (can_run(arch))
      runnable.push_back(arch);
    else
      std::cout << "[ NOT RUN  ] " << arch.name << ": " << arch.qemu << " is not installed\n";
  }
  EXPECT_FALSE(runnable.empty()) << "no fixture arch can run here";
  return runnable;
}

}  // namespace runpatch::test
