// The resolution-cache note (.note.nixos.ldcache) on every fixture arch:
// what readelf decodes equals what the runpath holds, every patched program
// still runs (natively or under qemu-user), later edits never leave it stale.
#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "strict_json.hpp"
#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "synthetic_elf.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/resolving/resolution_cache.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;
using test::FixtureArch;

// The NixOS note as readelf --notes shows it: its descriptor, decoded by us.
std::optional<ResolutionCache> readelf_note(const fs::path& file) {
  auto r = test::run_command({"readelf", "--notes", "--wide", file.string()});
  std::istringstream lines(r.output);
  bool in_note = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("NixOS") != std::string::npos && line.find("0x63a86cb6") != std::string::npos) in_note = true;
    auto data = line.find("description data:");
    if (!in_note || data == std::string::npos) continue;
    std::vector<uint8_t> bytes;
    std::istringstream hex(line.substr(data + 17));
    for (std::string byte; hex >> byte;) bytes.push_back(uint8_t(std::stoul(byte, nullptr, 16)));
    auto decoded = decode_resolution_cache(bytes);
    EXPECT_TRUE(decoded) << decoded.error().what;
    return decoded ? std::optional<ResolutionCache>(*decoded) : std::nullopt;
  }
  return std::nullopt;
}

// readelf -lW: the PT_NOTE at the note's offset lies in a read-only PT_LOAD.
bool note_in_read_only_load(const fs::path& file, uint64_t note_offset) {
  auto r = test::run_command({"readelf", "-lW", file.string()});
  struct Row {
    std::string type;
    uint64_t off, size;
    std::string flags;
  };
  std::vector<Row> rows;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    // TYPE OFFSET VIRTADDR PHYSADDR FILESIZ MEMSIZ FLAGS... ALIGN (flags such as "R E" hold spaces)
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.size() < 8 || (f[0] != "LOAD" && f[0] != "NOTE") || f[1].rfind("0x", 0) != 0) continue;
    std::string flags;
    for (size_t i = 6; i + 1 < f.size(); ++i) flags += f[i];
    rows.push_back({f[0], std::stoull(f[1], nullptr, 16), std::stoull(f[4], nullptr, 16), flags});
  }
  for (const auto& note : rows) {
    if (note.type != "NOTE" || note.off != note_offset) continue;
    for (const auto& load : rows)
      if (load.type == "LOAD" && load.off <= note.off && note.off + note.size <= load.off + load.size)
        return load.flags == "R";
  }
  return false;
}

// eu-elflint's findings except the one any NixOS note draws (elflint knows no such note type).
std::string elflint_complaints(const fs::path& file) {
  if (!test::have_program("eu-elflint")) return "";
  auto r = test::run_command({"eu-elflint", "--gnu-ld", file.string()}, true);
  std::string out;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.find("unknown object file note type") == std::string::npos && line != "No errors") out += line + "\n";
  return out;
}

class Ldcache : public ::testing::TestWithParam<FixtureArch> {
 protected:
  void SetUp() override {
    if (!test::can_run(arch())) GTEST_SKIP() << arch().qemu << " is not installed: cannot run " << arch().name;
  }
  const FixtureArch& arch() const { return GetParam(); }

  // A copy of program, libgreet in moved/, an empty first/ and a hw/ with glibc-hwcaps/.
  fs::path prepare(const std::string& case_name, const std::string& program) {
    dir_ = test::scratch_dir("ldcache/" + arch().name + "/" + case_name);
    fs::create_directories(dir_ / "moved");
    fs::create_directories(dir_ / "first");
    fs::create_directories(dir_ / "hw/glibc-hwcaps");
    fs::copy_file(arch().dir / "lib/libgreet.so", dir_ / "moved/libgreet.so");
    fs::copy_file(arch().dir / program, dir_ / program);
    return dir_ / program;
  }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }

  void expect_runs(const fs::path& program) { test::expect_greets(arch(), program); }

  static EditRequest set(const std::string& runpath, ResolutionCacheMode mode = ResolutionCacheMode::Refresh) {
    EditRequest request;
    request.runpath = set_runpath_update(runpath);
    request.resolution_cache = mode;
    return request;
  }

  fs::path dir_;
};

// patchelf moves a non-PIE's notes into a new first PT_LOAD and sorts the
// program headers by offset, so a PT_NOTE comes before the last PT_LOAD: the
// note's new LOAD still goes after the last one and no PT_LOAD is replaced
// (once the .bss segment was overwritten and the program crashed).
TEST_P(Ldcache, NoteOnANonPieThatPatchelfEditedKeepsEveryLoad) {
  if (!test::have_program("patchelf")) GTEST_SKIP() << "Debian's patchelf is the oracle that makes the layout";
  fs::path file = prepare("patchelf-nopie", "prog-nopie");
  auto patched = test::run_command({"patchelf", "--set-rpath", at("moved"), file.string()}, true);
  ASSERT_EQ(patched.exit_code, 0) << patched.output;
  auto before = read_elf_info(file);
  ASSERT_TRUE(before);
  auto loads = [](const fs::path& f) {
    auto r = test::run_command({"readelf", "-lW", f.string()});
    std::vector<std::string> rows;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);)
      if (line.find("  LOAD ") != std::string::npos) rows.push_back(line);
    return rows;
  };
  auto old_loads = loads(file);
  auto outcome = edit_elf_file(file, set(at("moved"), ResolutionCacheMode::Write));
  ASSERT_TRUE(outcome) << outcome.error().message();
  auto new_loads = loads(file);
  ASSERT_EQ(new_loads.size(), old_loads.size() + 1);
  for (size_t i = 0; i < old_loads.size(); ++i) EXPECT_EQ(new_loads[i], old_loads[i]) << "PT_LOAD " << i;
  EXPECT_TRUE(read_elf_info(file)->resolution_cache.has_value());
  expect_runs(file);
}

// Every kind of entry: missing dir, dir without the library, $ORIGIN, empty
// (the current directory), the library's dir, a dir with glibc-hwcaps/.
TEST_P(Ldcache, NoteSaysWhereEachLibraryIsAndEveryProgramRuns) {
  for (const std::string program : {"prog-pie", "prog-nopie", "prog-stripped", "prog-rpath", "prog-norunpath"}) {
    SCOPED_TRACE(arch().name + " " + program);
    fs::path file = prepare(program, program);
    std::string runpath = at("missing") + ":" + at("first") + ":$ORIGIN/moved::" + at("moved") + ":" + at("hw");
    auto outcome = edit_elf_file(file, set(runpath, ResolutionCacheMode::Write));
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_TRUE(outcome->warnings.empty());

    std::vector<std::string> searched = {"?" + at("missing"), "?$ORIGIN/moved", "?", "?" + at("hw")};
    std::vector<std::string> greet = searched;
    greet.insert(greet.begin() + 3, "=" + at("moved") + "/libgreet.so");
    ResolutionCache expected = {{"libc.so.6", searched}, {"libgreet.so", greet}};
    auto info = read_elf_info(file);
    ASSERT_TRUE(info && info->resolution_cache) << "no note read back";
    EXPECT_EQ(info->resolution_cache->entries, expected);
    EXPECT_EQ(info->resolution_cache->defect, "");
    EXPECT_EQ(readelf_note(file), expected) << "readelf --notes decodes another note";
    EXPECT_TRUE(note_in_read_only_load(file, info->resolution_cache->offset)) << "note not in a read-only PT_LOAD";
    EXPECT_EQ(elflint_complaints(file), "");
    expect_runs(file);

    // The resolver reading the note as the patched loader would finds what it finds without it.
    SearchEnvironment env;
    auto plain = resolve_tree(file, env);
    env.use_resolution_cache = true;
    auto cached = resolve_tree(file, env);
    ASSERT_TRUE(plain && cached);
    for (size_t i = 0; i < plain->edges.size() && i < cached->edges.size(); ++i)
      if (plain->edges[i].from == 0 && !plain->edges[i].dlopen) {
        EXPECT_EQ(plain->edges[i].resolution.path, cached->edges[i].resolution.path) << plain->edges[i].resolution.name;
      }

    auto bytes = test::read_file(file);
    auto again = edit_elf_file(file, set(runpath, ResolutionCacheMode::Write));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->strategy, EditStrategy::Unchanged);
    EXPECT_EQ(test::read_file(file), bytes) << "writing the same note again changed the file";

    if (info->shnum == 0) continue;
    // strip repacks a file whose program headers moved so that the table's
    // offset no longer equals its address; qemu-user derives AT_PHDR from the
    // offset (the kernel uses PT_PHDR), so only native runs prove that case.
    if (arch().qemu != "-" &&
        std::count(outcome->layout.begin(), outcome->layout.end(), LayoutStep::MovedProgramHeaders) > 0)
      continue;
    fs::path stripped = file.string() + ".stripped";
    auto strip = test::run_command({test::strip_tool(arch()), "-o", stripped.string(), file.string()}, true);
    ASSERT_EQ(strip.exit_code, 0) << strip.output;
    expect_runs(stripped);
    EXPECT_TRUE(read_elf_info(stripped)->resolution_cache.has_value()) << "strip dropped the note";
  }
}

// Edits after the note was written refresh it, or remove it when none can be
// written: never a note that disagrees with the runpath.
TEST_P(Ldcache, LaterEditsRefreshOrRemoveTheNote) {
  fs::path file = prepare("later", "prog-pie");
  ASSERT_TRUE(edit_elf_file(file, set(at("first") + ":" + at("moved"), ResolutionCacheMode::Write)));
  ResolutionCache greet_only = {{"libgreet.so", {"=" + at("moved") + "/libgreet.so"}}};
  EXPECT_EQ(read_elf_info(file)->resolution_cache->entries, greet_only);

  // A longer runpath, same library: the note follows.
  std::string longer = at("missing") + ":" + at("moved") + ":" + std::string("/nonexistent/") + std::string(200, 'x');
  ASSERT_TRUE(edit_elf_file(file, set(longer)));
  auto info = read_elf_info(file);
  ASSERT_TRUE(info->resolution_cache);
  EXPECT_EQ(info->resolution_cache->entries,
            (ResolutionCache{{"libc.so.6", {"?" + at("missing"), "?/nonexistent/" + std::string(200, 'x')}},
                             {"libgreet.so",
                              {"?" + at("missing"), "=" + at("moved") + "/libgreet.so",
                               "?/nonexistent/" + std::string(200, 'x')}}}));
  EXPECT_EQ(readelf_note(file), info->resolution_cache->entries);
  expect_runs(file);

  // A new DT_NEEDED found in the runpath gets its entry.
  fs::copy_file(dir_ / "moved/libgreet.so", dir_ / "moved/libextra.so");
  EditRequest add;
  add.add_needed = {"libextra.so"};
  ASSERT_TRUE(edit_elf_file(file, add));
  info = read_elf_info(file);
  ASSERT_TRUE(info->resolution_cache);
  EXPECT_EQ(info->resolution_cache->entries.at(1).needed, "libextra.so");
  expect_runs(file);

  // No runpath left: the note goes, with a warning.
  EditRequest remove;
  remove.runpath = remove_runpath_update();
  auto removed = edit_elf_file(file, remove);
  ASSERT_TRUE(removed);
  ASSERT_EQ(removed->warnings.size(), 1u);
  EXPECT_EQ(removed->warnings[0].kind, EditWarningKind::ResolutionCacheRemoved);
  EXPECT_FALSE(read_elf_info(file)->resolution_cache.has_value());
  EXPECT_EQ(readelf_note(file), std::nullopt);
  EXPECT_EQ(elflint_complaints(file), "");

  // Written again, then removed on request; the program runs throughout.
  ASSERT_TRUE(edit_elf_file(file, set(at("moved"), ResolutionCacheMode::Write)));
  EXPECT_TRUE(read_elf_info(file)->resolution_cache.has_value());
  expect_runs(file);
  EditRequest drop;
  drop.resolution_cache = ResolutionCacheMode::Remove;
  ASSERT_TRUE(edit_elf_file(file, drop));
  EXPECT_FALSE(read_elf_info(file)->resolution_cache.has_value());
  auto sections = test::run_command({"readelf", "-SW", file.string()});
  EXPECT_EQ(sections.output.find(".note.nixos.ldcache"), std::string::npos) << sections.output;
  EXPECT_EQ(elflint_complaints(file), "");
  expect_runs(file);
}

INSTANTIATE_TEST_SUITE_P(Arches, Ldcache, ::testing::ValuesIn(test::fixture_arches()),
                         [](const auto& param) { return param.param.name; });

fs::path host_fixture(const std::string& name) {
  for (const auto& arch : test::fixture_arches())
    if (arch.qemu == "-") return arch.dir / name;
  return {};
}

TEST(LdcacheCli, NoRunpathMeansNoNoteAndAWarning) {
  fs::path dir = test::scratch_dir("ldcache-cli/none");
  fs::copy_file(host_fixture("prog-norunpath"), dir / "prog");
  auto r = test::run_command({RUNPATCH_CLI, "set", "--ldcache", (dir / "prog").string()}, true);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no resolution cache written: no runpath"), std::string::npos) << r.output;
  EXPECT_FALSE(read_elf_info(dir / "prog")->resolution_cache.has_value());
}

TEST(LdcacheCli, PatchelfFrontEndWritesTheSameNote) {
  fs::path dir = test::scratch_dir("ldcache-cli/patchelf");
  fs::create_directories(dir / "lib");
  fs::copy_file(host_fixture("lib/libgreet.so"), dir / "lib/libgreet.so");
  fs::copy_file(host_fixture("prog-pie"), dir / "ours");
  fs::copy_file(host_fixture("prog-pie"), dir / "front");
  std::string runpath = "/nonexistent:" + (dir / "lib").string();
  auto ours =
      test::run_command({RUNPATCH_CLI, "set", "--runpath", runpath, "--ldcache", (dir / "ours").string()}, true);
  ASSERT_EQ(ours.exit_code, 0) << ours.output;
  std::string front_end = test::runpatch_patchelf_path();
  auto front = test::run_command({front_end, "--set-rpath", runpath, (dir / "front").string()}, true);
  ASSERT_EQ(front.exit_code, 0) << front.output;
  front = test::run_command({front_end, "--build-resolution-cache", (dir / "front").string()}, true);
  ASSERT_EQ(front.exit_code, 0) << front.output;
  auto a = readelf_note(dir / "ours"), b = readelf_note(dir / "front");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->at(0).locations, (std::vector<std::string>{"?/nonexistent"}));  // libc.so.6
  EXPECT_EQ(test::run_command({(dir / "front").string()}).output, "hello from lib\n");
  EXPECT_EQ(test::run_command({(dir / "ours").string()}).output, "hello from lib\n");
}

// Nine directories without the library before the one with it: the loader
// opens ten files for it without the note, one with it.
TEST(LdcacheCli, TreeStatsCountsOpenAttempts) {
  fs::path dir = test::scratch_dir("ldcache-cli/stats");
  std::string runpath;
  for (int i = 0; i < 9; ++i) {
    fs::create_directories(dir / ("empty" + std::to_string(i)));
    runpath += (dir / ("empty" + std::to_string(i))).string() + ":";
  }
  fs::create_directories(dir / "lib");
  fs::copy_file(host_fixture("lib/libgreet.so"), dir / "lib/libgreet.so");
  runpath += (dir / "lib").string();
  fs::copy_file(host_fixture("prog-pie"), dir / "prog");
  ASSERT_EQ(test::run_command({RUNPATCH_CLI, "set", "--runpath", runpath, (dir / "prog").string()}).exit_code, 0);
  auto stats_for = [&] {
    auto r =
        test::run_command({RUNPATCH_CLI, "tree", "--stats", "--json", "--ignore-environment", (dir / "prog").string()});
    auto json = test::parse_json(r.output);
    EXPECT_FALSE(json.is_discarded()) << r.output;
    return json.is_discarded() ? nlohmann::json() : json.at(0).at("open_attempts");
  };
  auto before = stats_for();
  EXPECT_EQ(before.at("note_in_file"), false);
  for (const auto& n : before.at("needed"))
    if (n.at("name") == "libgreet.so") {
      EXPECT_EQ(n.at("without_note"), 10);
      EXPECT_EQ(n.at("with_note"), 1);
    }
  ASSERT_EQ(test::run_command({RUNPATCH_CLI, "set", "--ldcache", (dir / "prog").string()}).exit_code, 0);
  auto after = stats_for();
  EXPECT_EQ(after.at("note_in_file"), true);
  EXPECT_EQ(after.at("with_note"), before.at("with_note"));
  EXPECT_LT(after.at("with_note").get<int>(), after.at("without_note").get<int>());
  // tree --use-ldcache resolves as the patched loader: libgreet comes straight from the note.
  auto tree = test::run_command(
      {RUNPATCH_CLI, "tree", "--use-ldcache", "--json", "--ignore-environment", (dir / "prog").string()});
  EXPECT_NE(tree.output.find("resolution cache of"), std::string::npos) << tree.output;
  EXPECT_EQ(tree.output.find((dir / "empty0/libgreet.so").string()), std::string::npos) << "searched past the note";
  EXPECT_EQ(test::run_command({(dir / "prog").string()}).output, "hello from lib\n");
}

// The hooks' commands: driver writes the notes, a later compat (without
// --ldcache) refreshes them, auto-patchelf writes them; none is ever stale.
TEST(LdcacheCli, PolicyCommandsWriteAndLaterOnesRefresh) {
  fs::path pkg = host_fixture("cuda-pkg");
  if (pkg.empty()) GTEST_SKIP() << "no host fixtures";
  fs::path dir = test::scratch_dir("ldcache-cli/policy");
  fs::copy(pkg, dir, fs::copy_options::recursive);
  auto cli = [&](std::vector<std::string> args) {
    auto r = test::cli(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r;
  };
  auto no_stale_note = [&] {
    auto r = test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", "--driver-dir",
                                (dir / "driver").string(), (dir / "bin").string(), (dir / "lib").string()});
    EXPECT_EQ(r.output.find("stale-ldcache"), std::string::npos) << r.output;
  };
  fs::path prog = dir / "bin/cuda-prog";
  cli({"driver", "--ldcache", "--driver-dir", (dir / "driver").string(), (dir / "bin").string(),
       (dir / "lib").string()});
  auto info = read_elf_info(prog);
  ASSERT_TRUE(info && info->resolution_cache);
  EXPECT_EQ(info->resolution_cache->entries,
            (ResolutionCache{{"libc.so.6", {"?$ORIGIN/../lib"}}, {"libcudart.so.13", {"?$ORIGIN/../lib"}}}));
  EXPECT_EQ(test::run_command({prog.string()}).output, "libcuda: driver\n");
  no_stale_note();

  // compat puts its directory first, which holds no DT_NEEDED of the program: same pairs, still true.
  cli({"compat", "--libcuda", (dir / "compat").string(), "--driver-dir", (dir / "driver").string(),
       (dir / "bin").string(), (dir / "lib").string()});
  EXPECT_EQ(read_elf_info(prog)->runpath,
            (dir / "compat").string() + ":" + (dir / "driver").string() + ":$ORIGIN/../lib");
  EXPECT_EQ(read_elf_info(prog)->resolution_cache->entries, info->resolution_cache->entries);
  EXPECT_EQ(test::run_command({prog.string()}).output, "libcuda: compat\n");
  no_stale_note();

  // auto-patchelf resolves libcudart to lib/ by absolute path: the note sends it there directly.
  fs::path fresh = test::scratch_dir("ldcache-cli/policy-auto");
  fs::copy(pkg, fresh, fs::copy_options::recursive);
  cli({"auto-patchelf", "--paths", (fresh / "bin").string(), "--libs", (fresh / "lib").string(), "--ignore-missing",
       "libc.so.6", "--ldcache"});
  auto patched = read_elf_info(fresh / "bin/cuda-prog");
  ASSERT_TRUE(patched && patched->resolution_cache) << "auto-patchelf --ldcache wrote no note";
  bool direct = false;
  for (const auto& e : patched->resolution_cache->entries)
    if (e.needed == "libcudart.so.13")
      direct = std::find(e.locations.begin(), e.locations.end(), "=" + (fresh / "lib/libcudart.so.13").string()) !=
               e.locations.end();
  EXPECT_TRUE(direct) << *patched->runpath;
  // It runs as the unpatched program does (its libcudart still finds only the stub libcuda).
  auto before = test::run_command({(pkg / "bin/cuda-prog").string()}, true);
  auto after = test::run_command({(fresh / "bin/cuda-prog").string()}, true);
  EXPECT_EQ(after.exit_code, before.exit_code);
  EXPECT_EQ(after.output, before.output);
}

// check: a note that no longer says what the runpath resolves is an error.
TEST(LdcacheCli, CheckReportsAStaleNote) {
  fs::path dir = test::scratch_dir("ldcache-cli/stale");
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  fs::copy_file(host_fixture("lib/libgreet.so"), dir / "b/libgreet.so");
  fs::copy_file(host_fixture("prog-pie"), dir / "prog");
  std::string runpath = (dir / "a").string() + ":" + (dir / "b").string();
  ASSERT_EQ(
      test::run_command({RUNPATCH_CLI, "set", "--runpath", runpath, "--ldcache", (dir / "prog").string()}).exit_code,
      0);
  EXPECT_EQ(test::run_command({(dir / "prog").string()}).output, "hello from lib\n");
  auto check = [&] {
    return test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", (dir / "prog").string()});
  };
  auto fresh = check();
  EXPECT_EQ(fresh.output.find("stale-ldcache"), std::string::npos) << fresh.output;
  // A library appears in an earlier directory: the loader without the note would load it.
  fs::copy_file(dir / "b/libgreet.so", dir / "a/libgreet.so");
  auto stale = check();
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_NE(stale.output.find("stale-ldcache"), std::string::npos) << stale.output;
  // Refreshed, it is fine again; a cached file that disappears is stale.
  ASSERT_EQ(test::run_command({RUNPATCH_CLI, "set", "--ldcache", (dir / "prog").string()}).exit_code, 0);
  EXPECT_EQ(check().output.find("stale-ldcache"), std::string::npos);
  fs::remove(dir / "a/libgreet.so");
  auto gone = check();
  EXPECT_NE(gone.output.find("no longer exists"), std::string::npos) << gone.output;
}

}  // namespace
}  // namespace runpatch
