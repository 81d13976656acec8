// The editor on every fixture of every arch: each edited program still runs
// (natively or under qemu-user) and loads libgreet from the new runpath only.
#include <gtest/gtest.h>

#include <algorithm>

#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "readelf_oracle.hpp"
#include "regions.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;
using test::FixtureArch;

const std::vector<std::string> kPrograms = {"prog-pie",       "prog-nopie",       "prog-nopie-sepcode", "prog-rpath",
                                            "prog-norunpath", "prog-longrunpath", "prog-stripped"};

std::string long_entry() { return "/nonexistent/" + std::string(300, 'x'); }

class EditArch : public ::testing::TestWithParam<FixtureArch> {
 protected:
  void SetUp() override {
    if (!test::can_run(arch())) GTEST_SKIP() << arch().qemu << " is not installed: cannot run " << arch().name;
  }
  const FixtureArch& arch() const { return GetParam(); }

  // A case directory holding a copy of program and, in moved/, the library it needs.
  fs::path prepare(const std::string& case_name, const std::string& program) {
    fs::path dir = test::scratch_dir("edit/" + arch().name + "/" + case_name);
    fs::create_directories(dir / "moved");
    fs::copy_file(arch().dir / "lib/libgreet.so", dir / "moved/libgreet.so");
    fs::copy_file(arch().dir / program, dir / program);
    return dir;
  }

  void expect_runs(const fs::path& program) { test::expect_greets(arch(), program); }

  // Edits, then checks readelf, eu-elflint, running, idempotence, strip and untouched bytes.
  void edit_and_verify(const fs::path& file, const EditRequest& request, const std::function<void()>& check_result) {
    fs::path original = file.string() + ".orig";
    fs::copy_file(file, original, fs::copy_options::overwrite_existing);
    bool lint_before = test::elflint_passes(original).value_or(false);
    std::string warnings_before = test::readelf_warnings(original);

    auto outcome = edit_elf_file(file, request);
    ASSERT_TRUE(outcome) << outcome.error().message();
    ASSERT_NE(outcome->strategy, EditStrategy::Unchanged);
    check_result();
    EXPECT_EQ(test::readelf_warnings(file), warnings_before) << file;
    if (lint_before) {
      EXPECT_EQ(test::elflint_passes(file), true) << file << " (" << outcome->layout_description << ")";
    }
    bool grown = std::find(outcome->layout.begin(), outcome->layout.end(), LayoutStep::StringTableGrown) !=
                 outcome->layout.end();
    EXPECT_EQ(test::differences_outside(original, file, test::editable_regions(original, grown)), "");
    expect_runs(file);

    auto bytes = test::read_file(file);
    auto again = edit_elf_file(file, request);
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ(again->strategy, EditStrategy::Unchanged);
    EXPECT_EQ(test::read_file(file), bytes) << "a second identical edit changed the file";

    if (read_elf_info(original)->shnum == 0) return;  // strip needs section headers
    fs::path stripped = file.string() + ".stripped";
    auto strip = test::run_command({test::strip_tool(arch()), "-o", stripped.string(), file.string()}, true);
    if (strip.exit_code == 0) {
      expect_runs(stripped);
    } else {
      ADD_FAILURE() << "strip failed on the edited file: " << strip.output;
    }
  }
};

TEST_P(EditArch, SetRunpathOnEveryProgram) {
  for (const auto& program : kPrograms) {
    for (bool grow : {false, true}) {
      for (bool force_rpath : {false, true}) {
        std::string case_name = program + (grow ? "-long" : "-short") + (force_rpath ? "-rpath" : "");
        SCOPED_TRACE(arch().name + " " + case_name);
        fs::path dir = prepare(case_name, program);
        fs::path file = dir / program;
        std::string runpath = (dir / "moved").string() + (grow ? ":" + long_entry() : "");
        EditRequest request;
        request.runpath = set_runpath_update(runpath);
        request.force_rpath = force_rpath;
        edit_and_verify(file, request, [&] {
          auto info = read_elf_info(file);
          ASSERT_TRUE(info) << info.error().message();
          auto oracle = test::readelf_facts(file);
          ASSERT_TRUE(oracle);
          if (force_rpath) {
            EXPECT_EQ(info->rpath, runpath);
            EXPECT_EQ(oracle->rpath, runpath);
            EXPECT_FALSE(oracle->runpath.has_value());
          } else {
            EXPECT_EQ(info->runpath, runpath);
            EXPECT_EQ(oracle->runpath, runpath);
            EXPECT_FALSE(oracle->rpath.has_value());
          }
          EXPECT_EQ(oracle->needed, info->needed);
        });
      }
    }
  }
}

// A program whose tables are alone in its first segment (-z separate-code):
// a runpath longer than its .dynstr's free bytes grows that table where it
// lies on every arch (docs/editing.md §2), the file no larger; the edits
// after it (the driver hook's prepend, a shorter runpath) fit the table, and
// the program runs after each (natively or under qemu-user).
TEST_P(EditArch, AFullStringTableGrowsWhereItLies) {
  fs::path dir = prepare("grown-table", "prog-nopie-sepcode");
  fs::path file = dir / "prog-nopie-sepcode";
  const uint64_t original = fs::file_size(file);
  const std::string moved = (dir / "moved").string();
  const std::vector<std::string> sequence = {moved + ":" + long_entry(),
                                             "/run/opengl-driver/lib:" + moved + ":" + long_entry(), moved};
  for (size_t i = 0; i < sequence.size(); ++i) {
    SCOPED_TRACE(sequence[i].substr(0, 40));
    EditRequest request;
    request.runpath = set_runpath_update(sequence[i]);
    auto outcome = edit_elf_file(file, request);
    ASSERT_TRUE(outcome) << outcome.error().message();
    bool grown = std::find(outcome->layout.begin(), outcome->layout.end(), LayoutStep::StringTableGrown) !=
                 outcome->layout.end();
    EXPECT_EQ(grown, i == 0) << outcome->layout_description;
    EXPECT_EQ(fs::file_size(file), original);
    EXPECT_EQ(read_elf_info(file)->runpath, sequence[i]);
    expect_runs(file);
  }
}

// After a grown table's first edit (autoPatchelf's runpath), the driver and a
// cuda_compat directory prepended in either order, or at once, each go in
// place, and the three files are the same bytes (the hooks' order leaves no trace).
TEST_P(EditArch, HookOrdersGiveOneFileAfterAGrownTable) {
  const std::string compat = "/nix/store/" + std::string(32, 'c') + "-cuda_compat-12.2.140/compat";
  const std::string driver = "/run/opengl-driver/lib";
  std::vector<std::vector<std::string>> orders = {
      {driver, compat + ":" + driver}, {compat, compat + ":" + driver}, {compat + ":" + driver}};
  std::vector<std::string> results;
  for (size_t n = 0; n < orders.size(); ++n) {
    fs::path dir = prepare("hook-order-" + std::to_string(n), "prog-nopie-sepcode");
    fs::path file = dir / "prog-nopie-sepcode";
    const std::string deps = "$ORIGIN/moved:/nix/store/" + std::string(32, 'd') + "-deps/lib";
    EditRequest first;
    first.runpath = set_runpath_update(deps);
    auto grown = edit_elf_file(file, first);
    ASSERT_TRUE(grown) << grown.error().message();
    for (const auto& prefix : orders[n]) {
      EditRequest hook;
      hook.runpath = set_runpath_update(prefix + ":" + deps);
      auto outcome = edit_elf_file(file, hook);
      ASSERT_TRUE(outcome) << outcome.error().message();
      bool regrown = std::find(outcome->layout.begin(), outcome->layout.end(), LayoutStep::StringTableGrown) !=
                     outcome->layout.end();
      EXPECT_TRUE(outcome->strategy == EditStrategy::InPlace && !regrown)
          << prefix << ": " << outcome->layout_description;
    }
    EXPECT_EQ(read_elf_info(file)->runpath, compat + ":" + driver + ":" + deps);
    expect_runs(file);
    auto bytes = test::read_file(file);
    results.emplace_back(bytes.begin(), bytes.end());
  }
  EXPECT_TRUE(results[0] == results[1]) << "driver then compat differs from compat then driver";
  EXPECT_TRUE(results[0] == results[2]) << "the hooks one after the other differ from both at once";
}

TEST_P(EditArch, RepeatedEditsDoNotGrowWithoutBound) {
  fs::path dir = prepare("repeat", "prog-pie");
  fs::path file = dir / "prog-pie";
  std::string moved = (dir / "moved").string();
  auto size_of = [&] { return fs::file_size(file); };
  uint64_t original = size_of();
  std::vector<std::string> sequence = {moved + ":" + long_entry(), moved + ":" + long_entry() + "/longer/still", moved,
                                       "", moved + ":/short"};
  for (const auto& value : sequence) {
    EditRequest request;
    request.runpath = value.empty() ? remove_runpath_update() : set_runpath_update(value);
    auto outcome = edit_elf_file(file, request);
    ASSERT_TRUE(outcome) << outcome.error().message();
    auto info = read_elf_info(file);
    ASSERT_TRUE(info);
    if (value.empty()) {
      EXPECT_FALSE(info->runpath.has_value());
    } else {
      EXPECT_EQ(info->runpath, value);
      expect_runs(file);
    }
  }
  uint64_t after_sequence = size_of();
  for (int i = 0; i < 10; ++i) {
    EditRequest request;
    request.runpath = set_runpath_update(i % 2 ? moved + ":" + long_entry() : moved + ":/other" + long_entry());
    ASSERT_TRUE(edit_elf_file(file, request));
  }
  expect_runs(file);
  EXPECT_LE(after_sequence - original, 16u * 1024) << "growth after five edits";
  EXPECT_LE(size_of() - after_sequence, 4u * 1024) << "ten alternating edits kept growing the file";
}

TEST_P(EditArch, EditedLibraryStillLoads) {
  fs::path dir = prepare("library", "prog-pie");
  fs::path lib = dir / "moved/libgreet.so";
  EditRequest lib_edit;
  lib_edit.runpath = set_runpath_update("/opt/some/where:" + long_entry());
  lib_edit.soname = "libgreet.so";  // unchanged value: no-op for this part
  auto outcome = edit_elf_file(lib, lib_edit);
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(test::readelf_facts(lib)->runpath, "/opt/some/where:" + long_entry());
  EXPECT_EQ(test::readelf_warnings(lib), "");
  EditRequest prog_edit;
  prog_edit.runpath = set_runpath_update((dir / "moved").string());
  ASSERT_TRUE(edit_elf_file(dir / "prog-pie", prog_edit));
  expect_runs(dir / "prog-pie");
  // A new SONAME too: the library and the program still agree on the file name.
  EditRequest rename;
  rename.soname = "libgreet-renamed-with-a-much-longer-soname.so.1";
  ASSERT_TRUE(edit_elf_file(lib, rename));
  EXPECT_EQ(read_elf_info(lib)->soname, "libgreet-renamed-with-a-much-longer-soname.so.1");
  expect_runs(dir / "prog-pie");
}

TEST_P(EditArch, NeededEdits) {
  fs::path dir = prepare("needed", "prog-pie");
  fs::path file = dir / "prog-pie";
  fs::copy_file(dir / "moved/libgreet.so", dir / "moved/libgreet-replacement-name.so");
  fs::remove(dir / "moved/libgreet.so");
  EditRequest request;
  request.replace_needed = {{"libgreet.so", "libgreet-replacement-name.so"}};
  request.runpath = set_runpath_update((dir / "moved").string());
  edit_and_verify(file, request, [&] {
    auto oracle = test::readelf_facts(file);
    ASSERT_TRUE(oracle);
    EXPECT_EQ(oracle->needed.at(0), "libgreet-replacement-name.so");
  });
  EditRequest add;
  add.add_needed = {"libgreet-replacement-name.so"};  // already there: nothing to do
  EXPECT_EQ(edit_elf_file(file, add)->strategy, EditStrategy::Unchanged);
  EditRequest remove;
  remove.remove_needed = {"libgreet-replacement-name.so"};
  ASSERT_TRUE(edit_elf_file(file, remove));
  auto oracle = test::readelf_facts(file);
  ASSERT_TRUE(oracle);
  EXPECT_EQ(oracle->needed, (std::vector<std::string>{"libc.so.6"}));
}

TEST_P(EditArch, LongerInterpreter) {
  auto original = read_elf_info(arch().dir / "prog-pie");
  ASSERT_TRUE(original && original->interpreter);
  fs::path dir = prepare("interp", "prog-pie");
  fs::path host_interp = arch().sysroot == "-"
                             ? fs::path(*original->interpreter)
                             : fs::path(arch().sysroot) / fs::path(*original->interpreter).relative_path();
  fs::path new_interp = dir / ("interpreter-in-a-directory-with-a-long-name-" + std::string(60, 'i')) / "ld.so";
  fs::create_directories(new_interp.parent_path());
  fs::copy_file(fs::canonical(host_interp), new_interp);
  EditRequest request;
  request.interpreter = new_interp.string();
  request.runpath = set_runpath_update((dir / "moved").string());
  edit_and_verify(dir / "prog-pie", request,
                  [&] { EXPECT_EQ(test::readelf_facts(dir / "prog-pie")->interpreter, new_interp.string()); });
}

INSTANTIATE_TEST_SUITE_P(Arches, EditArch, ::testing::ValuesIn(test::fixture_arches()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace runpatch
