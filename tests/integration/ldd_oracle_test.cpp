// `runpatch tree` agrees with the real loader (`ld.so --list`, what ldd runs) on
// every dynamically linked host ELF file under /usr/bin, /usr/lib and the CUDA
// toolkit: the same libraries found at the same paths, the same ones missing.
#include <gtest/gtest.h>

#include <mutex>

#include "loader_listing.hpp"
#include "process.hpp"
#include "runpatch/resolving/resolve.hpp"
#include "runpatch/scanning/scan.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::kHostLoader;

namespace fs = std::filesystem;

std::optional<test::LoaderListing> ld_so_list(const fs::path& file) {
  auto r = test::run_command({"sh", "-c",
                              std::string("exec env -u LD_LIBRARY_PATH -u LD_PRELOAD ") + kHostLoader + " --list " +
                                  test::shell_quote(file.string()) + " 2>/dev/null"});
  if (r.exit_code != 0) return std::nullopt;
  return test::parse_loader_listing(r.output, kHostLoader);
}

std::vector<fs::path> host_dynamic_files(const std::vector<fs::path>& roots) {
  std::vector<fs::path> files;
  auto listing = list_elf_files(roots);
  auto infos = read_elf_infos(listing.elf_files);
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto& info = infos[i];
    std::string path = listing.elf_files[i].string();
    if (!info || !info->has_dynamic || info->identity.machine != 62 || info->identity.elf_class != ElfClass::Elf64)
      continue;
    if (path.find("/debug/") != std::string::npos || info->type == 1) continue;
    files.push_back(listing.elf_files[i]);
  }
  return files;
}

TEST(LddOracle, TreeMatchesTheLoaderOnEveryHostFile) {
  if (!fs::exists(kHostLoader)) GTEST_SKIP() << kHostLoader << " is absent";
  std::vector<fs::path> roots;
  for (const char* dir : {"/usr/bin", "/usr/lib", "/usr/local/cuda-13.0"})
    if (fs::exists(dir)) roots.emplace_back(dir);
  auto files = host_dynamic_files(roots);
  if (files.size() < 100) GTEST_SKIP() << "only " << files.size() << " dynamic ELF files found";
  SearchEnvironment env = SearchEnvironment::host(/*with_ld_library_path=*/false);
  std::mutex mutex;
  std::string mismatches;
  size_t compared = 0, loader_refused = 0;
  parallel_for(files.size(), 0, [&](size_t i) {
    auto theirs = ld_so_list(files[i]);
    auto tree = resolve_tree(files[i], env);
    std::lock_guard lock(mutex);
    if (!theirs) {
      ++loader_refused;  // the loader itself will not load it (e.g. a plugin needing symbols of its host)
      return;
    }
    ++compared;
    if (!tree) {
      mismatches += files[i].string() + ": " + tree.error().message() + "\n";
      return;
    }
    mismatches += test::listing_differences(files[i].string(), test::listing_of(*tree, kHostLoader), *theirs);
  });
  std::cout << "[ INFO ] compared " << compared << " files with ld.so --list (" << loader_refused
            << " refused by ld.so itself)\n";
  EXPECT_GE(compared, 100u);
  EXPECT_EQ(mismatches.substr(0, 4000), "");
}

}  // namespace
}  // namespace runpatch
