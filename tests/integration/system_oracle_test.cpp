// The reader agrees with readelf on real files: the CUDA libraries and a
// sample of at least 500 ELF files from /usr/lib. Skips when they are absent.
#include <gtest/gtest.h>

#include <mutex>

#include "oracle_compare.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

std::string compare_all(const std::vector<fs::path>& files) {
  std::mutex mutex;
  std::string diffs;
  parallel_for(files.size(), 0, [&](size_t i) {
    std::string diff = test::compare_with_readelf(files[i]);
    std::lock_guard lock(mutex);
    diffs += diff;
  });
  return diffs;
}

TEST(SystemOracle, EveryCudaElfFile) {
  fs::path cuda = "/usr/local/cuda-13.0";
  if (!fs::exists(cuda)) GTEST_SKIP() << cuda << " is absent on this machine";
  auto listing = list_elf_files({cuda / "lib", cuda / "lib64", cuda / "bin"});
  std::vector<fs::path> files;
  for (auto& f : listing.elf_files)
    if (f.extension() != ".a" && f.extension() != ".o") files.push_back(f);
  std::cout << "[ INFO ] comparing " << files.size() << " CUDA ELF files with readelf\n";
  ASSERT_GE(files.size(), 10u);
  EXPECT_EQ(compare_all(files), "");
}

TEST(SystemOracle, SampleOfUsrLib) {
  if (!fs::exists("/usr/lib")) GTEST_SKIP() << "/usr/lib is absent";
  auto listing = list_elf_files({"/usr/lib"});
  std::vector<fs::path> sample;
  for (auto& f : listing.elf_files)
    if (f.extension() != ".o" && f.extension() != ".a") sample.push_back(f);
  if (sample.size() < 500) GTEST_SKIP() << "only " << sample.size() << " ELF files under /usr/lib";
  // An even spread over the sorted list, at most 600 files.
  size_t step = std::max<size_t>(1, sample.size() / 600);
  std::vector<fs::path> picked;
  for (size_t i = 0; i < sample.size(); i += step) picked.push_back(sample[i]);
  std::cout << "[ INFO ] comparing " << picked.size() << " of " << sample.size() << " /usr/lib ELF files\n";
  EXPECT_GE(picked.size(), 500u);
  EXPECT_EQ(compare_all(picked), "");
}

}  // namespace
}  // namespace runpatch
