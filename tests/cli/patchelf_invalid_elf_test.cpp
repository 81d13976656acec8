// Files whose section headers are corrupt (the loader never reads them):
// runpatch-patchelf refuses each as patchelf 0.19 does (its test invalid-elf,
// read as facts), with patchelf's first words, exit 1, the file untouched,
// and runpatch's detail after the words. Each case corrupts one field of the
// host's prog-pie, an ELF64 little-endian file.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "process.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

uint64_t get(const std::vector<uint8_t>& bytes, uint64_t offset, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = (v << 8) | bytes.at(offset + i);
  return v;
}

// Where the fields of an ELF64LE file's section headers are.
struct Sections {
  const std::vector<uint8_t>& bytes;
  uint64_t header(uint64_t index) const { return get(bytes, 0x28, 8) + index * 64; }
  uint64_t names_index() const { return get(bytes, 0x3e, 2); }
  uint64_t offset_of(uint64_t index) const { return get(bytes, header(index) + 0x18, 8); }
  uint64_t size_of(uint64_t index) const { return get(bytes, header(index) + 0x20, 8); }
  uint64_t named(const std::string& name) const {
    uint64_t names = offset_of(names_index());
    for (uint64_t i = 1; i < get(bytes, 0x3c, 2); ++i)
      if (std::strcmp(reinterpret_cast<const char*>(bytes.data() + names + get(bytes, header(i), 4)), name.c_str()) ==
          0)
        return i;
    ADD_FAILURE() << "no section " << name;
    return 0;
  }
};

// The cases are ELF64 little-endian: the host's fixtures, when the host is x86-64.
fs::path x86_64_host() {
  for (const auto& arch : test::fixture_arches())
    if (arch.qemu == "-" && arch.name == "x86_64") return arch.dir;
  return {};
}

struct InvalidElfCase {
  std::string name;
  std::vector<std::string> args;  // before the file
  void (*corrupt)(std::vector<uint8_t>&);
  std::string words;  // patchelf's
};

const std::vector<InvalidElfCase> kInvalidElfCases = {
    {"shstrtab-idx",
     {"--print-rpath"},
     [](auto& b) { test::poke(b, 0x3e, 2, false, 0xffff); },
     "string table index out of bounds"},
    {"shstrtab-size",
     {"--print-rpath"},
     [](auto& b) { test::poke(b, Sections{b}.header(Sections{b}.names_index()) + 0x20, 8, false, 0x7fffffffffffffff); },
     "data region extends past file end"},
    {"shstrtab-zero",
     {"--print-rpath"},
     [](auto& b) { test::poke(b, Sections{b}.header(Sections{b}.names_index()) + 0x20, 8, false, 0); },
     "string table size is zero"},
    {"shstrtab-nonterm",
     {"--print-rpath"},
     [](auto& b) {
       Sections s{b};
       b[s.offset_of(s.names_index()) + s.size_of(s.names_index()) - 1] = 'A';
     },
     "string table is not zero terminated"},
    {"shdr-name",
     {"--set-rpath", "/x"},
     [](auto& b) { test::poke(b, Sections{b}.header(1), 4, false, 0x7fffffff); },
     "section name offset out of bounds"},
    {"shentsize",
     {"--print-rpath"},
     [](auto& b) { test::poke(b, 0x3a, 2, false, 48); },
     "section headers have wrong size"},
    {"dynamic-offset",
     {"--print-needed"},
     [](auto& b) {
       test::poke(b, Sections{b}.header(Sections{b}.named(".dynamic")) + 0x18, 8, false, 0x7fffffffffffffff);
     },
     "data offset extends past file end"},
    {"dynamic-unaligned",
     {"--print-needed"},
     [](auto& b) { test::poke(b, Sections{b}.header(Sections{b}.named(".dynamic")) + 0x18, 8, false, 1); },
     "section content is not naturally aligned"},
    {"dynstr-noterm",
     {"--print-needed"},
     [](auto& b) {
       Sections s{b};
       uint64_t dynstr = s.named(".dynstr");
       b[s.offset_of(dynstr) + s.size_of(dynstr) - 1] = 'A';
     },
     "string table is not NUL-terminated"},
    {"phdr-offset",
     {"--print-rpath"},
     [](auto& b) { test::poke(b, 0x20, 8, false, 0xffffff30); },
     "program header table out of bounds"},
};

TEST(PatchelfInvalidElf, CorruptSectionHeadersAreRefusedInPatchelfsWords) {
  fs::path host = x86_64_host();
  if (host.empty()) GTEST_SKIP() << "the cases are written for an x86-64 host";
  auto original = test::read_file(host / "prog-pie");
  for (const auto& c : kInvalidElfCases) {
    SCOPED_TRACE(c.name);
    auto bytes = original;
    c.corrupt(bytes);
    fs::path file = test::scratch_dir("patchelf-invalid/" + c.name) / "prog";
    test::write_file(file, bytes);
    std::vector<std::string> argv = {test::runpatch_patchelf_path()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    argv.push_back(file.string());
    auto r = test::run_command(argv, true);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    // patchelf's line alone first (what a script that matches patchelf's message sees), runpatch's detail next.
    EXPECT_EQ(r.output.rfind("patchelf: " + c.words + "\n" + file.string() + ": ", 0), 0u) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 2) << "two lines\n" << r.output;
    EXPECT_EQ(test::read_file(file), bytes) << "the file was touched";
    // runpatch itself reads what the loader reads, and may go on.
  }
}

// A symbol of a section without a name: patchelf warns as it rewrites the
// sections and edits anyway; so do we, and the program still runs.
TEST(PatchelfInvalidElf, ASymbolOfAnUnnamedSectionIsAWarning) {
  fs::path host = x86_64_host();
  if (host.empty()) GTEST_SKIP() << "the case is written for an x86-64 host";
  auto bytes = test::read_file(host / "prog-nopie");
  Sections s{bytes};
  uint64_t text = s.named(".text");  // section symbols and functions refer to it
  test::poke(bytes, s.header(text), 4, false, 0);
  fs::path dir = test::scratch_dir("patchelf-invalid/unnamed");
  fs::copy_file(host / "lib/libgreet.so", dir / "libgreet.so");
  test::write_file(dir / "prog", bytes);
  fs::permissions(dir / "prog", fs::perms::owner_exec, fs::perm_options::add);
  auto r =
      test::run_command({test::runpatch_patchelf_path(), "--set-rpath", dir.string(), (dir / "prog").string()}, true);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("warning: symbol table entry refers to an unnamed section (index " + std::to_string(text) + ")"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(test::run_command({(dir / "prog").string()}).output, "hello from lib\n");
  auto print = test::run_command({test::runpatch_patchelf_path(), "--print-rpath", (dir / "prog").string()}, true);
  EXPECT_EQ(print.output, dir.string() + "\n") << "a print-only run rewrites nothing and does not warn";
}

}  // namespace
}  // namespace runpatch
