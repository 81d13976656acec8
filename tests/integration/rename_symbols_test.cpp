// Renaming dynamic symbols (patchelf --rename-dynamic-symbols, runpatch set
// --rename-dynamic-symbols) on every fixture arch: the renamed program and
// library still run together (natively or under qemu-user), renaming one side
// only makes the loader fail, readelf sees the new names and eu-elflint
// accepts the rebuilt hash tables.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "editing/symbol_rename.hpp"
#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "editing/edit_testing.hpp"
#include "runpatch/editing/edit.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::host;

namespace fs = std::filesystem;
using test::FixtureArch;

const std::string kPatchelf = test::runpatch_patchelf_path();

// Every 7th of prog-manyexports' 1500 exports, plus greet: many renamed symbols change bucket.
std::vector<std::pair<std::string, std::string>> many_renames() {
  std::vector<std::pair<std::string, std::string>> map;
  for (int i = 0; i < 1500; i += 7)
    map.emplace_back("exported_function_with_a_long_name_" + std::to_string(i), "renamed_" + std::to_string(i));
  map.emplace_back("greet", "greet_v2");
  return map;
}

EditRequest renaming(std::vector<std::pair<std::string, std::string>> map) {
  EditRequest request;
  request.rename_symbols = std::move(map);
  return request;
}

// Dynamic symbol names in table order, as readelf (not our reader) lists them.
std::vector<std::string> readelf_dynamic_symbols(const fs::path& file) {
  auto r = test::run_command({"readelf", "-W", "--dyn-syms", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> names;
  std::istringstream lines(r.output);
  // A symbol row starts with its index and a colon (by hand: std::regex trips GCC 12's warnings under the sanitizers).
  auto is_row = [](const std::string& line) {
    size_t at = line.find_first_not_of(" \t");
    size_t digits_end = at == std::string::npos ? at : line.find_first_not_of("0123456789", at);
    return digits_end != std::string::npos && digits_end > at && line[digits_end] == ':';
  };
  for (std::string line; std::getline(lines, line);) {
    if (!is_row(line)) continue;
    // Num Value Size Type Bind Vis [ppc64: <localentry>] Ndx Name [(version index)]: the name is the last word.
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (!w.empty() && w.back().front() == '(') w.pop_back();
    std::string name = w.size() >= 8 ? w.back() : "";
    names.push_back(name.substr(0, name.find('@')));  // readelf shows versions as name@VERSION
  }
  return names;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A library whose own calls and function table reach its exports through
// relocations (PLT slots, data pointers): renamed exports that .gnu.hash
// re-sorts must keep their relocations, or checksum() comes out different.
constexpr int kManyFunctions = 200;

void write_many_library_sources(const fs::path& dir) {
  std::ofstream lib(dir / "many.c");
  for (int i = 0; i < kManyFunctions; ++i) lib << "int f_" << i << "(int x) { return 3 * x + " << i << "; }\n";
  lib << "int (*const table[])(int) = {";
  for (int i = 0; i < kManyFunctions; ++i) lib << (i ? ", " : "") << "f_" << i;
  lib << "};\nlong checksum(void) {\n  long s = 0;\n";
  for (int i = 0; i < kManyFunctions; ++i) lib << "  s += (long)f_" << i << "(1) * " << i + 1 << ";\n";
  lib << "  for (int i = 0; i < " << kManyFunctions << "; ++i) s += (long)table[i](2) * (i + 1);\n  return s;\n}\n";
  std::ofstream(dir / "many_main.c") << "#include <stdio.h>\nlong checksum(void);\n"
                                     << "int main(void) { printf(\"%ld\\n\", checksum()); return 0; }\n";
}

// What checksum() returns when every call reaches the function it names.
long expected_checksum() {
  long s = 0;
  for (long i = 0; i < kManyFunctions; ++i) s += (3 + i) * (i + 1) + (6 + i) * (i + 1);
  return s;
}

// Every 3rd f_i renamed to r_i.
std::vector<std::pair<std::string, std::string>> every_third_function() {
  std::vector<std::pair<std::string, std::string>> map;
  for (int i = 0; i < kManyFunctions; i += 3) map.emplace_back("f_" + std::to_string(i), "r_" + std::to_string(i));
  return map;
}

void compile(const FixtureArch& arch, std::vector<std::string> args) {
  args.insert(args.begin(), {arch.compiler, "-O2", "-fPIC"});
  auto r = test::run_command(args, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// dir/lib/libmany.so and dir/prog, which prints its checksum.
void build_many(const FixtureArch& arch, const fs::path& dir) {
  fs::create_directories(dir / "lib");
  write_many_library_sources(dir);
  compile(arch,
          {"-shared", "-Wl,-soname,libmany.so", "-o", (dir / "lib/libmany.so").string(), (dir / "many.c").string()});
  compile(arch, {"-Wl,-rpath,$ORIGIN/lib", "-o", (dir / "prog").string(), (dir / "many_main.c").string(),
                 "-L" + (dir / "lib").string(), "-lmany"});
}

class RenameArch : public ::testing::TestWithParam<FixtureArch> {
 protected:
  void SetUp() override {
    if (!test::can_run(arch())) GTEST_SKIP() << arch().qemu << " is not installed: cannot run " << arch().name;
  }
  const FixtureArch& arch() const { return GetParam(); }

  // A case directory holding a copy of program and lib/libgreet.so (its runpath is $ORIGIN/lib).
  fs::path prepare(const std::string& case_name, const std::string& program) {
    fs::path dir = test::scratch_dir("rename/" + arch().name + "/" + case_name);
    fs::create_directories(dir / "lib");
    fs::copy_file(arch().dir / "lib/libgreet.so", dir / "lib/libgreet.so");
    fs::copy_file(arch().dir / program, dir / "prog");
    return dir;
  }

  void rename_in(const fs::path& file, const EditRequest& request) {
    auto outcome = edit_elf_file(file, request);
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_NE(outcome->strategy, EditStrategy::Unchanged) << file;
    if (auto lint = test::elflint_passes(file)) {
      EXPECT_TRUE(*lint) << file << " (" << outcome->layout_description << ")";
    }
    EXPECT_EQ(test::readelf_warnings(file), "") << file;
    // The old names are gone, so the same edit again finds nothing to do and writes nothing.
    auto bytes = test::read_file(file);
    auto again = edit_elf_file(file, request);
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ(again->strategy, EditStrategy::Unchanged);
    EXPECT_EQ(test::read_file(file), bytes);
  }

  std::string run(const fs::path& program) { return test::run_program(arch(), program).output; }
};

TEST_P(RenameArch, RenamedOnBothSidesRuns) {
  for (const std::string program : {"prog-pie", "prog-nopie", "prog-stripped"}) {
    SCOPED_TRACE(program);
    fs::path dir = prepare("both-" + program, program);
    auto request = renaming({{"greet", "greet_v2"}});
    rename_in(dir / "lib/libgreet.so", request);
    rename_in(dir / "prog", request);
    test::expect_greets(arch(), dir / "prog");
    auto lib_names = readelf_dynamic_symbols(dir / "lib/libgreet.so");
    EXPECT_TRUE(contains(lib_names, "greet_v2")) << fmt::format("{}", fmt::join(lib_names, " "));
    EXPECT_FALSE(contains(lib_names, "greet"));
    if (program != "prog-stripped") {  // readelf lists symbols through section headers only
      EXPECT_TRUE(contains(readelf_dynamic_symbols(dir / "prog"), "greet_v2"));
    }
  }
}

// Proof that the rename is real: the loader no longer matches the two sides.
TEST_P(RenameArch, RenamedOnOneSideFailsToLoad) {
  fs::path lib_only = prepare("lib-only", "prog-pie");
  rename_in(lib_only / "lib/libgreet.so", renaming({{"greet", "greet_v2"}}));
  EXPECT_NE(run(lib_only / "prog").find("undefined symbol: greet"), std::string::npos) << run(lib_only / "prog");

  fs::path prog_only = prepare("prog-only", "prog-pie");
  rename_in(prog_only / "prog", renaming({{"greet", "greet_v2"}}));
  EXPECT_NE(run(prog_only / "prog").find("undefined symbol: greet_v2"), std::string::npos) << run(prog_only / "prog");
}

// 215 exports change bucket: the symbols from .gnu.hash's symoffset on are
// re-sorted, with their versions and the relocations that name them.
TEST_P(RenameArch, ManyRenamedExportsAreResortedAndRun) {
  fs::path dir = prepare("many", "prog-manyexports");
  auto before = readelf_dynamic_symbols(dir / "prog");
  rename_in(dir / "prog", renaming(many_renames()));
  rename_in(dir / "lib/libgreet.so", renaming(many_renames()));
  test::expect_greets(arch(), dir / "prog");
  auto after = readelf_dynamic_symbols(dir / "prog");
  ASSERT_EQ(after.size(), before.size());
  std::map<std::string, std::string> map;
  for (const auto& [from, to] : many_renames()) map[from] = to;
  for (auto& name : before)
    if (map.count(name)) name = map[name];
  EXPECT_NE(after, before) << "nothing moved: the GNU hash re-sort was not exercised";
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(after, before);
}

TEST_P(RenameArch, RelocationsFollowResortedSymbols) {
  fs::path dir = test::scratch_dir("rename/" + arch().name + "/relocations");
  build_many(arch(), dir);
  std::string expected = std::to_string(expected_checksum()) + "\n";
  ASSERT_EQ(run(dir / "prog"), expected);
  auto before = readelf_dynamic_symbols(dir / "lib/libmany.so");
  rename_in(dir / "lib/libmany.so", renaming(every_third_function()));
  EXPECT_NE(readelf_dynamic_symbols(dir / "lib/libmany.so"), before);
  EXPECT_EQ(run(dir / "prog"), expected);
}

// Linked with --hash-style=both (.hash rebuilt too) and sysv (no .gnu.hash: nothing re-sorted).
TEST_P(RenameArch, SysvHashTablesAreRebuilt) {
  for (const std::string style : {"both", "sysv"}) {
    SCOPED_TRACE(style);
    fs::path dir = test::scratch_dir("rename/" + arch().name + "/hash-" + style);
    fs::create_directories(dir / "lib");
    std::ofstream(dir / "greet.c")
        << "const char *greet(void) { return \"lib\"; }\n"
        << "int unused_export_a(void) { return 1; }\nint unused_export_b(void) { return 2; }\n";
    std::ofstream(dir / "main.c") << "#include <stdio.h>\nconst char *greet(void);\n"
                                  << "int main(void) { printf(\"hello from %s\\n\", greet()); return 0; }\n";
    auto cc = [&](std::vector<std::string> args) {
      args.insert(args.begin(), "-Wl,--hash-style=" + style);
      compile(arch(), args);
    };
    cc({"-shared", "-Wl,-soname,libgreet.so", "-o", (dir / "lib/libgreet.so").string(), (dir / "greet.c").string()});
    cc({"-Wl,-rpath,$ORIGIN/lib", "-o", (dir / "prog").string(), (dir / "main.c").string(),
        "-L" + (dir / "lib").string(), "-lgreet"});
    auto order_before = readelf_dynamic_symbols(dir / "lib/libgreet.so");
    auto request = renaming({{"greet", "greet_v2"}, {"unused_export_a", "a_export_renamed"}});
    rename_in(dir / "lib/libgreet.so", request);
    rename_in(dir / "prog", request);
    test::expect_greets(arch(), dir / "prog");
    if (style == "sysv") {
      auto order_after = readelf_dynamic_symbols(dir / "lib/libgreet.so");
      std::replace(order_before.begin(), order_before.end(), std::string("greet"), std::string("greet_v2"));
      std::replace(order_before.begin(), order_before.end(), std::string("unused_export_a"),
                   std::string("a_export_renamed"));
      EXPECT_EQ(order_after, order_before) << "a file without .gnu.hash was re-sorted";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RenameArch, ::testing::ValuesIn(test::fixture_arches()),
                         [](const auto& param_info) { return param_info.param.name; });

// ---- On the host only ----------------------------------------------------------

// The loader's hash functions, against published values (the ELF spec's and glibc's examples for "printf").
TEST(RenameSymbols, HashFunctions) {
  const struct {
    const char* name;
    uint32_t gnu, sysv;
  } cases[] = {{"", 0x1505, 0},
               {"printf", 0x156b2bb8, 0x077905a6},
               {"greet", 0x0f871a5c, 0x006e8bc4},
               {"exported_function_with_a_long_name_1499", 0xbaa2fe35, 0x01eb9549}};
  for (const auto& c : cases) {
    EXPECT_EQ(gnu_symbol_hash(c.name), c.gnu) << c.name;
    EXPECT_EQ(sysv_symbol_hash(c.name), c.sysv) << c.name;
  }
}

// As patchelf: a name the file does not have changes nothing, and the file is not written.
TEST(RenameSymbols, AbsentNameChangesNothing) {
  fs::path dir = test::scratch_dir("rename/absent");
  fs::copy_file(host().dir / "prog-pie", dir / "prog");
  auto bytes = test::read_file(dir / "prog");
  auto outcome = edit_elf_file(dir / "prog", renaming({{"no_such_symbol", "other"}}));
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(outcome->strategy, EditStrategy::Unchanged);
  EXPECT_EQ(test::read_file(dir / "prog"), bytes);
}

// The verifier reads the planned result: a plan missing the re-sorted hash
// table or the remapped relocations is refused, and the file stays as it was.
TEST(RenameSymbols, VerifierRefusesIncompletePlans) {
  fs::path dir = test::scratch_dir("rename/verifier");
  build_many(host(), dir);
  fs::path lib = dir / "lib/libmany.so";
  auto bytes = test::read_file(lib);
  for (WriteKind dropped : {WriteKind::GnuHash, WriteKind::Relocations, WriteKind::DynamicSymbols}) {
    // In place, with the file open elsewhere (as a process that has it mapped):
    // the tables stay where they are (a copy of them would take the writes instead).
    EditOptions options;
    options.in_place = true;
    int mapped = ::open(lib.c_str(), O_RDONLY | O_CLOEXEC);
    EditTestHooks without;
    without.drop_writes = dropped;
    auto outcome = edit_elf_file_for_testing(lib, renaming(every_third_function()), options, without);
    ::close(mapped);
    ASSERT_FALSE(outcome) << write_kind_name(dropped) << " dropped, yet the plan was accepted";
    EXPECT_EQ(outcome.error().code, ErrorCode::VerificationFailed) << outcome.error().message();
    EXPECT_EQ(test::read_file(lib), bytes);
  }
}

TEST(RenameSymbols, StaticFileIsAnError) {
  fs::path dir = test::scratch_dir("rename/static");
  fs::copy_file(host().dir / "prog-static", dir / "prog");
  auto outcome = edit_elf_file(dir / "prog", renaming({{"main", "other"}}));
  ASSERT_FALSE(outcome);
  EXPECT_NE(outcome.error().message().find("statically linked"), std::string::npos) << outcome.error().message();
  EXPECT_EQ(outcome.error().code, ErrorCode::NothingToEdit) << outcome.error().message();
}

// The command lines: runpatch-patchelf as patchelf 0.18+, and runpatch set.
TEST(RenameSymbols, CommandLines) {
  fs::path dir = test::scratch_dir("rename/cli");
  fs::create_directories(dir / "lib");
  fs::copy_file(host().dir / "prog-pie", dir / "prog");
  fs::copy_file(host().dir / "lib/libgreet.so", dir / "lib/libgreet.so");
  std::ofstream(dir / "names.map") << "greet greet_v2\n";
  auto r = test::run_command(
      {kPatchelf, "--rename-dynamic-symbols", (dir / "names.map").string(), (dir / "prog").string()}, true);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command({RUNPATCH_CLI, "set", "--rename-dynamic-symbols", (dir / "names.map").string(),
                         (dir / "lib/libgreet.so").string()},
                        true);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  test::expect_greets(host(), dir / "prog");

  // patchelf's answer for a file without a dynamic section.
  fs::copy_file(host().dir / "prog-static", dir / "static");
  r = test::run_command(
      {kPatchelf, "--rename-dynamic-symbols", (dir / "names.map").string(), (dir / "static").string()}, true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "patchelf: cannot find section '.dynamic'. The input file is most likely statically linked\n");
  // A malformed map is a usage error naming the file and the line.
  std::ofstream(dir / "bad.map") << "greet\n";
  r = test::run_command(
      {RUNPATCH_CLI, "set", "--rename-dynamic-symbols", (dir / "bad.map").string(), (dir / "prog").string()}, true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find((dir / "bad.map").string() + ":1: Map file line is missing the second element"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace runpatch
