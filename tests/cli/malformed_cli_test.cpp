// The generated malformed corpus through the real CLI: each file gives one
// clear error naming the file, exit status 1, and stays byte-identical.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>

#include "fixtures.hpp"
#include "malformed_corpus.hpp"
#include "process.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

size_t count_lines_with(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(MalformedCorpus, LibraryErrorsNameFileWhatAndOffset) {
  for (const auto& c : test::malformed_corpus()) {
    SCOPED_TRACE(c.name);
    auto info = read_elf_info(c.bytes, c.name);
    if (info) {
      // Accepted by the reader (e.g. tables that overlap but parse): the editor must still refuse or cope.
      continue;
    }
    EXPECT_EQ(info.error().file, c.name);
    EXPECT_FALSE(info.error().what.empty());
    EXPECT_NE(info.error().message().find(c.error), std::string::npos) << info.error().message();
    EXPECT_EQ(error_code_name(info.error().code), error_code_name(c.code)) << c.name << ": " << info.error().message();
    // Where the problem is: every structural error has an offset; "not ELF" is about the whole file.
    if (c.bytes.size() >= 16 && c.error != "not an ELF file") {
      EXPECT_TRUE(info.error().offset) << info.error().message();
    }
  }
}

// A FIFO named by mistake: every command that opens the file refuses it at
// once (`timeout` turns a wait for a writer into exit 124).
TEST(MalformedCli, FifoIsRefusedNotWaitedOn) {
  fs::path dir = test::scratch_dir("malformed-cli-fifo");
  fs::path fifo = dir / "fifo";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (std::vector<std::string> args : {std::vector<std::string>{"print"},
                                        {"set", "--runpath", "/x"},
                                        {"set", "--in-place", "--runpath", "/x"},
                                        {"set", "--dry-run", "--runpath", "/x"},
                                        {"set", "-o", (dir / "out").string(), "--runpath", "/x"}}) {
    SCOPED_TRACE(args.front() + " " + args.back());
    const std::vector<std::string> prefix = {"timeout", "10", RUNPATCH_CLI};
    args.insert(args.begin(), prefix.begin(), prefix.end());
    args.push_back(fifo.string());
    auto r = test::run_command(args, true);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(count_lines_with(r.output, "runpatch: "), 1u) << r.output;
    EXPECT_NE(r.output.find(fifo.string() + ": not a regular file"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(MalformedCorpus, CliGivesOneErrorExitOneAndLeavesTheFileAlone) {
  fs::path dir = test::scratch_dir("malformed-cli");
  size_t cases = 0;
  for (const auto& c : test::malformed_corpus()) {
    fs::path file = dir / c.name;
    test::write_file(file, c.bytes);
    bool readable = static_cast<bool>(read_elf_info(c.bytes, file.string()));
    std::vector<std::vector<std::string>> commands = {
        {"set", "--runpath", "/new/lib:" + std::string(300, 'n'), file.string()},
        {"set", "--in-place", "--runpath", "/x", file.string()},
        {"driver", "-q", file.string()},  // -q: the error alone, no summary
    };
    if (!readable) commands.push_back({"print", file.string()});
    for (const auto& args : commands) {
      SCOPED_TRACE(c.name + ": runpatch " + args[0] + " " + args[1]);
      auto r = test::cli(args);
      auto after = test::read_file(file);
      if (readable && r.exit_code == 0) {
        // A file the reader accepts may be editable; then the result must read back.
        EXPECT_TRUE(read_elf_info(file)) << r.output;
        test::write_file(file, c.bytes);
        continue;
      }
      if (args[0] == "driver" && r.exit_code == 0) continue;  // not ELF: the driver hook skips it, as it must
      EXPECT_EQ(r.exit_code, 1) << r.output;
      EXPECT_EQ(count_lines_with(r.output, "runpatch: "), 1u) << r.output;
      EXPECT_NE(r.output.find(file.string()), std::string::npos) << r.output;
      if (!c.error.empty() && !readable) {
        EXPECT_NE(r.output.find(c.error), std::string::npos) << r.output;
      }
      EXPECT_EQ(after, c.bytes) << "the file changed";
      EXPECT_TRUE(std::none_of(fs::directory_iterator(dir), fs::directory_iterator(), [](const auto& e) {
        return e.path().filename().string().find(".runpatch-") != std::string::npos;
      })) << "a temporary copy was left behind";
    }
    ++cases;
  }
  EXPECT_GE(cases, 60u);
}

}  // namespace
}  // namespace runpatch
