// No false alarms: `check` over the host's files and the CUDA toolkit
// (read-only) raises no error on a file the real loader resolves completely
// (`ld.so --list` exits 0 and lists nothing "not found"). The loader is the
// oracle, asked only about the files check raised an error on. Under the
// sanitizers every eighth file is checked (the regular build checks all).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/checking/check.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::kHostLoader;

namespace fs = std::filesystem;

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUNPATCH_SWEEP_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RUNPATCH_SWEEP_SANITIZED 1
#endif

// Every file in the regular build; under the sanitizers (ten times slower) one in eight.
size_t sample_every() {
#ifdef RUNPATCH_SWEEP_SANITIZED
  return 8;
#else
  return 1;
#endif
}

// Regular ELF files under the directories (links are the files they name, checked once there).
std::vector<fs::path> elf_files(const std::vector<fs::path>& dirs, size_t every) {
  std::vector<fs::path> files;
  size_t seen = 0;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_symlink(ec) || !it->is_regular_file(ec) || !has_elf_magic(it->path())) continue;
      if (seen++ % every == 0) files.push_back(it->path());
    }
  }
  return files;
}

// What the host loader says of the file: resolved completely, or why not.
bool loader_resolves(const std::string& file, std::string& listing) {
  auto listed = test::run_command({kHostLoader, "--list", file}, true);
  listing = listed.output;
  return listed.exit_code == 0 && listing.find("not found") == std::string::npos;
}

TEST(CheckSweep, NoErrorOnAFileTheLoaderResolves) {
  if (!fs::exists(kHostLoader) || test::fixture_arches().at(0).name != "x86_64")
    GTEST_SKIP() << "needs the x86-64 host loader as the oracle";
  auto files = elf_files({"/usr/lib", "/usr/bin", "/usr/local/cuda-13.0"}, sample_every());
  if (files.empty()) GTEST_SKIP() << "no ELF files under /usr/lib, /usr/bin, /usr/local/cuda-13.0";
  CheckOptions options;
  options.env = SearchEnvironment::host(false);  // the loader below runs without LD_LIBRARY_PATH either
  CheckReport report = check_paths(files, options);
  EXPECT_GT(report.files.size(), files.size() / 2) << "most of them are dynamically linked";
  std::set<std::string> asked;
  size_t false_alarms = 0;
  for (const auto& f : report.findings) {
    if (f.severity != Severity::Error || !asked.insert(f.file).second) continue;
    auto info = read_elf_info(f.file);
    // Only what this loader can list: the host's machine and class.
    if (!info || info->identity.machine != elf::EM_X86_64 || info->identity.elf_class != ElfClass::Elf64) continue;
    std::string listing;
    if (!loader_resolves(f.file, listing)) continue;
    ++false_alarms;
    ADD_FAILURE() << f.file << ": " << f.rule_id() << ": " << f.message << "\nbut " << kHostLoader
                  << " --list resolves it:\n"
                  << listing;
  }
  RecordProperty("files", static_cast<int>(report.files.size()));
  RecordProperty("errors_looked_at", static_cast<int>(asked.size()));
  EXPECT_EQ(false_alarms, 0u);
}

}  // namespace
}  // namespace runpatch
