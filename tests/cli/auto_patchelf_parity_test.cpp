// Runs every scenario of tests/auto_patchelf_parity/scenarios.txt through the
// `auto-patchelf` entry point, as the hook does (NIX_BINTOOLS names the
// interpreter and libc), and compares exit status, stdout after the argument
// dump, the end of stderr, runpaths and interpreters with what Nixpkgs'
// auto-patchelf.py does (written out in the data file; see its header).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/editing/header_edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

struct Check {
  std::string what, file, value;  // what: runpath, rpath, interpreter, osabi, execstack, nodeflib
};

struct Scenario {
  std::string name;
  std::vector<std::vector<std::string>> setup;
  std::string args;
  int exit = 0;
  std::vector<Check> checks;
  std::vector<std::string> stdout_lines, stderr_tail;
};

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w == "''" ? "" : w);
  return out;
}

std::vector<Scenario> load_scenarios() {
  std::ifstream in(std::string(RUNPATCH_PARITY_DIR) + "/scenarios.txt");
  std::vector<Scenario> out;
  std::vector<std::string>* block = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#") || line.empty()) continue;
    if (line.starts_with("  ") && block) {
      block->push_back(line.substr(2));
      continue;
    }
    block = nullptr;
    auto w = words(line);
    if (w[0] == "===")
      out.push_back({w.at(1)});
    else if (w[0] == "setup")
      out.back().setup.emplace_back(w.begin() + 1, w.end());
    else if (w[0] == "args")
      out.back().args = line.substr(5);
    else if (w[0] == "exit")
      out.back().exit = std::stoi(w.at(1));
    else if (w[0] == "runpath" || w[0] == "rpath" || w[0] == "interpreter" || w[0] == "osabi" || w[0] == "execstack" ||
             w[0] == "nodeflib")
      out.back().checks.push_back({w[0], w.at(1), line.substr(w[0].size() + w[1].size() + 2)});
    else if (w[0] == "stdout")
      block = &out.back().stdout_lines;
    else if (w[0] == "stderr")
      block = &out.back().stderr_tail;
    else
      ADD_FAILURE() << "scenarios.txt: unknown line: " << line;
  }
  return out;
}

// patchelf's --version line, as each run under --extra-args prints it.
const std::string& patchelf_version() {
  static const std::string line = [] {
    fs::path patchelf = test::runpatch_patchelf_path();
    std::string out = test::run_command({patchelf.string(), "--version"}).output;
    return out.substr(0, out.find('\n'));
  }();
  return line;
}

std::string substitute(std::string text, const fs::path& root) {
  for (size_t at; (at = text.find("{root}")) != std::string::npos;) text.replace(at, 6, root.string());
  const std::string version = "{patchelf-version}";
  for (size_t at; (at = text.find(version)) != std::string::npos;) text.replace(at, version.size(), patchelf_version());
  return text;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

fs::path fixture(const std::string& spec) {
  // "aarch64:prog-pie" names another arch's fixture; plain names are the host's.
  auto colon = spec.find(':');
  std::string arch = colon == std::string::npos ? test::fixture_arches().at(0).name : spec.substr(0, colon);
  return test::fixtures_dir() / arch / spec.substr(colon == std::string::npos ? 0 : colon + 1);
}

// Returns false (with a message) when the scenario cannot run here.
bool apply_setup(const std::vector<std::string>& s, const fs::path& root, std::string& skip) {
  auto place = [&](const fs::path& rel) {
    fs::create_directories((root / rel).parent_path());
    return root / rel;
  };
  const std::string& verb = s.at(0);
  if (verb == "copy") {
    fs::path from = s.at(1).starts_with("/") ? fs::path(s[1]) : fixture(s[1]);
    if (!fs::exists(from)) {
      skip = from.string() + " is absent";
      return false;
    }
    fs::copy_file(fs::canonical(from), place(s.at(2)), fs::copy_options::overwrite_existing);
  } else if (verb == "symlink") {
    fs::create_symlink(s.at(1), place(s.at(2)));
  } else if (verb == "text") {
    std::ofstream(place(s.at(1))) << "not an ELF file\n";
  } else if (verb == "corrupt") {  // ELF magic, then nothing a reader can use
    test::write_file(place(s.at(1)), {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0xff, 0xff, 0xff});
  } else if (verb == "truncate") {  // the first N bytes of a fixture
    auto bytes = test::read_file(fixture(s.at(1)));
    bytes.resize(std::stoul(s.at(3)));
    test::write_file(place(s.at(2)), bytes);
  } else if (verb == "osabi") {
    auto bytes = test::read_file(root / s.at(1));
    bytes.at(7) = static_cast<uint8_t>(std::stoi(s.at(2)));
    test::write_file(root / s.at(1), bytes);
  } else if (verb == "debug-only") {  // a separate debug object: objcopy --only-keep-debug FIXTURE DEST
    auto split =
        test::run_command({"objcopy", "--only-keep-debug", fixture(s.at(1)).string(), place(s.at(2)).string()}, true);
    EXPECT_EQ(split.exit_code, 0) << split.output;
  } else if (verb == "set-runpath") {
    EditRequest request;
    request.runpath = set_runpath_update(substitute(s.at(2), root));
    EXPECT_TRUE(edit_elf_file(root / s.at(1), request)) << s.at(1);
  } else {
    ADD_FAILURE() << "unknown setup verb " << verb;
  }
  return true;
}

// What patchelf --print-os-abi / --print-execstack would print.
std::string header_value(const Check& c, const fs::path& root) {
  auto facts = read_header_facts(root / c.file);
  if (!facts) return "unreadable: " + facts.error().message();
  if (c.what == "osabi") return patchelf_osabi_name(facts->osabi);
  switch (facts->exec_stack) {
    case ExecStack::Executable: return "X";
    case ExecStack::NotExecutable: return "-";
    case ExecStack::Unknown: break;
  }
  return "?";
}

std::string check_value(const Check& c, const fs::path& root) {
  if (c.what == "osabi" || c.what == "execstack") return header_value(c, root);
  auto info = read_elf_info(root / c.file);
  if (c.what == "nodeflib") return info ? (info->nodeflib() ? "yes" : "no") : "unreadable: " + info.error().message();
  if (!info) return "unreadable: " + info.error().message();
  std::optional<std::string> v = c.what == "runpath" ? info->runpath
                                 : c.what == "rpath" ? info->rpath
                                                     : info->interpreter;
  return v ? *v : "<none>";
}

void PrintTo(const Scenario& s, std::ostream* os) { *os << s.name; }

class AutoPatchelfParity : public ::testing::TestWithParam<Scenario> {};

TEST_P(AutoPatchelfParity, SameAsTheScript) {
  const Scenario& sc = GetParam();
  fs::path root = fs::canonical(test::scratch_dir("auto_patchelf_parity/" + sc.name));
  // A bintools package as in a Nix build: the host's loader, a libc directory holding libc.so.6.
  fs::create_directories(root / "bintools/nix-support");
  std::ofstream(root / "bintools/nix-support/dynamic-linker") << "/lib64/ld-linux-x86-64.so.2\n";
  std::ofstream(root / "bintools/nix-support/orig-libc") << (root / "libc").string() << "\n";
  fs::create_directories(root / "libc/lib");
  fs::copy_file(fs::canonical("/lib/x86_64-linux-gnu/libc.so.6"), root / "libc/lib/libc.so.6");
  for (const auto& step : sc.setup) {
    std::string skip;
    if (!apply_setup(step, root, skip)) GTEST_SKIP() << skip;
  }
  fs::path cli = fs::path(RUNPATCH_CLI).parent_path() / "auto-patchelf";
  std::string command = "cd " + test::shell_quote(root.string()) +
                        " && NIX_BINTOOLS=" + test::shell_quote((root / "bintools").string()) + " " +
                        test::shell_quote(cli.string()) + " " + substitute(sc.args, root) + " 2>" +
                        test::shell_quote((root / "stderr").string());
  auto run = test::run_command({"/bin/sh", "-c", command});
  std::ifstream err_in(root / "stderr");
  std::string err((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(run.exit_code, sc.exit) << run.output << err;

  auto out = lines(run.output);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[0], "automatically fixing dependencies for ELF files");
  size_t body = 1;
  if (out.size() > 1 && out[1].starts_with("{"))  // the pprint dump: checked in unit tests
    while (body < out.size() && !out[body - 1].ends_with("}")) ++body;
  std::vector<std::string> expected_out;
  for (const auto& l : sc.stdout_lines) expected_out.push_back(substitute(l, root));
  EXPECT_EQ(std::vector<std::string>(out.begin() + static_cast<long>(std::min(body, out.size())), out.end()),
            expected_out)
      << run.output;
  auto err_lines = lines(err);
  std::vector<std::string> expected_err;
  for (const auto& l : sc.stderr_tail) expected_err.push_back(substitute(l, root));
  if (expected_err.empty())
    EXPECT_EQ(err, "");
  else if (err_lines.size() < expected_err.size())
    ADD_FAILURE() << "stderr: " << err;
  else
    EXPECT_EQ(std::vector<std::string>(err_lines.end() - static_cast<long>(expected_err.size()), err_lines.end()),
              expected_err);
  for (const auto& c : sc.checks)
    EXPECT_EQ(check_value(c, root), substitute(c.value, root)) << c.what << " of " << c.file;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, AutoPatchelfParity, ::testing::ValuesIn(load_scenarios()),
                         [](const auto& param_info) {
                           std::string n = param_info.param.name;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(AutoPatchelfParityData, HasEnoughScenarios) { EXPECT_GE(load_scenarios().size(), 25u); }

}  // namespace
}  // namespace runpatch
