// `runpatch print` and `runpatch scan` as users run them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "strict_json.hpp"
#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::host;

namespace fs = std::filesystem;
using test::run_command;

TEST(CliPrint, TextShowsRunpathNeededAndInterpreter) {
  auto r = test::cli({"print", (host().dir / "prog-pie").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("runpath:     $ORIGIN/lib"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("needed:      libgreet.so libc.so.6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("type:        pie (ET_DYN)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("interpreter: /lib64/ld-linux-x86-64.so.2"), std::string::npos) << r.output;
}

TEST(CliPrint, JsonForEveryArch) {
  for (const auto& arch : test::fixture_arches()) {
    auto r =
        test::cli({"print", "--json", (arch.dir / "prog-rpath").string(), (arch.dir / "prog-static").string()}, false);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto doc = test::parse_json(r.output);
    ASSERT_EQ(doc.size(), 2u);
    EXPECT_EQ(doc[0]["rpath"], "$ORIGIN/lib") << arch.name;
    EXPECT_TRUE(doc[0]["runpath"].is_null());
    EXPECT_EQ(doc[0]["needed"][0], "libgreet.so");
    EXPECT_EQ(doc[1]["kind"], "static");
    EXPECT_EQ(doc[1]["static"], true);
  }
}

// ELF strings are bytes: a runpath and a DT_NEEDED that are not UTF-8 are
// printed as JSON losslessly (a bad byte as \xHH, a backslash as \\), never
// an abort, and names differing in such a byte stay two names and two keys.
TEST(CliPrint, JsonOfStringsThatAreNotUtf8) {
  fs::path dir = test::scratch_dir("cli/not-utf8");
  fs::path file = dir / "prog";
  fs::copy_file(host().dir / "prog-norunpath", file, fs::copy_options::overwrite_existing);
  const std::string bad = "/opt/\xad\xfe";
  const std::string runpath = (host().dir / "lib").string() + ":" + bad;
  ASSERT_EQ(test::cli({"set", "--runpath", runpath, "--add-needed", "lib\xff.so", file.string()}).exit_code, 0);
  // The loader takes the edit as written: it finds libgreet through the
  // runpath and then stops at the new DT_NEEDED, which exists nowhere.
  auto ran = test::run_program(host(), file);
  EXPECT_NE(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("lib\xff.so: cannot open shared object file"), std::string::npos) << ran.output;
  for (const std::vector<std::string>& command : {std::vector<std::string>{"print", "--json"},
                                                  {"scan", "--json"},
                                                  {"tree", "--json"},
                                                  {"why", "--json", "lib\xff.so"},
                                                  {"check", "--json"}}) {
    auto args = command;
    args.push_back(command[0] == "scan" ? dir.string() : file.string());
    auto r = test::cli(args, false);
    SCOPED_TRACE(command[0]);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << r.output;
    nlohmann::json doc;
    doc = test::parse_json(r.output);
    ASSERT_FALSE(doc.is_discarded()) << r.output;
    EXPECT_NE(r.output.find("/opt/\\\\xad\\\\xfe"), std::string::npos) << r.output;
  }
  // Two files whose names differ in one byte that is not text: two entries,
  // two keys of check's "loaders", no duplicate key (Python's parser as the judge).
  fs::path twins = test::scratch_dir("cli/not-utf8-twins");
  for (const char* name : {"x\xff", "x\xfe"})
    fs::copy_file(host().dir / "prog-pie", twins / name, fs::copy_options::overwrite_existing);
  for (const std::vector<std::string>& command : {std::vector<std::string>{"scan", "--json"}, {"check", "--json"}}) {
    auto args = command;
    args.push_back(twins.string());
    auto r = test::cli(args, false);
    SCOPED_TRACE(command[0]);
    EXPECT_NE(r.output.find("x\\\\xff"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("x\\\\xfe"), std::string::npos) << r.output;
    fs::path saved = twins.parent_path() / (command[0] + "-twins.json");
    test::write_file(saved, std::vector<uint8_t>(r.output.begin(), r.output.end()));
    auto strict = test::run_command({"python3", "-c",
                                     "import json,sys\n"
                                     "def pairs(p):\n"
                                     "  keys=[k for k,_ in p]\n"
                                     "  assert len(keys)==len(set(keys)), keys\n"
                                     "  return dict(p)\n"
                                     "json.load(open(sys.argv[1]), object_pairs_hook=pairs)",
                                     saved.string()},
                                    true);
    EXPECT_EQ(strict.exit_code, 0) << strict.output;
  }
}

TEST(CliPrint, BadFileIsOneLineErrorAndExitOne) {
  fs::path dir = test::scratch_dir("cli_bad");
  test::write_file(dir / "script.sh", {'#', '!', '/', 'b', 'i', 'n', '/', 's', 'h', '\n'});
  auto r = test::cli({"print", (dir / "script.sh").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "runpatch: " + (dir / "script.sh").string() + ": not an ELF file (bad magic) (at offset 0x0)\n");
  r = test::cli({"print", (dir / "missing").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("cannot open"), std::string::npos);
}

TEST(CliUsage, UsageErrorsExitTwo) {
  EXPECT_EQ(test::cli({}).exit_code, 2);
  EXPECT_EQ(test::cli({"print"}).exit_code, 2);
  EXPECT_EQ(test::cli({"print", "--no-such-flag", "x"}).exit_code, 2);
  EXPECT_EQ(test::cli({"frobnicate"}).exit_code, 2);
  auto v = test::cli({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.output.find('.'), std::string::npos);
}

TEST(CliScan, OneRecordPerElfFileAcrossArches) {
  auto r = test::cli({"scan", test::fixtures_dir().string()}, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t lines = std::count(r.output.begin(), r.output.end(), '\n');
  // Every fixture of every arch (plus the 5 files of its CUDA-like package, the 3 of its L4T parts,
  // auto-patchelf's libdlopen-any.so and libdlopen-bad.so, and the editor's versioned, big-.bss,
  // separate-code non-PIE, many-exports and two dynamic-section-less programs), the two host helper tools, and the
  // host's trace fixtures (2 programs, 7 libraries: fixtures/build-fixtures.sh, build_trace_fixtures).
  EXPECT_EQ(lines, test::fixture_arches().size() * (test::fixture_names().size() + 14 + 3) + 2 + 9) << r.output;
  EXPECT_EQ(r.output.find("arches.tsv"), std::string::npos);
  auto pie = (host().dir / "prog-pie").string() + ": pie x86-64 runpath=$ORIGIN/lib needed=libgreet.so,libc.so.6\n";
  EXPECT_NE(r.output.find(pie), std::string::npos) << r.output;
  auto stat = (host().dir / "prog-static").string() + ": static x86-64\n";
  EXPECT_NE(r.output.find(stat), std::string::npos);
}

TEST(CliScan, JsonAndBadFilesInTree) {
  fs::path dir = test::scratch_dir("cli_scan_bad");
  fs::copy_file(host().dir / "prog-pie", dir / "good");
  auto truncated = test::read_file(host().dir / "prog-pie");
  truncated.resize(100);
  test::write_file(dir / "truncated", truncated);
  auto r = test::cli({"scan", "--json", dir.string()}, false);
  EXPECT_EQ(r.exit_code, 1);
  auto doc = test::parse_json(r.output);
  ASSERT_EQ(doc.size(), 1u);
  EXPECT_EQ(doc[0]["path"], (dir / "good").string());
}

TEST(CliScan, NullSeparatedDynamicPathsKeepNamesWithNewlines) {
  fs::path dir = test::scratch_dir("cli_scan_null");
  fs::copy_file(host().dir / "prog-pie", dir / "two\nlines and space");
  fs::copy_file(host().dir / "prog-pie", dir / "plain");
  fs::copy_file(host().dir / "prog-static", dir / "static");
  auto r = test::cli({"scan", "--dynamic-paths", "-0", dir.string()}, false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, (dir / "plain").string() + '\0' + (dir / "two\nlines and space").string() + '\0');
  EXPECT_EQ(test::cli({"scan", "--null", dir.string()}).exit_code, 2) << "-0 needs --dynamic-paths";
}

}  // namespace
}  // namespace runpatch

namespace runpatch {
namespace {

TEST(CliSet, EditsDryRunsAndRefusesConflicts) {
  fs::path dir = test::scratch_dir("cli_set");
  fs::path file = dir / "prog";
  fs::copy_file(host().dir / "prog-pie", file);
  auto before = test::read_file(file);
  auto dry = test::cli({"set", "--dry-run", "--runpath", "/opt/x", file.string()}, false);
  EXPECT_EQ(dry.exit_code, 0);
  EXPECT_NE(dry.output.find("would edit"), std::string::npos) << dry.output;
  EXPECT_EQ(test::read_file(file), before);
  auto set = test::cli({"set", "--prepend-runpath", "/run/opengl-driver/lib", file.string()}, false);
  EXPECT_EQ(set.exit_code, 0) << set.output;
  auto print = test::cli({"print", "--json", file.string()}, false);
  EXPECT_EQ(test::parse_json(print.output)[0]["runpath"], "/run/opengl-driver/lib:$ORIGIN/lib");
  EXPECT_EQ(test::cli({"set", "--runpath", "a", "--remove-runpath", file.string()}).exit_code, 2);
  auto again = test::cli({"set", "--runpath", "/run/opengl-driver/lib:$ORIGIN/lib", file.string()}, false);
  EXPECT_EQ(again.output, file.string() + ": unchanged\n");
  auto bad = test::cli({"set", "--runpath", "/x", (host().dir / "prog-static").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("statically linked"), std::string::npos);
}

// A static program has no loader, and an object file is not linked yet: neither is "statically linked by glibc".
TEST(CliPrint, StaticProgramsAndObjectFilesAreSaidForWhatTheyAre) {
  auto tree = test::cli({"tree", (host().dir / "prog-static").string()}, false);
  EXPECT_EQ(tree.exit_code, 0) << tree.output;
  EXPECT_NE(tree.output.find("(statically linked: no loader, nothing is resolved)"), std::string::npos) << tree.output;
  EXPECT_EQ(tree.output.find("ld-linux"), std::string::npos) << tree.output;
  if (!test::have_program("cc")) GTEST_SKIP() << "needs cc for an object file";
  fs::path dir = test::scratch_dir("cli_print/object");
  test::write_file(dir / "o.c", {'i', 'n', 't', ' ', 'f', ';', '\n'});
  ASSERT_EQ(test::run_command({"cc", "-c", "-o", (dir / "o.o").string(), (dir / "o.c").string()}, true).exit_code, 0);
  auto print = test::cli({"print", (dir / "o.o").string()}, false);
  EXPECT_NE(print.output.find("none (a relocatable object: not linked yet)"), std::string::npos) << print.output;
}

}  // namespace
}  // namespace runpatch

namespace runpatch {
namespace {

TEST(CliTreeWhy, TreeMarksMissingAndWhySuggestsFixes) {
  auto arches = test::fixture_arches();
  fs::path dir = test::scratch_dir("cli_why");
  fs::copy_file(host().dir / "prog-norunpath", dir / "prog");
  fs::create_directories(dir / "out/lib");
  fs::create_directories(dir / "dev/lib/stubs");
  fs::create_directories(dir / "cross");
  fs::copy_file(host().dir / "lib/libgreet.so", dir / "out/lib/libgreet.so");
  fs::copy_file(host().dir / "lib/libgreet.so", dir / "dev/lib/stubs/libgreet.so");
  for (const auto& a : arches)
    if (a.name == "aarch64") fs::copy_file(a.dir / "lib/libgreet.so", dir / "cross/libgreet.so");

  auto tree = test::cli({"tree", "--ignore-environment", (dir / "prog").string()}, false);
  EXPECT_EQ(tree.exit_code, 1);
  EXPECT_NE(tree.output.find("└── libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 [ld.so.cache]"), std::string::npos)
      << tree.output;
  EXPECT_NE(tree.output.find("libgreet.so not found"), std::string::npos) << tree.output;

  auto why =
      test::cli({"why", "--ignore-environment", "libgreet.so", (dir / "prog").string(), "--search",
                 (dir / "out").string(), "--search", (dir / "dev").string(), "--search", (dir / "cross").string()},
                false);
  EXPECT_EQ(why.exit_code, 1);
  EXPECT_NE(why.output.find("libgreet.so needed by " + (dir / "prog").string()), std::string::npos) << why.output;
  EXPECT_NE(why.output.find("/lib/x86_64-linux-gnu/libgreet.so"), std::string::npos) << "default path attempt shown";
  // The ld.so.cache lookup is a step too, before the default directories.
  size_t cache_step = why.output.find("/etc/ld.so.cache");
  EXPECT_NE(cache_step, std::string::npos) << why.output;
  EXPECT_NE(why.output.find("not listed (ld.so.cache)", cache_step), std::string::npos) << why.output;
  EXPECT_LT(cache_step, why.output.find("/lib/x86_64-linux-gnu/libgreet.so")) << why.output;
  EXPECT_NE(why.output.find("fix: add " + (dir / "out/lib").string() + " to the runpath of"), std::string::npos)
      << why.output;
  EXPECT_NE(why.output.find("is a link-time stub"), std::string::npos) << why.output;
  if (fs::exists(dir / "cross/libgreet.so")) {
    EXPECT_NE(why.output.find("is built for another machine"), std::string::npos) << why.output;
  }

  auto ok = test::cli({"why", "--ignore-environment", "libc.so.6", (dir / "prog").string()}, false);
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_NE(ok.output.find("=> /lib/x86_64-linux-gnu/libc.so.6 via ld.so.cache"), std::string::npos) << ok.output;
  auto json = test::cli({"tree", "--json", "--ignore-environment", (dir / "prog").string()}, false);
  auto doc = test::parse_json(json.output);
  EXPECT_EQ(doc[0]["all_found"], false);
}

}  // namespace
}  // namespace runpatch
