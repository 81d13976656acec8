#include "tools_under_test.hpp"

#include <gtest/gtest.h>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/loader_paths.hpp"

namespace runpatch::test {

std::string runpatch_patchelf_path() {
  return (std::filesystem::path(RUNPATCH_CLI).parent_path() / "runpatch-patchelf").string();
}

CommandResult cli(std::vector<std::string> args, bool merge_stderr) {
  args.insert(args.begin(), RUNPATCH_CLI);
  return run_command(args, merge_stderr);
}

FixtureArch host() {
  static const FixtureArch arch = fixture_arches().at(0);
  return arch;
}

std::string runpath(const std::filesystem::path& file) {
  auto info = read_elf_info(file);
  if (!info) {
    ADD_FAILURE() << info.error().message();
    return {};
  }
  return effective_runpath(*info);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace runpatch::test
