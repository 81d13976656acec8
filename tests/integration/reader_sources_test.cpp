// read_elf_info(path) reads with pread on demand, read_elf_info(bytes) from a
// mapping (as the editor does): both must say the same of every file, good or
// broken, including the same error.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "malformed_corpus.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "runpatch/reporting/elf_info_report.hpp"
#include "runpatch/scanning/scan.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

// What the two sources say of file, as comparable text; "" when they agree.
std::string disagreement(const fs::path& file) {
  auto read = read_elf_info(file);
  auto mapped_file = MappedFile::open(file);
  if (!mapped_file) return read ? file.string() + ": maps with an error only\n" : "";
  auto mapped = read_elf_info(mapped_file->bytes(), mapped_file->path());
  std::string on_demand = read ? elf_info_json(*read).dump() : "error: " + read.error().message();
  std::string whole = mapped ? elf_info_json(*mapped).dump() : "error: " + mapped.error().message();
  if (on_demand == whole) return "";
  return file.string() + ":\n  pread: " + on_demand + "\n  mmap:  " + whole + "\n";
}

std::vector<fs::path> fixture_files() {
  std::vector<fs::path> files;
  for (const auto& arch : test::fixture_arches())
    for (const auto& entry : fs::recursive_directory_iterator(arch.dir))
      if (entry.is_regular_file() && has_elf_magic(entry.path())) files.push_back(entry.path());
  return files;
}

TEST(ReaderSources, AgreeOnEveryFixture) {
  auto files = fixture_files();
  ASSERT_GE(files.size(), 20u);
  std::string diffs;
  for (const auto& file : files) diffs += disagreement(file);
  EXPECT_EQ(diffs, "");
}

// Each broken image gives the same one error both ways, and reading on
// demand never touches bytes past the end (ASan runs this too).
TEST(ReaderSources, AgreeOnEveryMalformedImage) {
  fs::path dir = test::scratch_dir("reader-sources/malformed");
  auto corpus = test::malformed_corpus();
  ASSERT_FALSE(corpus.empty());
  std::string diffs;
  for (const auto& c : corpus) {
    if (c.bytes.empty()) continue;  // an empty file cannot be mapped; both refuse it (below)
    fs::path file = dir / c.name;
    test::write_file(file, c.bytes);
    diffs += disagreement(file);
    auto read = read_elf_info(file);
    ASSERT_FALSE(read) << c.name;
    EXPECT_NE(read.error().message().find(c.error), std::string::npos) << read.error().message();
    EXPECT_EQ(error_code_name(read.error().code), error_code_name(c.code)) << c.name << ": " << read.error().message();
  }
  EXPECT_EQ(diffs, "");
  test::write_file(dir / "empty", {});
  auto empty = read_elf_info(dir / "empty");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message().find("file is empty"), std::string::npos) << empty.error().message();
  EXPECT_EQ(empty.error().code, ErrorCode::NotRegularFile) << empty.error().message();
}

// A FIFO or a directory named by mistake is refused at once, never waited on.
TEST(ReaderSources, RefuseWhatIsNotARegularFile) {
  fs::path dir = test::scratch_dir("reader-sources/special");
  fs::path fifo = dir / "fifo";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const fs::path& path : {fifo, dir}) {
    auto read = read_elf_info(path);
    ASSERT_FALSE(read) << path;
    EXPECT_NE(read.error().message().find("not a regular file"), std::string::npos) << read.error().message();
    EXPECT_EQ(read.error().code, ErrorCode::NotRegularFile) << read.error().message();
  }
}

// Real libraries: dynamic sections far from the headers, long string tables,
// notes; the CUDA libraries and an even sample of /usr/lib.
TEST(ReaderSources, AgreeOnSystemFiles) {
  std::vector<fs::path> roots;
  for (const char* dir : {"/usr/local/cuda-13.0/lib", "/usr/lib/x86_64-linux-gnu", "/usr/bin"})
    if (fs::exists(dir)) roots.push_back(dir);
  if (roots.empty()) GTEST_SKIP() << "no system library directories on this machine";
  auto listing = list_elf_files(roots);
  size_t step = std::max<size_t>(1, listing.elf_files.size() / 400);
  std::string diffs;
  size_t compared = 0;
  for (size_t i = 0; i < listing.elf_files.size(); i += step, ++compared) diffs += disagreement(listing.elf_files[i]);
  std::cout << "[ INFO ] compared " << compared << " system ELF files\n";
  EXPECT_EQ(diffs, "");
}

}  // namespace
}  // namespace runpatch
