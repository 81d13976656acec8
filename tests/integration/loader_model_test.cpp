// Loader models: a program whose PT_INTERP points into a store-like prefix is
// resolved as that glibc resolves it (no host ld.so.cache, its own directory
// by default); musl programs as musl's ldd lists them; and the host glibc with
// its cache hidden agrees with the no-cache model. Real loaders are the oracle.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "strict_json.hpp"
#include "fixtures.hpp"
#include "loader_listing.hpp"
#include "process.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/checking/check.hpp"
#include "runpatch/resolving/ld_so_cache.hpp"
#include "runpatch/resolving/resolve.hpp"
#include "runpatch/scanning/scan.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

using test::kHostLoader;

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Replaces every occurrence of from (same size as to); false when there is none.
bool replace_all(std::string& bytes, const std::string& from, const std::string& to) {
  bool any = false;
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + to.size())) {
    bytes.replace(at, from.size(), to);
    any = true;
  }
  return any;
}

// A copy of the host's ld.so that behaves as Nixpkgs' glibc does: its cache
// path and default directories renamed to ones that do not exist (the copy of
// a Debian loader would otherwise read /etc/ld.so.cache). False when this
// host's loader does not hold the strings (another distribution).
bool write_store_loader(const fs::path& to) {
  std::string bytes = read_text(fs::canonical(kHostLoader));
  using namespace std::string_literals;
  if (!replace_all(bytes, "/etc/ld.so.cache\0"s, "/nox/ld.so.cache\0"s) ||
      !replace_all(bytes, "/lib/x86_64-linux-gnu/\0/usr/lib/x86_64-linux-gnu/\0/lib/\0/usr/lib/\0"s,
                   "/nox/x86_64-linux-gnu/\0/usr/nox/x86_64-linux-gnu/\0/nox/\0/usr/nox/\0"s))
    return false;
  write_text(to, bytes);
  fs::permissions(to, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  return true;
}

const DependencyEdge* edge_named(const DependencyTree& tree, const std::string& name) {
  for (const auto& e : tree.edges)
    if (e.resolution.name == name) return &e;
  return nullptr;
}

test::CommandResult patchelf(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"patchelf"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_command(argv, true);
}

// /…/nix/store/{aaa-glibc/lib, bbb-zlib/lib, ccc-greet/lib, ddd-prog/bin/prog}:
// prog needs libz.so.1, libgreet.so and libc.so.6, its runpath names the
// three lib directories and its PT_INTERP the store's loader (set by Debian's patchelf).
class StoreProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kHostLoader) || !test::have_program("patchelf"))
      GTEST_SKIP() << "needs the x86-64 loader and patchelf";
    host_ = test::fixture_arches().at(0);
    if (host_.name != "x86_64") GTEST_SKIP() << "x86-64 host only";
    host_libz_ = "/lib/x86_64-linux-gnu/libz.so.1";
    if (!fs::exists(host_libz_)) GTEST_SKIP() << host_libz_ << " is absent";
    dir_ = fs::canonical(test::scratch_dir(std::string("loader_model/") +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    glibc_ = dir_ / "nix/store/aaa-glibc-2.36/lib";
    zlib_ = dir_ / "nix/store/bbb-zlib/lib";
    greet_ = dir_ / "nix/store/ccc-greet/lib";
    prog_ = dir_ / "nix/store/ddd-prog/bin/prog";
    interpreter_ = (glibc_ / "ld-linux-x86-64.so.2").string();
    if (!write_store_loader(interpreter_)) GTEST_SKIP() << "the host loader does not hold Debian's cache path and dirs";
    copy(fs::canonical("/lib/x86_64-linux-gnu/libc.so.6"), glibc_ / "libc.so.6");
    copy(fs::canonical(host_libz_), zlib_ / "libz.so.1");
    copy(host_.dir / "lib/libgreet.so", greet_ / "libgreet.so");
    copy(host_.dir / "prog-norunpath", prog_);
    // One change per patchelf run: Debian's patchelf garbles a combined --add-needed and --set-rpath.
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"--set-interpreter", interpreter_, prog_.string()},
             {"--add-needed", "libz.so.1", prog_.string()},
             {"--set-rpath", greet_.string() + ":" + zlib_.string() + ":" + glibc_.string(), prog_.string()}}) {
      auto r = patchelf(args);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
  }
  static void copy(const fs::path& from, const fs::path& to) {
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  }
  // What the store's own loader maps (it honours PT_INTERP when run as a program).
  test::LoaderListing store_loader_lists() const {
    auto r = test::run_command({interpreter_, "--list", prog_.string()}, true);
    return test::parse_loader_listing(r.output, interpreter_);
  }
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

  test::FixtureArch host_;
  fs::path host_libz_, dir_, glibc_, zlib_, greet_, prog_;
  std::string interpreter_;
};

TEST_F(StoreProgram, ModelComesFromThePtInterp) {
  auto tree = resolve_tree(prog_, SearchEnvironment::host(false));
  ASSERT_TRUE(tree) << tree.error().message();
  EXPECT_EQ(tree->loader.kind, LoaderKind::NixGlibc);
  EXPECT_EQ(tree->loader.interpreter, interpreter_);
  EXPECT_EQ(tree->loader.chosen_by, "PT_INTERP");
  EXPECT_EQ(tree->loader.ld_so_cache, std::nullopt);
  EXPECT_EQ(tree->loader.default_dirs, std::vector<std::string>{glibc_.string()});
  EXPECT_FALSE(tree->loader.reads_resolution_cache_note);
  const auto* z = edge_named(*tree, "libz.so.1");
  ASSERT_TRUE(z && z->resolution.path);
  EXPECT_EQ(*z->resolution.path, (zlib_ / "libz.so.1").string());
  EXPECT_EQ(tree->objects.at(1).path, interpreter_);
  // The store's loader maps the same files, and the program runs.
  EXPECT_EQ(test::listing_differences(prog_.string(), test::listing_of(*tree, interpreter_), store_loader_lists()), "");
  auto run = test::run_command({prog_.string()}, true);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("hello from"), std::string::npos) << run.output;
}

TEST_F(StoreProgram, DeletedDependencyIsMissingThoughTheHostCacheHasOne) {
  auto host_cache = LdSoCache::open("/etc/ld.so.cache");
  if (!host_cache || host_cache->lookup("libz.so.1").empty())
    GTEST_SKIP() << "the host's ld.so.cache lists no libz.so.1";
  std::string cached_libz = host_cache->lookup("libz.so.1").front().path;
  fs::remove(zlib_ / "libz.so.1");

  CheckOptions options;
  options.env = SearchEnvironment::host(false);
  CheckReport report = check_paths({prog_}, options);
  bool reported = false;
  for (const auto& f : report.findings)
    reported = reported || (f.rule_id() == "unresolved-needed" && f.message.rfind("libz.so.1 is not found", 0) == 0);
  EXPECT_TRUE(reported);
  ASSERT_EQ(report.loaders.count(prog_.string()), 1u);
  EXPECT_EQ(report.loaders.at(prog_.string()).kind, LoaderKind::NixGlibc);

  // The store's loader agrees: it does not find libz either (and stops there) and the program does not start.
  auto tree = resolve_tree(prog_, SearchEnvironment::host(false));
  ASSERT_TRUE(tree);
  EXPECT_EQ(test::listing_of(*tree, interpreter_).missing, std::set<std::string>{"libz.so.1"});
  EXPECT_EQ(store_loader_lists().missing, std::set<std::string>{"libz.so.1"});
  auto run = test::run_command({prog_.string()}, true);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("libz.so.1"), std::string::npos) << run.output;

  // With the host's rules the cache's copy is found, and the host's loader runs it.
  SearchEnvironment host = SearchEnvironment::host(false);
  host.loader.mode = LoaderChoice::Mode::Host;
  auto as_host = resolve_tree(prog_, host);
  ASSERT_TRUE(as_host);
  EXPECT_EQ(as_host->loader.kind, LoaderKind::HostGlibc);
  EXPECT_EQ(as_host->loader.interpreter, kHostLoader);
  const auto* z = edge_named(*as_host, "libz.so.1");
  ASSERT_TRUE(z && z->resolution.path);
  EXPECT_EQ(*z->resolution.path, cached_libz);
  EXPECT_EQ(z->resolution.via, FoundVia::LdSoCache);
  auto host_run = test::run_command({kHostLoader, prog_.string()}, true);
  EXPECT_EQ(host_run.exit_code, 0) << host_run.output;

  // The CLI: check fails and names the model; tree and why name it on their first line.
  auto check = test::run_command({RUNPATCH_CLI, "check", "--json", "--ignore-environment", prog_.string()});
  EXPECT_EQ(check.exit_code, 1);
  auto json = test::parse_json(check.output);
  EXPECT_EQ(json["loaders"][prog_.string()]["kind"], "nix");
  EXPECT_EQ(json["loaders"][prog_.string()]["interpreter"], interpreter_);
  auto tree_cli = test::run_command({RUNPATCH_CLI, "tree", "--ignore-environment", prog_.string()});
  EXPECT_EQ(tree_cli.exit_code, 1);
  EXPECT_NE(first_line(tree_cli.output).find("loader: nix glibc " + interpreter_), std::string::npos)
      << tree_cli.output;
  EXPECT_NE(tree_cli.output.find("libz.so.1 not found"), std::string::npos) << tree_cli.output;
  auto host_cli = test::run_command({RUNPATCH_CLI, "tree", "--ignore-environment", "--loader", "host", prog_.string()});
  EXPECT_EQ(host_cli.exit_code, 0) << host_cli.output;
  EXPECT_NE(first_line(host_cli.output).find("loader: host glibc"), std::string::npos) << host_cli.output;
  EXPECT_NE(host_cli.output.find("libz.so.1 => " + cached_libz + " [ld.so.cache]"), std::string::npos)
      << host_cli.output;
  auto why = test::run_command({RUNPATCH_CLI, "why", "--ignore-environment", "libz.so.1", prog_.string()});
  EXPECT_NE(first_line(why.output).find("loader: nix glibc"), std::string::npos) << why.output;
  auto bad = test::run_command({RUNPATCH_CLI, "tree", "--loader", "bogus", prog_.string()}, true);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

// Nixpkgs' glibc reads PREFIX/etc/ld.so.cache when there is one (ldconfig
// builds it here); --loader PATH applies a loader's rules by its path.
TEST_F(StoreProgram, OwnCacheBesideThePrefixIsRead) {
  std::string ldconfig = fs::exists("/sbin/ldconfig") ? "/sbin/ldconfig" : "ldconfig";
  fs::path other = dir_ / "nix/store/eee-other/lib";
  copy(greet_ / "libgreet.so", other / "libgreet.so");
  fs::remove(greet_ / "libgreet.so");
  fs::path cache = glibc_.parent_path() / "etc/ld.so.cache";
  write_text(dir_ / "ld.so.conf", other.string() + "\n");
  fs::create_directories(cache.parent_path());
  auto r = test::run_command({ldconfig, "-X", "-C", cache.string(), "-f", (dir_ / "ld.so.conf").string()}, true);
  if (r.exit_code != 0) GTEST_SKIP() << "ldconfig failed: " << r.output;
  auto tree = resolve_tree(prog_, SearchEnvironment::host(false));
  ASSERT_TRUE(tree);
  EXPECT_EQ(tree->loader.ld_so_cache, cache);
  const auto* g = edge_named(*tree, "libgreet.so");
  ASSERT_TRUE(g && g->resolution.path);
  EXPECT_EQ(*g->resolution.path, (other / "libgreet.so").string());
  EXPECT_EQ(g->resolution.via, FoundVia::LdSoCache);

  SearchEnvironment by_path = SearchEnvironment::host(false);
  by_path.loader = *parse_loader_choice("/opt/musl/lib/ld-musl-x86_64.so.1");
  auto musl = resolve_tree(prog_, by_path);
  ASSERT_TRUE(musl);
  EXPECT_EQ(musl->loader.kind, LoaderKind::Musl);
  EXPECT_EQ(musl->loader.default_dirs_source, "musl's built-in path (no /opt/musl/etc/ld-musl-x86_64.path)");
  EXPECT_EQ(musl->loader.default_dirs, (std::vector<std::string>{"/lib", "/usr/local/lib", "/usr/lib"}));
  EXPECT_FALSE(parse_loader_choice("store"));
  EXPECT_EQ(parse_loader_choice("nix")->mode, LoaderChoice::Mode::Nix);
}

// A library has no PT_INTERP: the glibc in its runpath decides; a loader
// carrying Nixpkgs' ldcache patch (its "RESCACHE" searches) reads the note.
TEST_F(StoreProgram, LibraryTakesTheGlibcOfItsRunpathAndPatchedLoadersReadTheNote) {
  fs::path lib = dir_ / "nix/store/fff-lib/lib/libgreet.so";
  copy(greet_ / "libgreet.so", lib);
  ASSERT_EQ(patchelf({"--set-rpath", glibc_.string(), lib.string()}).exit_code, 0);
  SearchEnvironment env = SearchEnvironment::host(false);
  auto info = read_elf_info(lib);
  ASSERT_TRUE(info);
  LoaderModel model = choose_loader_model(*info, lib.string(), env);
  EXPECT_EQ(model.kind, LoaderKind::NixGlibc);
  EXPECT_EQ(model.interpreter, interpreter_);
  EXPECT_EQ(model.chosen_by, "the glibc in its runpath");
  auto host_lib = read_elf_info(fs::canonical(host_libz_));
  ASSERT_TRUE(host_lib);
  EXPECT_EQ(choose_loader_model(*host_lib, fs::canonical(host_libz_).string(), env).kind, LoaderKind::HostGlibc);

  std::ofstream(interpreter_, std::ios::binary | std::ios::app).write("RESCACHE\0", 9);
  auto tree = resolve_tree(prog_, env);
  ASSERT_TRUE(tree);
  EXPECT_TRUE(tree->loader.reads_resolution_cache_note);
}

// glibc keeps an unknown $TOKEN in a runpath entry as it is written.
TEST_F(StoreProgram, UnknownTokenIsKeptLiterally) {
  fs::path prog = dir_ / "bin/prog";
  copy(host_.dir / "prog-norunpath", prog);
  copy(host_.dir / "lib/libgreet.so", dir_ / "bin/$NOPE/libgreet.so");
  ASSERT_EQ(patchelf({"--set-rpath", "$ORIGIN/$NOPE", prog.string()}).exit_code, 0);
  auto tree = resolve_tree(prog, SearchEnvironment::host(false));
  ASSERT_TRUE(tree);
  const auto* g = edge_named(*tree, "libgreet.so");
  ASSERT_TRUE(g && g->resolution.path);
  EXPECT_EQ(*g->resolution.path, (dir_ / "bin/$NOPE/libgreet.so").string());
  auto listed = test::run_command({kHostLoader, "--list", prog.string()}, true);
  EXPECT_EQ(test::listing_differences(prog.string(), test::listing_of(*tree, kHostLoader),
                                      test::parse_loader_listing(listed.output, kHostLoader)),
            "");
}

std::vector<fs::path> dynamic_x86_64_files(const std::vector<fs::path>& roots) {
  std::vector<fs::path> files;
  auto listing = list_elf_files(roots);
  auto infos = read_elf_infos(listing.elf_files);
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto& info = infos[i];
    if (!info || !info->has_dynamic || info->type == 1 || info->identity.machine != 62 ||
        info->identity.elf_class != ElfClass::Elf64 ||
        listing.elf_files[i].string().find("/debug/") != std::string::npos)
      continue;
    files.push_back(listing.elf_files[i]);
  }
  return files;
}

// Runs the loader's --list on every file in one shell; sections split by "@@@".
std::map<std::string, std::pair<int, std::string>> list_each(const std::vector<std::string>& prefix,
                                                             const std::string& lister,
                                                             const std::vector<fs::path>& files, const fs::path& dir) {
  std::string list;
  for (const auto& f : files) list += f.string() + "\n";
  write_text(dir / "files", list);
  write_text(dir / "list.sh", "while IFS= read -r f; do printf '@@@ %s\\n' \"$f\"; " + lister +
                                  " \"$f\" 2>&1; printf '@@@rc %s\\n' $?; done < \"$1\"\n");
  std::vector<std::string> argv = prefix;
  argv.back() +=
      " sh " + test::shell_quote((dir / "list.sh").string()) + " " + test::shell_quote((dir / "files").string());
  auto r = test::run_command(argv, true);
  std::map<std::string, std::pair<int, std::string>> out;
  std::istringstream lines(r.output);
  std::string current;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("@@@rc ", 0) == 0)
      out[current].first = std::stoi(line.substr(6));
    else if (line.rfind("@@@ ", 0) == 0)
      current = line.substr(4);
    else if (!current.empty())
      (out[current].second += line) += "\n";
  }
  return out;
}

// A loader that could not find a library stops (glibc) or goes on (musl):
// the name it missed must be missing for us too; a full listing must match.
std::string compare_with_loader(const fs::path& file, const DependencyTree& tree, int rc, const std::string& output,
                                const std::string& loader) {
  auto theirs = test::parse_loader_listing(output, loader);
  auto mine = test::listing_of(tree, loader);
  if (rc != 0 && !theirs.missing.empty()) {
    for (const auto& name : theirs.missing)
      if (!mine.missing.count(name)) return file.string() + ": " + name + " missing for the loader only\n";
    return "";
  }
  return test::listing_differences(file.string(), mine, theirs);
}

// The oracle: the host's own loader in a private mount namespace with an
// empty file bound over /etc/ld.so.cache searches exactly what the no-cache
// model does (default directories, no ld.so.conf).
TEST(NoCacheOracle, HostLoaderWithTheCacheHiddenMatchesTheModel) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (unshare -m and a bind mount)";
  if (!fs::exists(kHostLoader) || !fs::exists("/etc/ld.so.cache")) GTEST_SKIP() << "no x86-64 loader or cache";
  fs::path dir = fs::canonical(test::scratch_dir("loader_model/no_cache"));
  fs::path empty = dir / "empty-cache";
  write_text(empty, "");
  std::string bind = "mount --bind " + test::shell_quote(empty.string()) + " /etc/ld.so.cache &&";
  auto probe = test::run_command({"unshare", "-m", "sh", "-c", bind + " test ! -s /etc/ld.so.cache"}, true);
  if (probe.exit_code != 0) GTEST_SKIP() << "cannot hide the cache here (unshare -m, mount --bind): " << probe.output;

  std::vector<fs::path> files;
  if (fs::exists("/usr/local/cuda-13.0"))
    files = dynamic_x86_64_files({"/usr/local/cuda-13.0"});
  else
    std::cout << "[ INFO ] /usr/local/cuda-13.0 is absent: system files only\n";
  size_t cuda = files.size();
  auto system = dynamic_x86_64_files({"/usr/bin", "/usr/lib/x86_64-linux-gnu"});
  for (size_t i = 0; i < 200 && !system.empty(); ++i) files.push_back(system[i * system.size() / 200]);
  ASSERT_GE(files.size(), 100u);

  // Real paths: ld.so --list takes $ORIGIN of the program from the path it is
  // given, where a program run normally has its real one.
  for (auto& file : files) file = fs::canonical(file);
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  auto listed = list_each({"unshare", "-m", "sh", "-c", bind},
                          std::string("env -u LD_LIBRARY_PATH -u LD_PRELOAD ") + kHostLoader + " --list", files, dir);
  SearchEnvironment env = SearchEnvironment::host(false);
  env.ld_so_cache = empty;
  ResolutionSession session(env);
  std::string mismatches;
  size_t compared = 0, refused = 0, missing = 0;
  for (const auto& file : files) {
    auto it = listed.find(file.string());
    ASSERT_NE(it, listed.end()) << file << " was not listed";
    auto [rc, output] = it->second;
    bool stopped = !test::parse_loader_listing(output, kHostLoader).missing.empty();
    if (rc != 0 && !stopped) {
      ++refused;  // not loadable on its own (e.g. a plugin)
      continue;
    }
    missing += stopped;
    ++compared;
    auto tree = session.resolve_tree(file);
    ASSERT_TRUE(tree) << tree.error().message();
    mismatches += compare_with_loader(file, *tree, rc, output, kHostLoader);
  }
  std::cout << "[ INFO ] compared " << compared << " files (" << cuda << " of the CUDA toolkit; " << missing
            << " with a library missing without the cache) with the cache hidden; " << refused
            << " refused by the loader\n";
  EXPECT_GE(compared, 100u);
  EXPECT_EQ(mismatches.substr(0, 4000), "");
}

// musl: fixtures linked with musl-gcc resolve as musl's ldd lists them. Its
// rules differ from glibc's: the runpath (DT_RUNPATH or DT_RPATH) of every
// object up the loader chain is searched, and a list holding any token but
// $ORIGIN is ignored whole.
TEST(MuslModel, FixturesResolveAsMuslLddSays) {
  const std::string loader = "/lib/ld-musl-x86_64.so.1";
  if (!fs::exists(loader) || !test::have_program("musl-gcc") || !test::have_program("musl-ldd"))
    GTEST_SKIP() << "musl is not installed (Debian: musl, musl-tools, musl-dev)";
  fs::path dir = fs::canonical(test::scratch_dir("loader_model/musl"));
  write_text(dir / "greet.c", "const char *greet(void) { return \"musl\"; }\n");
  write_text(dir / "mid.c", "const char *greet(void);\nconst char *mid(void) { return greet(); }\n");
  write_text(dir / "main.c",
             "#include <stdio.h>\nconst char *greet(void);\nint main(void) { puts(greet()); return 0; }\n");
  write_text(dir / "chain.c",
             "#include <stdio.h>\nconst char *mid(void);\nint main(void) { puts(mid()); return 0; }\n");
  fs::create_directories(dir / "lib");
  fs::create_directories(dir / "bin");
  std::string lib = (dir / "lib").string(), bin = (dir / "bin").string();
  for (const auto& cmd : std::vector<std::string>{
           "musl-gcc -shared -fPIC greet.c -o lib/libgreet.so",
           "musl-gcc -shared -fPIC mid.c -o lib/libmid.so -Llib -lgreet",
           "musl-gcc main.c -o bin/prog-runpath -Llib -lgreet -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../lib'",
           "musl-gcc main.c -o bin/prog-rpath -Llib -lgreet -Wl,--disable-new-dtags,-rpath,'$ORIGIN/../lib'",
           "musl-gcc chain.c -o bin/prog-chain -Llib -lmid "
           "-Wl,-rpath-link,lib,--enable-new-dtags,-rpath,'$ORIGIN/../lib'",
           "musl-gcc main.c -o bin/prog-token -Llib -lgreet -Wl,--enable-new-dtags,-rpath,'$LIB/x:$ORIGIN/../lib'"}) {
    auto r = test::run_command({"sh", "-c", "cd " + test::shell_quote(dir.string()) + " && " + cmd}, true);
    ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
  }
  auto runs = test::run_command({bin + "/prog-runpath"}, true);
  if (runs.exit_code != 0)
    GTEST_SKIP() << "musl's loader does not run here (" << runs.exit_code << "): " << runs.output;

  std::vector<fs::path> progs;
  for (const char* name : {"prog-runpath", "prog-rpath", "prog-chain", "prog-token"})
    progs.push_back(dir / "bin" / name);
  auto listed = list_each({"sh", "-c", ""}, "musl-ldd", progs, dir);
  SearchEnvironment env = SearchEnvironment::host(false);
  for (const auto& prog : progs) {
    SCOPED_TRACE(prog.string());
    auto tree = resolve_tree(prog, env);
    ASSERT_TRUE(tree) << tree.error().message();
    EXPECT_EQ(tree->loader.kind, LoaderKind::Musl);
    EXPECT_EQ(tree->loader.interpreter, loader);
    auto [rc, output] = listed.at(prog.string());
    EXPECT_EQ(compare_with_loader(prog, *tree, rc, output, loader), "") << output;
    const auto* libc = edge_named(*tree, "libc.so");
    ASSERT_TRUE(libc && libc->resolution.path);
    EXPECT_EQ(*libc->resolution.path, loader);  // musl's loader is its libc
  }
  // What musl's rules say, written down: the chain's libgreet comes from the
  // program's runpath (glibc would not search it for libmid), and the list
  // with $LIB is ignored whole.
  auto chain = resolve_tree(progs[2], env);
  ASSERT_TRUE(chain);
  const auto* greet = edge_named(*chain, "libgreet.so");
  ASSERT_TRUE(greet && greet->resolution.path);
  EXPECT_EQ(greet->resolution.via, FoundVia::Runpath);
  EXPECT_EQ(greet->resolution.via_object, progs[2].string());
  auto token = resolve_tree(progs[3], env);
  ASSERT_TRUE(token);
  EXPECT_EQ(edge_named(*token, "libgreet.so")->resolution.path, std::nullopt);
}

// glibc's release, as its loader's --version line says ("... release version 2.36.").
std::optional<std::pair<int, int>> host_glibc_release() {
  auto r = test::run_command({kHostLoader, "--version"});
  auto at = r.output.find("release version ");
  if (at == std::string::npos) return std::nullopt;
  int major = 0, minor = 0;
  if (std::sscanf(r.output.c_str() + at + 16, "%d.%d", &major, &minor) != 2) return std::nullopt;
  return std::make_pair(major, minor);
}

// A program whose runpath is $ORIGIN/../lib, with libgreet.so where `places` say
// (below lib/); what runpatch resolves against what the host loader maps.
class LegacySubdirs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kHostLoader)) GTEST_SKIP() << "needs the x86-64 loader";
    host_ = test::fixture_arches().at(0);
    if (host_.name != "x86_64") GTEST_SKIP() << "x86-64 host only";
    release_ = host_glibc_release();
    if (!release_) GTEST_SKIP() << "the host loader names no release";
    dir_ = fs::canonical(test::scratch_dir(std::string("loader_legacy/") +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    prog_ = dir_ / "bin/prog";
    fs::create_directories(prog_.parent_path());
    fs::copy_file(host_.dir / "prog-norunpath", prog_);
    EditRequest request;
    request.runpath = set_runpath_update("$ORIGIN/../lib");
    ASSERT_TRUE(edit_elf_file(prog_, request));
  }
  void place(const std::string& below_lib) {
    fs::create_directories(dir_ / "lib" / below_lib);
    fs::copy_file(host_.dir / "lib/libgreet.so", dir_ / "lib" / below_lib / "libgreet.so");
  }
  // The path the host loader maps libgreet.so from, and runpatch's, canonical.
  void expect_same_as_loader(const std::string& expected_below_lib) {
    auto tree = resolve_tree(prog_, SearchEnvironment::host(false));
    ASSERT_TRUE(tree) << tree.error().message();
    auto listed = test::run_command({kHostLoader, "--list", prog_.string()}, true);
    EXPECT_EQ(test::listing_differences(prog_.string(), test::listing_of(*tree, kHostLoader),
                                        test::parse_loader_listing(listed.output, kHostLoader)),
              "");
    const auto* greet = edge_named(*tree, "libgreet.so");
    ASSERT_TRUE(greet && greet->resolution.path) << listed.output;
    EXPECT_EQ(fs::canonical(*greet->resolution.path), dir_ / "lib" / expected_below_lib / "libgreet.so");
    // And the edited program runs, finding it there.
    auto run = test::run_command({prog_.string()}, true);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    // check raises nothing: the library is found and the entry is used.
    CheckOptions options;
    options.env = SearchEnvironment::host(false);
    CheckReport report = check_paths({prog_}, options);
    for (const auto& f : report.findings) ADD_FAILURE() << f.rule_id() << ": " << f.message;
  }
  bool legacy() const { return release_->first == 2 && release_->second < 37; }

  test::FixtureArch host_;
  std::optional<std::pair<int, int>> release_;
  fs::path dir_, prog_;
};

// glibc before 2.37 also searches tls/ and the platform's subdirectory (x86_64/)
// below each directory; from 2.37 it does not (the loader then fails, and so do we).
TEST_F(LegacySubdirs, OnlyInASubdirectory) {
  place("tls");
  auto tree = resolve_tree(prog_, SearchEnvironment::host(false));
  ASSERT_TRUE(tree);
  EXPECT_EQ(tree->loader.searches_legacy_hwcaps_subdirs, legacy());
  EXPECT_EQ(tree->loader.glibc_release, std::to_string(release_->first) + "." + std::to_string(release_->second));
  if (!legacy()) GTEST_SKIP() << "glibc " << tree->loader.glibc_release << " searches no legacy subdirectories";
  expect_same_as_loader("tls");
}

TEST_F(LegacySubdirs, PlatformSubdirectory) {
  if (!legacy()) GTEST_SKIP() << "glibc 2.37 and later search no legacy subdirectories";
  place("x86_64");
  expect_same_as_loader("x86_64");
}

// With a copy in each, the most specific subdirectory wins: tls/x86_64, then tls, then x86_64, then lib/.
TEST_F(LegacySubdirs, MostSpecificWins) {
  if (!legacy()) GTEST_SKIP() << "glibc 2.37 and later search no legacy subdirectories";
  place("");
  place("x86_64");
  expect_same_as_loader("x86_64");
  place("tls");
  expect_same_as_loader("tls");
  place("tls/x86_64");
  expect_same_as_loader("tls/x86_64");
}

// A byte-identical copy of the host's loader at another path is the host's
// glibc: it reads /etc/ld.so.cache and the system directories (the strings
// inside it say so), whatever directory it lies in.
TEST(LoaderByContent, CopyOfTheHostLoaderIsTheHostGlibc) {
  if (!fs::exists(kHostLoader)) GTEST_SKIP() << "needs the x86-64 loader";
  auto host = test::fixture_arches().at(0);
  if (host.name != "x86_64") GTEST_SKIP() << "x86-64 host only";
  fs::path dir = fs::canonical(test::scratch_dir("loader_by_content"));
  fs::path loader = dir / "opt/glibc/ld-linux-x86-64.so.2", prog = dir / "bin/prog";
  fs::create_directories(loader.parent_path());
  fs::create_directories(prog.parent_path());
  fs::copy_file(fs::canonical(kHostLoader), loader);
  fs::permissions(loader, fs::perms::owner_all);
  fs::copy_file(host.dir / "prog-norunpath", prog);
  fs::create_directories(dir / "lib");
  fs::copy_file(host.dir / "lib/libgreet.so", dir / "lib/libgreet.so");
  EditRequest request;
  request.interpreter = loader.string();
  request.runpath = set_runpath_update("$ORIGIN/../lib");
  ASSERT_TRUE(edit_elf_file(prog, request));
  auto run = test::run_command({prog.string()}, true);
  ASSERT_EQ(run.exit_code, 0) << run.output;

  auto tree = resolve_tree(prog, SearchEnvironment::host(false));
  ASSERT_TRUE(tree) << tree.error().message();
  EXPECT_EQ(tree->loader.kind, LoaderKind::HostGlibc) << tree->loader.describe();
  EXPECT_EQ(tree->loader.interpreter, loader.string());
  auto listed = test::run_command({loader.string(), "--list", prog.string()}, true);
  EXPECT_EQ(test::listing_differences(prog.string(), test::listing_of(*tree, loader.string()),
                                      test::parse_loader_listing(listed.output, loader.string())),
            "");
  CheckOptions options;
  options.env = SearchEnvironment::host(false);
  CheckReport report = check_paths({prog}, options);
  for (const auto& f : report.findings) ADD_FAILURE() << f.rule_id() << ": " << f.message;
  EXPECT_EQ(report.loaders.at(prog.string()).kind, LoaderKind::HostGlibc);
}

}  // namespace
}  // namespace runpatch
