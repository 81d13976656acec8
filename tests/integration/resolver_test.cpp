// The resolver on constructed trees: each rule of ld.so's search, with the
// real loader (for host files) or ldconfig (for caches) as oracle where one exists.
#include <map>
#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/resolving/ld_so_cache.hpp"
#include "runpatch/resolving/resolve.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

class ResolverTree : public ::testing::Test {
 protected:
  void SetUp() override {
    auto arches = test::fixture_arches();
    host_ = arches.at(0);
    for (const auto& a : arches)
      if (a.name == "aarch64") foreign_ = a;
    dir_ =
        test::scratch_dir(std::string("resolver/") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  fs::path copy(const fs::path& from, const fs::path& to) {
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    return to;
  }
  void edit(const fs::path& file, EditRequest request) {
    auto outcome = edit_elf_file(file, request);
    ASSERT_TRUE(outcome) << outcome.error().message();
  }
  void set_runpath(const fs::path& file, const std::string& runpath, bool rpath = false) {
    EditRequest r;
    r.runpath = set_runpath_update(runpath);
    r.force_rpath = rpath;
    edit(file, r);
  }
  static SearchEnvironment env() { return SearchEnvironment::host(false); }
  static const DependencyEdge* edge(const DependencyTree& tree, const std::string& name) {
    for (const auto& e : tree.edges)
      if (e.resolution.name == name) return &e;
    return nullptr;
  }
  // What the real loader maps for name, when the file is of the host.
  static std::string loader_says(const fs::path& file, const std::string& name) {
    auto r = test::run_command(
        {"sh", "-c",
         "env -u LD_LIBRARY_PATH /lib64/ld-linux-x86-64.so.2 --list " + test::shell_quote(file.string()) + " 2>&1"});
    if (r.output.find("error while loading shared libraries: " + name + ":") != std::string::npos) return "not";
    auto at = r.output.find(name + " => ");
    if (at == std::string::npos) return "";
    auto rest = r.output.substr(at + name.size() + 4);
    return rest.substr(0, rest.find_first_of(" \n"));
  }

  test::FixtureArch host_;
  std::optional<test::FixtureArch> foreign_;
  fs::path dir_;
};

TEST_F(ResolverTree, RunpathSkipsWrongMachineDecoy) {
  if (!foreign_) GTEST_SKIP() << "no aarch64 fixtures (cross compiler missing)";
  fs::path prog = copy(host_.dir / "prog-norunpath", dir_ / "bin/prog");
  copy(foreign_->dir / "lib/libgreet.so", dir_ / "decoy/libgreet.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "real/libgreet.so");
  set_runpath(prog, (dir_ / "decoy").string() + ":" + (dir_ / "real").string());
  auto tree = resolve_tree(prog, env());
  ASSERT_TRUE(tree) << tree.error().message();
  const auto* e = edge(*tree, "libgreet.so");
  ASSERT_TRUE(e && e->resolution.path);
  EXPECT_EQ(*e->resolution.path, (dir_ / "real/libgreet.so").string());
  EXPECT_EQ(e->resolution.via, FoundVia::Runpath);
  ASSERT_EQ(e->resolution.attempts.size(), 2u);
  EXPECT_EQ(e->resolution.attempts[0].outcome_text(), "wrong class or machine: ELF64 aarch64");
  EXPECT_EQ(loader_says(prog, "libgreet.so"), *e->resolution.path);
}

TEST_F(ResolverTree, RunpathWinsOverRpathInTheSameObject) {
  copy(host_.dir / "lib/libgreet.so", dir_ / "a/libgreet.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "b/libgreet.so");
  // Both tags at once (the editor itself keeps only one): ld.so ignores DT_RPATH.
  test::SyntheticSpec spec;
  spec.needed = {"libgreet.so"};
  spec.rpath = (dir_ / "a").string();
  spec.runpath = (dir_ / "b").string();
  test::write_file(dir_ / "both.so", test::build_synthetic_elf(spec).bytes);
  auto tree = resolve_tree(dir_ / "both.so", env());
  ASSERT_TRUE(tree) << tree.error().message();
  EXPECT_EQ(edge(*tree, "libgreet.so")->resolution.via, FoundVia::Runpath);
  EXPECT_EQ(*edge(*tree, "libgreet.so")->resolution.path, (dir_ / "b/libgreet.so").string());
  // A real program: DT_RPATH alone is used; converted to DT_RUNPATH, the new tag is.
  fs::path prog = copy(host_.dir / "prog-norunpath", dir_ / "bin/prog");
  set_runpath(prog, (dir_ / "a").string(), /*rpath=*/true);
  tree = resolve_tree(prog, env());
  ASSERT_TRUE(tree);
  EXPECT_EQ(edge(*tree, "libgreet.so")->resolution.via, FoundVia::Rpath);
  EXPECT_EQ(loader_says(prog, "libgreet.so"), (dir_ / "a/libgreet.so").string());
  set_runpath(prog, (dir_ / "b").string());
  tree = resolve_tree(prog, env());
  EXPECT_EQ(edge(*tree, "libgreet.so")->resolution.via, FoundVia::Runpath);
  EXPECT_EQ(loader_says(prog, "libgreet.so"), (dir_ / "b/libgreet.so").string());
}

TEST_F(ResolverTree, RpathOfTheLoaderChainOnlyWithoutRunpath) {
  fs::path prog = copy(host_.dir / "prog-norunpath", dir_ / "bin/prog");
  fs::path mid = copy(host_.dir / "librunpath.so", dir_ / "mid/librunpath.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "deep/libgreet.so");
  EditRequest r;
  r.remove_needed = {"libgreet.so"};
  r.add_needed = {"librunpath.so"};
  r.runpath = set_runpath_update((dir_ / "mid").string() + ":" + (dir_ / "deep").string());
  r.force_rpath = true;
  edit(prog, r);
  EditRequest strip_mid;
  strip_mid.runpath = remove_runpath_update();
  edit(mid, strip_mid);
  // librunpath.so has no runpath: its loader's (the program's) DT_RPATH finds libgreet.
  auto tree = resolve_tree(prog, env());
  ASSERT_TRUE(tree);
  const auto* e = edge(*tree, "libgreet.so");
  ASSERT_TRUE(e && e->resolution.path);
  EXPECT_EQ(e->resolution.via, FoundVia::Rpath);
  EXPECT_EQ(e->resolution.via_object, prog.string());
  EXPECT_EQ(loader_says(prog, "libgreet.so"), *e->resolution.path);
  // With a DT_RUNPATH of its own (pointing nowhere useful), the chain is not searched.
  set_runpath(mid, "/nonexistent");
  tree = resolve_tree(prog, env());
  EXPECT_FALSE(edge(*tree, "libgreet.so")->resolution.path.has_value());
  EXPECT_EQ(loader_says(prog, "libgreet.so"), "not");  // "not found"
  EXPECT_FALSE(tree->all_found());
}

TEST_F(ResolverTree, OriginAndLdLibraryPathPrecedence) {
  fs::path prog = copy(host_.dir / "prog-pie", dir_ / "pkg/bin/prog");
  copy(host_.dir / "lib/libgreet.so", dir_ / "pkg/lib/libgreet.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "llp/libgreet.so");
  set_runpath(prog, "$ORIGIN/../lib");
  auto tree = resolve_tree(prog, env());
  ASSERT_TRUE(tree);
  EXPECT_EQ(*edge(*tree, "libgreet.so")->resolution.path, (dir_ / "pkg/bin/../lib/libgreet.so").string());
  SearchEnvironment with_llp = env();
  with_llp.ld_library_path = {(dir_ / "llp").string()};
  tree = resolve_tree(prog, with_llp);
  EXPECT_EQ(edge(*tree, "libgreet.so")->resolution.via, FoundVia::LdLibraryPath);
}

TEST_F(ResolverTree, NodeflibSkipsCacheAndDefaultDirs) {
  fs::path prog = copy(host_.dir / "prog-nodeflib", dir_ / "bin/prog");
  copy(host_.dir / "lib/libgreet.so", dir_ / "bin/lib/libgreet.so");
  auto tree = resolve_tree(prog, env());
  ASSERT_TRUE(tree);
  EXPECT_TRUE(read_elf_info(prog)->nodeflib());
  EXPECT_TRUE(edge(*tree, "libgreet.so")->resolution.path.has_value());
  // libc is found for the real loader only because ld.so itself is already loaded... it is not: NODEFLIB hides it.
  const auto* libc = edge(*tree, "libc.so.6");
  ASSERT_TRUE(libc);
  EXPECT_FALSE(libc->resolution.path.has_value());
  EXPECT_EQ(loader_says(prog, "libc.so.6"), "not");
}

TEST_F(ResolverTree, HwcapsSubdirectoryIsPreferred) {
  fs::path prog = copy(host_.dir / "prog-norunpath", dir_ / "bin/prog");
  copy(host_.dir / "lib/libgreet.so", dir_ / "lib/libgreet.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "lib/glibc-hwcaps/x86-64-v2/libgreet.so");
  set_runpath(prog, (dir_ / "lib").string());
  SearchEnvironment e = env();
  e.hwcaps_subdirs = {"x86-64-v3", "x86-64-v2"};
  auto tree = resolve_tree(prog, e);
  ASSERT_TRUE(tree);
  EXPECT_EQ(*edge(*tree, "libgreet.so")->resolution.path, (dir_ / "lib/glibc-hwcaps/x86-64-v2/libgreet.so").string());
}

TEST_F(ResolverTree, AlreadyLoadedSonameSatisfiesLaterRequests) {
  fs::path prog = copy(host_.dir / "prog-norunpath", dir_ / "bin/prog");
  copy(host_.dir / "librunpath.so", dir_ / "lib/librunpath.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "lib/lib/libgreet.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "other/libgreet.so");
  EditRequest r;
  r.add_needed = {"librunpath.so"};
  r.runpath = set_runpath_update((dir_ / "lib").string() + ":" + (dir_ / "other").string());
  edit(prog, r);
  auto tree = resolve_tree(prog, env());
  ASSERT_TRUE(tree);
  // librunpath.so is needed first and pulls libgreet.so from $ORIGIN/lib; the program's
  // own request for libgreet.so is then satisfied by the loaded SONAME.
  int loaded_greets = 0;
  for (const auto& o : tree->objects)
    if (o.info->soname == std::optional<std::string>("libgreet.so")) ++loaded_greets;
  EXPECT_EQ(loaded_greets, 1);
}

// The in-place binary search must answer exactly what a full parse lists, in
// cache order, and nothing for names between the keys.
void expect_lookups_match_full_parse(const fs::path& cache_file) {
  auto parsed = read_ld_so_cache(cache_file);
  ASSERT_TRUE(parsed) << parsed.error().message();
  auto cache = LdSoCache::open(cache_file);
  ASSERT_TRUE(cache) << cache.error().message();
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& entry : *parsed) expected[entry.name].push_back(entry.path);
  ASSERT_FALSE(expected.empty());
  for (const auto& [name, paths] : expected) {
    std::vector<std::string> found;
    for (const auto& entry : cache->lookup(name)) found.push_back(entry.path);
    EXPECT_EQ(found, paths) << name;
    for (const std::string& absent : {name + "x", name.substr(0, name.size() - 1), "0" + name}) {
      if (expected.count(absent) == 0) {
        EXPECT_TRUE(cache->lookup(absent).empty()) << "'" << absent << "' is not in the cache";
      }
    }
  }
  EXPECT_TRUE(cache->lookup("libdoes-not-exist.so.42").empty());
  EXPECT_TRUE(cache->lookup("").empty());
}

TEST(LdSoCacheLookup, MatchesFullParseOfTheHostCache) {
  if (!fs::exists("/etc/ld.so.cache")) GTEST_SKIP() << "no /etc/ld.so.cache on this machine";
  expect_lookups_match_full_parse("/etc/ld.so.cache");
}

// ldconfig's order compares digit runs as numbers (libv.so.9 < libv.so.10):
// names chosen to sit on every side of that rule, in all three cache formats.
TEST_F(ResolverTree, LookupMatchesFullParseOfGeneratedCaches) {
  if (!test::have_program("ldconfig") && !fs::exists("/sbin/ldconfig")) GTEST_SKIP() << "ldconfig is missing";
  fs::path root = dir_ / "root";
  const std::vector<std::string> sonames = {
      "libv.so.1", "libv.so.2", "libv.so.9", "libv.so.10",      "libv.so.100",        "libv2.so",
      "libv10.so", "libva.so",  "libvA.so",  "libv_.so",        "libv-1.2.so.3",      "libv-1.10.so.3",
      "liba.so.1", "libz.so.1", "lib9.so",   "libQt5Core.so.5", "libx.so.4294967296", "libx.so.4294967297"};
  for (const auto& soname : sonames) {
    fs::path lib = copy(host_.dir / "lib/libgreet.so", root / "opt/v/lib" / soname);
    EditRequest r;
    r.soname = soname;
    edit(lib, r);
  }
  test::write_file(root / "etc/ld.so.conf", {'/', 'o', 'p', 't', '/', 'v', '/', 'l', 'i', 'b', '\n'});
  for (const char* format : {"new", "old", "compat"}) {
    SCOPED_TRACE(format);
    auto r = test::run_command({"ldconfig", "-r", root.string(), "-c", format}, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_lookups_match_full_parse(root / "etc/ld.so.cache");
    auto cache = LdSoCache::open(root / "etc/ld.so.cache");
    ASSERT_TRUE(cache);
    for (const auto& soname : sonames) EXPECT_EQ(cache->lookup(soname).size(), 1u) << soname;
    // The loader compares version numbers, not text (glibc's _dl_cache_libcmp).
    auto leading_zero = cache->lookup("libv.so.09");
    ASSERT_EQ(leading_zero.size(), 1u);
    EXPECT_EQ(leading_zero[0].path, "/opt/v/lib/libv.so.9");
  }
}

TEST_F(ResolverTree, CacheGeneratedByLdconfigInAForeignRoot) {
  if (!test::have_program("ldconfig") && !fs::exists("/sbin/ldconfig")) GTEST_SKIP() << "ldconfig is missing";
  fs::path root = dir_ / "root";
  copy(host_.dir / "lib/libgreet.so", root / "opt/vendor/lib/libgreet.so");
  fs::path prog = copy(host_.dir / "prog-norunpath", root / "usr/bin/prog");
  copy(fs::canonical("/lib64/ld-linux-x86-64.so.2"), root / "lib64/ld-linux-x86-64.so.2");
  test::write_file(root / "etc/ld.so.conf",
                   {'/', 'o', 'p', 't', '/', 'v', 'e', 'n', 'd', 'o', 'r', '/', 'l', 'i', 'b', '\n'});
  for (const char* format : {"new", "old", "compat"}) {
    SCOPED_TRACE(format);
    auto r = test::run_command({"ldconfig", "-r", root.string(), "-c", format}, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto cache = read_ld_so_cache(root / "etc/ld.so.cache");
    ASSERT_TRUE(cache) << cache.error().message();
    bool listed = false;
    for (const auto& entry : *cache)
      listed = listed || (entry.name == "libgreet.so" && entry.path == "/opt/vendor/lib/libgreet.so");
    EXPECT_TRUE(listed);
    SearchEnvironment e;
    e.root = root;
    auto tree = resolve_tree(prog, e);
    ASSERT_TRUE(tree) << tree.error().message();
    const auto* greet = edge(*tree, "libgreet.so");
    ASSERT_TRUE(greet && greet->resolution.path);
    EXPECT_EQ(*greet->resolution.path, "/opt/vendor/lib/libgreet.so");
    EXPECT_EQ(greet->resolution.via, FoundVia::LdSoCache);
    EXPECT_EQ(tree->objects[0].path, "/usr/bin/prog");
  }
  // Without a cache the loader searches its default directories only: it
  // never reads ld.so.conf (only ldconfig does), so /opt/vendor/lib is not searched.
  for (bool empty_file : {false, true}) {
    SCOPED_TRACE(empty_file ? "empty cache" : "no cache");
    fs::remove(root / "etc/ld.so.cache");
    if (empty_file) test::write_file(root / "etc/ld.so.cache", {});
    SearchEnvironment e;
    e.root = root;
    auto tree = resolve_tree(prog, e);
    ASSERT_TRUE(tree);
    const auto* greet = edge(*tree, "libgreet.so");
    ASSERT_TRUE(greet);
    EXPECT_EQ(greet->resolution.path, std::nullopt);
    for (const auto& attempt : greet->resolution.attempts) {
      EXPECT_EQ(attempt.rule, "default path") << attempt.path;
      EXPECT_EQ(attempt.path.rfind("/opt/vendor", 0), std::string::npos);
    }
    EXPECT_EQ(tree->loader.kind, LoaderKind::HostGlibc);
  }
}

TEST_F(ResolverTree, EveryCandidateKeepsTheFirstHitAndRecordsTheShadowed) {
  fs::path prog = copy(host_.dir / "prog-norunpath", dir_ / "prog");
  copy(host_.dir / "lib/libgreet.so", dir_ / "first/libgreet.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "second/libgreet.so");
  set_runpath(prog, (dir_ / "first").string() + ":" + (dir_ / "second").string());
  SearchEnvironment e;
  e.every_candidate = true;
  auto tree = resolve_tree(prog, e);
  ASSERT_TRUE(tree) << tree.error().message();
  const auto* greet = edge(*tree, "libgreet.so");
  ASSERT_TRUE(greet && greet->resolution.path);
  EXPECT_EQ(*greet->resolution.path, (dir_ / "first/libgreet.so").string());
  EXPECT_EQ(greet->resolution.via, FoundVia::Runpath);
  std::vector<std::string> hits;
  for (const auto& a : greet->resolution.attempts)
    if (a.outcome == AttemptOutcome::Found || a.outcome == AttemptOutcome::AlsoFound)
      hits.push_back(a.outcome_text() + " " + a.path);
  ASSERT_GE(hits.size(), 2u);
  EXPECT_EQ(hits[0], "found " + (dir_ / "first/libgreet.so").string());
  EXPECT_EQ(hits[1], "also found " + (dir_ / "second/libgreet.so").string());
  // The default search stops at the first hit, as ld.so does.
  auto plain = resolve_tree(prog, SearchEnvironment{});
  ASSERT_TRUE(plain);
  for (const auto& a : edge(*plain, "libgreet.so")->resolution.attempts)
    EXPECT_NE(a.outcome, AttemptOutcome::AlsoFound);
}

TEST_F(ResolverTree, ForeignRootUsesThatMachinesDefaultDirs) {
  if (!foreign_) GTEST_SKIP() << "no aarch64 fixtures (cross compiler missing)";
  fs::path root = dir_ / "jetson";
  fs::path prog = copy(foreign_->dir / "prog-norunpath", root / "usr/bin/prog");
  copy(foreign_->dir / "lib/libgreet.so", root / "usr/lib/aarch64-linux-gnu/libgreet.so");
  copy(host_.dir / "lib/libgreet.so", root / "lib/aarch64-linux-gnu/libgreet.so");  // x86-64 decoy, searched first
  SearchEnvironment e;
  e.root = root;
  auto tree = resolve_tree(prog, e);
  ASSERT_TRUE(tree) << tree.error().message();
  const auto* greet = edge(*tree, "libgreet.so");
  ASSERT_TRUE(greet && greet->resolution.path);
  EXPECT_EQ(*greet->resolution.path, "/usr/lib/aarch64-linux-gnu/libgreet.so");
  EXPECT_EQ(greet->resolution.via, FoundVia::DefaultDirs);
}

TEST_F(ResolverTree, DlopenNoteAndCudartAreResolvedWithTheCallersRunpath) {
  fs::path plugin = copy(host_.dir / "libplugin-host.so", dir_ / "pkg/libplugin-host.so");
  copy(host_.dir / "lib/libgreet.so", dir_ / "pkg/lib/libgreet.so");
  ASSERT_EQ(read_elf_info(plugin)->dlopen.size(), 1u);
  EXPECT_EQ(read_elf_info(plugin)->dlopen[0].sonames, std::vector<std::string>{"libgreet.so"});
  auto tree = resolve_tree(plugin, env());
  ASSERT_TRUE(tree) << tree.error().message();
  const auto* e = edge(*tree, "libgreet.so");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->dlopen);
  EXPECT_EQ(e->dlopen_reason, "greeting");
  EXPECT_EQ(e->resolution.via, FoundVia::Runpath);
  // libcudart dlopens libcuda.so.1: searched with libcudart's own runpath.
  fs::path cudart = copy(host_.dir / "libnosoname.so", dir_ / "cuda/lib/libcudart.so.13");
  copy(host_.dir / "lib/libgreet.so", dir_ / "driver/libcuda.so.1");
  set_runpath(cudart, (dir_ / "driver").string());
  tree = resolve_tree(cudart, env());
  ASSERT_TRUE(tree);
  const auto* cuda = edge(*tree, "libcuda.so.1");
  ASSERT_TRUE(cuda && cuda->resolution.path);
  EXPECT_TRUE(cuda->dlopen);
  EXPECT_EQ(*cuda->resolution.path, (dir_ / "driver/libcuda.so.1").string());
  EXPECT_TRUE(tree->all_found());
}

TEST(LdSoCacheParser, RejectsGarbageWithAnError) {
  std::vector<uint8_t> junk = {'g', 'l', 'i', 'b', 'c'};
  EXPECT_FALSE(parse_ld_so_cache(junk, "junk"));
  std::string header = "glibc-ld.so.cache1.1";
  std::vector<uint8_t> bytes(header.begin(), header.end());
  bytes.resize(48, 0);
  bytes[20] = 0xff;  // nlibs far beyond the file
  bytes[21] = 0xff;
  auto parsed = parse_ld_so_cache(bytes, "short");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message().find("do not fit"), std::string::npos);
  EXPECT_EQ(parsed.error().code, ErrorCode::Malformed) << parsed.error().message();
}

}  // namespace
}  // namespace runpatch
