// runpatch check: every rule has a file that triggers it and one that does
// not; a clean tree passes; JUnit and SARIF reports carry their required parts.
#include <gtest/gtest.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <map>
#include <set>

#include "strict_json.hpp"
#include "elf_checks.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "junit_lint.hpp"
#include "sarif_schema.hpp"
#include "runpatch/checking/check.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/policy/policy.hpp"
#include "runpatch/reporting/check_report.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

class Check : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = test::fixture_arches().at(0);
    root_ = fs::absolute(
        test::scratch_dir(std::string("check/") + ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    options_.env = SearchEnvironment::host(false);
    // The fixtures stand for a Nix package (driver-dir-missing applies), wherever the scratch directory is.
    options_.closure = CheckOptions::Closure::Nix;
  }
  // jetpack-cuda-range's evidence cases with one architecture's fixtures, under root.
  void jetpack_range_cases(const fs::path& fixtures, const fs::path& root);
  fs::path file(const std::string& fixture, const std::string& name, std::optional<std::string> runpath,
                bool rpath = false) {
    fs::path to = root_ / name;
    fs::create_directories(to.parent_path());
    fs::copy_file(host_.dir / fixture, to, fs::copy_options::overwrite_existing);
    if (runpath) {
      EditRequest r;
      r.runpath = set_runpath_update(*runpath);
      r.force_rpath = rpath;
      EXPECT_TRUE(edit_elf_file(to, r));
    }
    return to;
  }
  std::set<std::string> rules_for(const fs::path& path) {
    std::set<std::string> rules;
    for (const auto& f : check_paths({path}, options_).findings) rules.emplace(f.rule_id());
    return rules;
  }
  // A library that resolves everything: libgreet.so needs only libc.
  fs::path clean_library(const std::string& name, const std::string& runpath) {
    fs::create_directories(root_ / "ok");
    return file("lib/libgreet.so", name, runpath);
  }

  test::FixtureArch host_;
  fs::path root_;
  CheckOptions options_;
};

TEST_F(Check, EachRuleTriggersAndOnlyWhenItShould) {
  // The runpaths here point at an empty directory, which unused-entry rightly
  // reports; that rule has its own test (NixpkgsAwareRules).
  options_.disabled = {CheckRule::UnusedEntry};
  std::string ok = (root_ / "ok").string();
  fs::create_directories(ok);
  EXPECT_EQ(rules_for(clean_library("clean.so", ok)), std::set<std::string>{});

  EXPECT_EQ(rules_for(file("prog-norunpath", "unresolved", std::nullopt)), std::set<std::string>{"unresolved-needed"});
  fs::path cuda_user = file("lib/libgreet.so", "libuser.so", ok);
  EditRequest needs_cuda;
  needs_cuda.add_needed = {"libcuda.so.1"};
  ASSERT_TRUE(edit_elf_file(cuda_user, needs_cuda));
  EXPECT_EQ(rules_for(cuda_user), (std::set<std::string>{"driver-library", "driver-dir-missing"}));
  EXPECT_EQ(rules_for(file("lib/libgreet.so", "libuser-ok.so", std::string(kDefaultDriverDir) + ":" + ok)),
            std::set<std::string>{});

  std::string compat = (root_ / "store/x-cuda_compat-12/compat").string();
  fs::create_directories(compat);
  EXPECT_EQ(rules_for(clean_library("late-compat.so", std::string(kDefaultDriverDir) + ":" + compat)),
            std::set<std::string>{"compat-after-driver"});
  EXPECT_EQ(rules_for(clean_library("early-compat.so", compat + ":" + kDefaultDriverDir)), std::set<std::string>{});

  fs::create_directories(root_ / "lib/stubs");
  EXPECT_EQ(rules_for(clean_library("stubbed.so", (root_ / "lib/stubs").string())),
            std::set<std::string>{"stubs-entry"});

  options_.forbidden_prefixes = {(root_ / "build").string() + "/"};
  fs::create_directories(root_ / "build/src");
  EXPECT_EQ(rules_for(clean_library("leaky.so", (root_ / "build/src").string())),
            std::set<std::string>{"forbidden-prefix"});
  options_.forbidden_prefixes.clear();

  EXPECT_EQ(rules_for(clean_library("relative.so", "lib")), std::set<std::string>{"relative-entry"});
  // An empty DT_RUNPATH holds no entry (LD_DEBUG=libs: glibc goes straight to ld.so.cache); an
  // empty entry inside a list is the current directory.
  EXPECT_EQ(rules_for(clean_library("empty.so", "")), std::set<std::string>{});
  EXPECT_TRUE(rules_for(clean_library("empty-inside.so", "/usr/lib::/lib")).count("relative-entry"));

  fs::create_directories(root_ / "open");
  ::chmod((root_ / "open").c_str(), 0777);
  EXPECT_EQ(rules_for(clean_library("open.so", (root_ / "open").string())), std::set<std::string>{"world-writable"});
  fs::create_directories(root_ / "sticky");
  ::chmod((root_ / "sticky").c_str(), 01777);  // like /tmp: only owners may replace files
  EXPECT_EQ(rules_for(clean_library("sticky.so", (root_ / "sticky").string())), std::set<std::string>{});

  EXPECT_EQ(rules_for(clean_library("missing.so", "/nonexistent/dir")), std::set<std::string>{"missing-entry"});
  EXPECT_EQ(rules_for(clean_library("dup.so", ok + ":" + ok)), std::set<std::string>{"duplicate-entry"});

  fs::path rpath = file("lib/libgreet.so", "rpath.so", ok, /*rpath=*/true);
  auto findings = check_paths({rpath}, options_).findings;
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule_id(), "rpath-not-runpath");
  EXPECT_EQ(findings[0].severity, Severity::Warning);
  options_.require_runpath = true;
  EXPECT_EQ(check_paths({rpath}, options_).findings.at(0).severity, Severity::Error);
  options_.require_runpath = false;

  fs::create_directories(root_ / "pkg/lib");
  fs::copy_file(host_.dir / "lib/libgreet.so", root_ / "pkg/lib/libgreet.so");
  fs::path prog = file("prog-pie", "pkg/bin/prog", "$ORIGIN/../lib");
  options_.interpreter = "/lib64/ld-linux-x86-64.so.2";
  EXPECT_EQ(rules_for(prog), std::set<std::string>{});
  options_.interpreter = "/nix/store/x-glibc/lib/ld-linux-x86-64.so.2";
  EXPECT_EQ(rules_for(prog), std::set<std::string>{"wrong-interpreter"});
  options_.disabled = {CheckRule::WrongInterpreter, CheckRule::UnusedEntry};
  EXPECT_EQ(rules_for(prog), std::set<std::string>{});
}

// A directory named like a Nix store path: /…/nix/store/<32 chars>-NAME/lib.
std::string store_dir(const fs::path& root, const std::string& name) {
  fs::path dir = root / "nix/store" / (std::string(32, 'a') + "-" + name) / "lib";
  fs::create_directories(dir);
  return dir.string();
}

// A Python tree: an extension module needs a library another package of the
// same site-packages provides, which the loader's search does not find but an
// earlier import has loaded (torchaudio's libtorch.so after `import torch`):
// a warning naming that package; a library no package provides stays an
// error. The oracle is an interpreter loading the modules (ctypes, RTLD_LOCAL
// as Python imports extension modules): the first loads only after the
// provider, the second never.
TEST_F(Check, APythonTreeJudgesWhatAnEarlierImportLoads) {
  fs::path site = root_ / "venv/lib/python3.11/site-packages";
  fs::path provider = file("lib/libgreet.so", "venv/lib/python3.11/site-packages/torch/lib/libgreet.so", std::nullopt);
  fs::path module = file("lib/libgreet.so", "venv/lib/python3.11/site-packages/torchaudio/_ext.so", std::nullopt);
  fs::path orphan = file("lib/libgreet.so", "venv/lib/python3.11/site-packages/cupy/_cutensor.so", std::nullopt);
  EditRequest greet_needed, cutensor_needed;
  greet_needed.add_needed = {"libgreet.so"};
  cutensor_needed.add_needed = {"libcutensor.so.2"};
  EditRequest soname;
  soname.soname = "lib_ext.so";
  ASSERT_TRUE(edit_elf_file(module, soname));
  soname.soname = "_cutensor.so";
  ASSERT_TRUE(edit_elf_file(orphan, soname));
  ASSERT_TRUE(edit_elf_file(module, greet_needed));
  ASSERT_TRUE(edit_elf_file(orphan, cutensor_needed));
  auto load = [](const std::vector<fs::path>& in_order) {
    std::string script = "import ctypes\n";
    for (const auto& p : in_order) script += "ctypes.CDLL('" + p.string() + "')\n";
    return test::run_command({"python3", "-c", script}, true).exit_code;
  };
  ASSERT_NE(load({module}), 0) << "the module alone must not load";
  ASSERT_EQ(load({provider, module}), 0) << "the module must load after its provider";
  ASSERT_NE(load({provider, orphan}), 0);
  for (const fs::path& checked : {site, site / "torchaudio"}) {  // the whole tree, or one package of it
    auto findings = check_paths({checked}, options_).findings;
    std::map<std::string, Finding> by_library;
    for (const auto& f : findings)
      if (f.rule == CheckRule::UnresolvedNeeded) by_library[f.library] = f;
    SCOPED_TRACE(checked.string());
    ASSERT_TRUE(by_library.count("libgreet.so"));
    EXPECT_EQ(by_library["libgreet.so"].severity, Severity::Warning);
    EXPECT_NE(by_library["libgreet.so"].message.find("found once the 'torch' package is imported"), std::string::npos)
        << by_library["libgreet.so"].message;
    if (checked == site) {
      ASSERT_TRUE(by_library.count("libcutensor.so.2"));
      EXPECT_EQ(by_library["libcutensor.so.2"].severity, Severity::Error);
    }
  }
}

TEST_F(Check, CudaVersionMix) {
  // Two SONAME majors of one CUDA library, through two runpath entries.
  std::string v12 = store_dir(root_, "libcublas-12.8.4.1-lib"), v13 = store_dir(root_ / "b", "libcublas-13.0.2-lib");
  for (auto [dir, soname] : {std::pair{v12, "libcublas.so.12"}, std::pair{v13, "libcublas.so.13"}}) {
    fs::path lib = file("lib/libgreet.so", fs::path(dir).lexically_relative(root_) / soname, std::nullopt);
    EditRequest r;
    r.soname = soname;
    ASSERT_TRUE(edit_elf_file(lib, r));
  }
  fs::path user = file("lib/libgreet.so", "mixed.so", v12 + ":" + v13);
  EditRequest needs;
  needs.add_needed = {"libcublas.so.12", "libcublas.so.13"};
  ASSERT_TRUE(edit_elf_file(user, needs));
  auto findings = check_paths({user}, options_).findings;
  auto mix = std::find_if(findings.begin(), findings.end(),
                          [](const Finding& f) { return f.rule_id() == "cuda-version-mix"; });
  ASSERT_NE(mix, findings.end());
  EXPECT_NE(mix->message.find("libcublas.so.12"), std::string::npos) << mix->message;
  EXPECT_NE(mix->message.find("libcublas.so.13"), std::string::npos) << mix->message;
  EXPECT_NE(mix->message.find("runpath entry " + v13), std::string::npos) << mix->message;
  // tree and why show it under the tree they describe.
  auto tree = test::run_command({RUNPATCH_CLI, "tree", "--ignore-environment", user.string()});
  EXPECT_NE(tree.output.find("error cuda-version-mix: loads libcublas.so.12"), std::string::npos) << tree.output;
  auto why = test::run_command({RUNPATCH_CLI, "why", "--ignore-environment", "libcublas.so.13", user.string()});
  EXPECT_NE(why.output.find("cuda-version-mix"), std::string::npos) << why.output;
  EXPECT_EQ(mix->libraries, (std::vector<std::string>{"libcublas.so.12", "libcublas.so.13"}));
  // A finding concerns the libraries it names, not every name its text contains a prefix of.
  auto why_prefix = test::run_command({RUNPATCH_CLI, "why", "--ignore-environment", "libcublas.so.1", user.string()});
  EXPECT_EQ(why_prefix.output.find("cuda-version-mix"), std::string::npos) << why_prefix.output;
  // One major only: nothing to report.
  fs::path single = file("lib/libgreet.so", "single.so", v13);
  EditRequest one;
  one.add_needed = {"libcublas.so.13"};
  ASSERT_TRUE(edit_elf_file(single, one));
  EXPECT_FALSE(rules_for(single).count("cuda-version-mix"));

  // Two CUDA package sets: cuda_cudart of 12.6 next to cuda_nvrtc of 12.8.
  std::string cudart = store_dir(root_, "cuda_cudart-12.6.77-lib"), nvrtc = store_dir(root_, "cuda_nvrtc-12.8.61-lib");
  std::string nvrtc_same = store_dir(root_, "cuda_nvrtc-12.6.85-lib");
  for (auto [dir, soname] : {std::pair{cudart, "libcudart.so.12"}, std::pair{nvrtc, "libnvrtc.so.12"},
                             std::pair{nvrtc_same, "libnvrtc.so.12"}})
    file("lib/libgreet.so", fs::path(dir).lexically_relative(root_) / soname, std::nullopt);
  for (auto [name, runpath, mixes] : {std::tuple{"sets.so", cudart + ":" + nvrtc, true},
                                      std::tuple{"one-set.so", cudart + ":" + nvrtc_same, false}}) {
    fs::path lib = file("lib/libgreet.so", name, runpath);
    EditRequest both;
    both.add_needed = {"libcudart.so.12", "libnvrtc.so.12"};
    ASSERT_TRUE(edit_elf_file(lib, both));
    EXPECT_EQ(rules_for(lib).count("cuda-version-mix"), mixes ? 1u : 0u) << name;
  }
}

TEST_F(Check, ClosureBloatUnusedEntriesShadowingAndRuntimeStub) {
  // closure-bloat: a -dev output and the monolithic toolkit; a -lib output is fine.
  std::string dev = store_dir(root_, "zlib-1.3.1-dev"), toolkit = store_dir(root_ / "t", "cudatoolkit-12.8.1");
  std::string lib_output = store_dir(root_, "zlib-1.3.1-lib");
  options_.disabled = {CheckRule::UnusedEntry};
  EXPECT_EQ(rules_for(clean_library("dev.so", dev)), std::set<std::string>{"closure-bloat"});
  EXPECT_EQ(rules_for(clean_library("toolkit.so", toolkit)), std::set<std::string>{"closure-bloat"});
  EXPECT_EQ(rules_for(clean_library("lib-output.so", lib_output)), std::set<std::string>{});
  // A derivation named without a version: Nix still names its outputs <name>-dev, <name>-lib.
  std::string unversioned_dev = store_dir(root_ / "w", "cuda-pkg-dev"),
              unversioned_lib = store_dir(root_ / "w", "cuda-pkg-lib");
  EXPECT_EQ(rules_for(clean_library("unversioned-dev.so", unversioned_dev)), std::set<std::string>{"closure-bloat"});
  EXPECT_EQ(rules_for(clean_library("unversioned-lib.so", unversioned_lib)), std::set<std::string>{});
  options_.disabled.clear();

  // unused-entry: the directory that provides libgreet.so is used, the other is not; its size is reported.
  std::string used = store_dir(root_ / "u", "greet-1.0"), unused = store_dir(root_ / "v", "blob-2.0");
  file("lib/libgreet.so", fs::path(used).lexically_relative(root_) / "libgreet.so", std::nullopt);
  test::write_file(fs::path(unused) / "data.bin", std::vector<uint8_t>(300 * 1024, 1));
  fs::path prog = file("prog-pie", "prog-unused", used + ":" + unused);
  auto findings = check_paths({prog}, options_).findings;
  ASSERT_EQ(findings.size(), 1u) << findings.at(0).message;
  EXPECT_EQ(findings[0].rule_id(), "unused-entry");
  EXPECT_NE(findings[0].message.find(unused), std::string::npos);
  EXPECT_NE(findings[0].message.find("300 KiB"), std::string::npos) << findings[0].message;
  EXPECT_EQ(test::run_program(host_, prog).output, "hello from lib\n");  // the patched program runs
  EXPECT_TRUE(check_paths({file("prog-pie", "prog-used", used)}, options_).findings.empty());

  // ld-library-path-shadowing: LD_LIBRARY_PATH holds another libgreet.so than the runpath.
  std::string llp_dir = (root_ / "llp").string();
  fs::create_directories(llp_dir);
  fs::copy_file(host_.dir / "lib/libgreet.so", fs::path(llp_dir) / "libgreet.so");
  options_.env.ld_library_path = {llp_dir};
  fs::path shadowed = file("prog-pie", "prog-shadowed", used);
  EXPECT_EQ(rules_for(shadowed), std::set<std::string>{"ld-library-path-shadowing"});
  auto tree = test::run_command({RUNPATCH_CLI, "tree", "--ld-library-path", llp_dir, shadowed.string()});
  EXPECT_NE(tree.output.find("ld-library-path-shadowing: libgreet.so"), std::string::npos) << tree.output;
  options_.env.ld_library_path = {(root_ / "ok").string()};
  fs::create_directories(root_ / "ok");
  EXPECT_EQ(rules_for(file("prog-pie", "prog-not-shadowed", used)), std::set<std::string>{});
  options_.env.ld_library_path.clear();

  // runtime-stub: the toolkit's stub copied into a plain directory; the driver's library is not one.
  options_.disabled = {CheckRule::UnusedEntry};
  fs::create_directories(root_ / "stubcopy");
  fs::copy_file(host_.dir / "cuda-pkg/lib/stubs/libcuda.so", root_ / "stubcopy/libcuda.so.1");
  EXPECT_EQ(rules_for(clean_library("stub-user.so", (root_ / "stubcopy").string())),
            std::set<std::string>{"runtime-stub"});
  EXPECT_EQ(rules_for(clean_library("driver-user.so", (host_.dir / "cuda-pkg/driver").string())),
            std::set<std::string>{});
}

// $LIB and $PLATFORM expand in every rule as the resolver expands them:
// missing-entry does not call '$ORIGIN/../$LIB' missing when it exists.
TEST_F(Check, LoaderTokensExpandInEveryRule) {
  auto tree = resolve_tree(host_.dir / "prog-pie", options_.env);
  ASSERT_TRUE(tree);
  // The value the host loader gives $LIB, found by resolving an entry that names it.
  fs::path probe = file("prog-pie", "probe/prog", "$ORIGIN/$LIB");
  auto probed = resolve_tree(probe, options_.env);
  ASSERT_TRUE(probed);
  ASSERT_FALSE(probed->lib_token.empty());
  fs::path greet_dir = root_ / "pkg" / probed->lib_token;
  fs::create_directories(greet_dir);
  fs::copy_file(host_.dir / "lib/libgreet.so", greet_dir / "libgreet.so");
  fs::path prog = file("prog-pie", "pkg/bin/prog", "$ORIGIN/../$LIB");
  EXPECT_EQ(rules_for(prog), std::set<std::string>{});
  EXPECT_EQ(test::run_program(host_, prog).output, "hello from lib\n");
  fs::path braced = file("prog-pie", "pkg/bin/prog-braced", "$ORIGIN/../${LIB}:$ORIGIN/../${LIB}/none");
  EXPECT_EQ(rules_for(braced), std::set<std::string>{"missing-entry"});
}

// unused-entry never advises dropping what a dlopen may need: $ORIGIN, a
// directory of the file's own package that holds libraries, a directory holding a library its dlopen notes name,
// or, for a CUDA library (cuDNN loads libcudnn_ops & co. by name), other CUDA
// libraries. Ordinary directories are not measured as closure cost.
TEST_F(Check, UnusedEntryKeepsWhatADlopenMayNeed) {
  std::string used = store_dir(root_ / "u", "greet-1.0");
  file("lib/libgreet.so", fs::path(used).lexically_relative(root_) / "libgreet.so", std::nullopt);
  fs::create_directories(root_ / "cudnn-ops/lib");
  fs::copy_file(host_.dir / "lib/libgreet.so", root_ / "cudnn-ops/lib/libcudnn_ops.so.9");
  fs::create_directories(root_ / "cudnn/lib/plugins");
  fs::copy_file(host_.dir / "lib/libgreet.so", root_ / "cudnn/lib/plugins/libplugin.so");
  fs::path cudnn = file("lib/libgreet.so", "cudnn/lib/libcudnn.so.9",
                        "$ORIGIN:$ORIGIN/plugins:" + (root_ / "cudnn-ops/lib").string());
  {
    EditRequest soname;
    soname.soname = "libcudnn.so.9";
    ASSERT_TRUE(edit_elf_file(cudnn, soname));
  }
  EXPECT_EQ(rules_for(cudnn), std::set<std::string>{});

  // A directory only a dlopen note names a library of.
  fs::create_directories(root_ / "plugins");
  fs::copy_file(host_.dir / "lib/libgreet.so", root_ / "plugins/libgreet.so");
  fs::path host = file("libplugin-host.so", "host/libplugin-host.so", used + ":" + (root_ / "plugins").string());
  auto findings = check_paths({host}, options_).findings;
  for (const auto& f : findings) EXPECT_NE(f.rule_id(), "unused-entry") << f.message;

  // An ordinary directory is reported unused, without a closure size.
  fs::create_directories(root_ / "plain");
  fs::path prog = file("prog-pie", "prog-plain", used + ":" + (root_ / "plain").string());
  findings = check_paths({prog}, options_).findings;
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule_id(), "unused-entry");
  EXPECT_EQ(findings[0].message.find("alive"), std::string::npos) << findings[0].message;
}

TEST_F(Check, ForeignMachineInATree) {
  std::optional<test::FixtureArch> foreign;
  for (const auto& a : test::fixture_arches())
    if (a.name == "aarch64") foreign = a;
  if (!foreign) GTEST_SKIP() << "no aarch64 fixtures";
  fs::create_directories(root_ / "tree");
  for (const char* n : {"a.so", "b.so"}) fs::copy_file(host_.dir / "libnosoname.so", root_ / "tree" / n);
  fs::copy_file(foreign->dir / "libnosoname.so", root_ / "tree/c.so");
  auto report = check_paths({root_ / "tree"}, options_);
  std::vector<std::string> foreign_files;
  for (const auto& f : report.findings)
    if (f.rule_id() == "foreign-machine") foreign_files.push_back(f.file);
  EXPECT_EQ(foreign_files, std::vector<std::string>{(root_ / "tree/c.so").string()});
}

// libcublasLt, libcufft, libnvrtc … carry the static CUDA runtime: no
// DT_NEEDED libcuda, no dlopen note, yet they dlopen libcuda.so.1 by name.
// driver-dir-missing must see them as doctor does; libcuda itself names
// libcuda.so.1 (its SONAME) and is no user of it.
TEST_F(Check, TheStaticCudaRuntimeNeedsTheDriverDirectory) {
  if (!test::have_program("cc")) GTEST_SKIP() << "needs cc";
  fs::path src = root_ / "static_rt.c";
  std::string code = "#include <dlfcn.h>\nvoid *load_driver(void) { return dlopen(\"libcuda.so.1\", RTLD_NOW); }\n";
  test::write_file(src, std::vector<uint8_t>(code.begin(), code.end()));
  fs::path lib = root_ / "libstatic-rt.so";
  auto cc = test::run_command({"cc", "-shared", "-fPIC", "-o", lib.string(), src.string(), "-ldl"}, true);
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  EXPECT_TRUE(rules_for(lib).count("driver-dir-missing"));
  EditRequest driver;
  driver.runpath = set_runpath_update("/run/opengl-driver/lib");
  ASSERT_TRUE(edit_elf_file(lib, driver));
  EXPECT_FALSE(rules_for(lib).count("driver-dir-missing"));
  EXPECT_FALSE(
      rules_for(file("cuda-pkg/driver/libcuda.so.1", "libcuda.so.1", std::nullopt)).count("driver-dir-missing"))
      << "libcuda is not a user of itself";
}

// check judges the program as the loader runs it: a library its dependency
// needs and that dependency's search cannot find stops the program (the
// loader is the oracle: the program exits 127), found through the program's
// DT_RPATH it does not (DT_RPATH is inherited, DT_RUNPATH is not). Each
// failure is reported once: at the dependency when it is checked too.
TEST_F(Check, TheClosureTheLoaderLoadsIsJudged) {
  if (!test::have_program("cc")) GTEST_SKIP() << "needs cc";
  auto build = [&](const std::string& out, const std::string& code, std::vector<std::string> flags) {
    fs::path src = root_ / (fs::path(out).filename().string() + ".c");
    test::write_file(src, std::vector<uint8_t>(code.begin(), code.end()));
    fs::create_directories((root_ / out).parent_path());
    std::vector<std::string> argv{"cc", "-o", (root_ / out).string(), src.string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto cc = test::run_command(argv, true);
    ASSERT_EQ(cc.exit_code, 0) << cc.output;
  };
  std::string lib_dir = (root_ / "lib").string(), ext_dir = (root_ / "ext").string();
  build("ext/libgone2.so", "int gone2(void) { return 2; }\n", {"-shared", "-fPIC"});
  build("ext/libA.so", "int gone2(void);\nint a(void) { return gone2(); }\n",
        {"-shared", "-fPIC", "-L" + ext_dir, "-lgone2"});
  build("lib/libB.so", "int b(void) { return 3; }\n", {"-shared", "-fPIC"});
  build("lib/libA2.so", "int b(void);\nint a2(void) { return b(); }\n", {"-shared", "-fPIC", "-L" + lib_dir, "-lB"});
  std::string main_a = "int a(void);\nint main(void) { return a() - 2; }\n";
  std::string main_a2 = "int a2(void);\nint main(void) { return a2() - 3; }\n";
  build("bin/prog", main_a, {"-L" + ext_dir, "-lA", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../ext"});
  build("bin/prog-runpath", main_a2, {"-L" + lib_dir, "-lA2", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib"});
  build("bin/prog-rpath", main_a2, {"-L" + lib_dir, "-lA2", "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../lib"});
  fs::remove(root_ / "ext/libgone2.so");
  auto runs = [](const fs::path& prog) { return test::run_command({prog.string()}, true); };
  auto unresolved = [&](const std::vector<fs::path>& paths) {
    std::vector<Finding> found;
    for (const auto& f : check_paths(paths, options_).findings)
      if (f.rule == CheckRule::UnresolvedNeeded) found.push_back(f);
    return found;
  };

  // A transitive need that nothing finds: the program cannot start, check fails naming the requester and chain.
  ASSERT_EQ(runs(root_ / "bin/prog").exit_code, 127) << runs(root_ / "bin/prog").output;
  auto alone = unresolved({root_ / "bin/prog"});
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].library, "libgone2.so");
  EXPECT_NE(alone[0].message.find("the runpath of " + (root_ / "ext/libA.so").string()), std::string::npos)
      << alone[0].message;
  EXPECT_NE(alone[0].message.find("prog -> libA.so -> libgone2.so"), std::string::npos) << alone[0].message;
  // Checked with its dependency, once: at libA.so, whose runpath must change.
  auto both = unresolved({root_ / "bin/prog", root_ / "ext"});
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].file, (root_ / "ext/libA.so").string());

  // DT_RUNPATH is not inherited: libA2.so's libB.so next to it is not found.
  ASSERT_EQ(runs(root_ / "bin/prog-runpath").exit_code, 127);
  auto runpath = unresolved({root_ / "bin/prog-runpath"});
  ASSERT_EQ(runpath.size(), 1u);
  EXPECT_EQ(runpath[0].library, "libB.so");
  // DT_RPATH is: the program runs, and check passes it.
  ASSERT_EQ(runs(root_ / "bin/prog-rpath").exit_code, 0) << runs(root_ / "bin/prog-rpath").output;
  EXPECT_TRUE(unresolved({root_ / "bin/prog-rpath"}).empty());
  // libA2.so checked in that program's tree holds in its context: a note naming it, not an error.
  fs::remove(root_ / "bin/prog-runpath");
  fs::remove(root_ / "bin/prog");
  auto in_context = unresolved({root_ / "bin", root_ / "lib"});
  ASSERT_EQ(in_context.size(), 1u);
  EXPECT_EQ(in_context[0].file, (root_ / "lib/libA2.so").string());
  EXPECT_EQ(in_context[0].severity, Severity::Info);
  EXPECT_NE(in_context[0].message.find("bin/prog-rpath"), std::string::npos) << in_context[0].message;
}

// A file check may not open is an unreadable-file finding, in a tree or named,
// with the reason (not "bad magic"): run as an unprivileged user (as root,
// through setpriv as nobody, for whom a chmod-000 file is closed).
TEST_F(Check, AFileItMayNotOpenIsUnreadableAndSaysWhy) {
  std::vector<std::string> as_user;
  if (::geteuid() == 0) {
    if (!test::have_program("setpriv")) GTEST_SKIP() << "needs setpriv to run as an unprivileged user";
    as_user = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  }
  fs::path dir = root_ / "closed";
  fs::create_directories(dir);
  fs::permissions(root_, fs::perms::all, fs::perm_options::add);
  fs::copy_file(host_.dir / "lib/libgreet.so", dir / "libclosed.so");
  fs::permissions(dir / "libclosed.so", fs::perms::none);
  for (const fs::path& target : {dir, dir / "libclosed.so"}) {
    std::vector<std::string> argv = as_user;
    for (const std::string& a : {std::string(RUNPATCH_CLI), std::string("check"), target.string()}) argv.push_back(a);
    auto r = test::run_command(argv, true);
    EXPECT_EQ(r.exit_code, 1) << target << "\n" << r.output;
    EXPECT_NE(r.output.find("unreadable-file"), std::string::npos) << target << "\n" << r.output;
    EXPECT_NE(r.output.find("Permission denied"), std::string::npos) << target << "\n" << r.output;
    EXPECT_EQ(r.output.find("bad magic"), std::string::npos) << target << "\n" << r.output;
  }
  fs::permissions(dir / "libclosed.so", fs::perms::owner_all);
}

// unused-entry judges absolute entries only: a relative one is relative-entry's,
// whatever directory check runs in (its own library directory included).
TEST_F(Check, UnusedEntryDoesNotDependOnTheWorkingDirectory) {
  fs::path lib = file("lib/libgreet.so", "pkg/libgreet.so", "unusedrel");
  fs::create_directories(root_ / "unusedrel");  // "unusedrel" is a directory when run from root_
  auto rules_from = [&](const fs::path& cwd) {
    auto r = test::run_command({"sh", "-c",
                                "cd '" + cwd.string() + "' && exec '" + RUNPATCH_CLI +
                                    "' check --json --fail-on error '" + lib.string() + "'"});
    return r.output;
  };
  for (const fs::path& cwd : {root_, fs::path("/")}) {
    std::string json = rules_from(cwd);
    EXPECT_EQ(json.find("unused-entry"), std::string::npos) << cwd << "\n" << json;
    EXPECT_NE(json.find("relative-entry"), std::string::npos) << cwd << "\n" << json;
  }
}

// A .note.dlopen entry nothing finds is as severe as its priority; found, it is no finding.
TEST_F(Check, UnresolvedDlopenFollowsTheNotesPriority) {
  if (!test::have_program("cc")) GTEST_SKIP() << "needs cc";
  auto library_with_note = [&](const std::string& name, const std::string& priority, const std::string& soname) {
    std::string json = "[{\\\"feature\\\":\\\"plugin\\\",\\\"priority\\\":\\\"" + priority +
                       "\\\",\\\"soname\\\":[\\\"" + soname + "\\\"]}]";
    std::string code = "#include <stdint.h>\n#define DLOPEN_JSON \"" + json +
                       "\"\n"
                       "struct n { uint32_t namesz, descsz, type; char name[4]; char desc[(sizeof(DLOPEN_JSON) + 3) & "
                       "~3]; };\n"
                       "__attribute__((section(\".note.dlopen\"), aligned(4), used)) static const struct n note = "
                       "{4, sizeof(DLOPEN_JSON), 0x407c0c0a, \"FDO\", DLOPEN_JSON};\n"
                       "int f(void) { return 0; }\n";
    fs::path src = root_ / (name + ".c");
    test::write_file(src, std::vector<uint8_t>(code.begin(), code.end()));
    fs::path lib = root_ / name;
    auto cc = test::run_command({"cc", "-shared", "-fPIC", "-o", lib.string(), src.string()}, true);
    EXPECT_EQ(cc.exit_code, 0) << cc.output;
    return lib;
  };
  auto severity_of = [&](const fs::path& lib) -> std::optional<Severity> {
    for (const auto& f : check_paths({lib}, options_).findings)
      if (f.rule == CheckRule::UnresolvedDlopen) return f.severity;
    return std::nullopt;
  };
  EXPECT_EQ(severity_of(library_with_note("librequired.so", "required", "libabsent-plugin.so.1")), Severity::Error);
  EXPECT_EQ(severity_of(library_with_note("librecommended.so", "recommended", "libabsent-plugin.so.1")),
            Severity::Warning);
  EXPECT_EQ(severity_of(library_with_note("libsuggested.so", "suggested", "libabsent-plugin.so.1")), Severity::Info);
  EXPECT_EQ(severity_of(library_with_note("libfound.so", "required", "libc.so.6")), std::nullopt);
  // The command line: --fail-on info fails on a suggested one, the default only on a required one.
  auto run = [&](std::vector<std::string> args) { return test::run_command(args, true).exit_code; };
  EXPECT_EQ(run({RUNPATCH_CLI, "check", "-q", (root_ / "librequired.so").string()}), 1);
  EXPECT_EQ(run({RUNPATCH_CLI, "check", "-q", (root_ / "libsuggested.so").string()}), 0);
  EXPECT_EQ(run({RUNPATCH_CLI, "check", "-q", "--fail-on", "info", (root_ / "libsuggested.so").string()}), 1);
}

TEST_F(Check, CleanCudaLikePackagePassesAndReportsValidate) {
  fs::copy(host_.dir / "cuda-pkg", root_ / "pkg", fs::copy_options::recursive);
  auto before = check_paths({root_ / "pkg"}, options_);
  std::set<std::string> rules;
  for (const auto& f : before.findings) rules.emplace(f.rule_id());
  EXPECT_TRUE(rules.count("stubs-entry"));
  EXPECT_TRUE(rules.count("driver-dir-missing"));
  RunpathPolicy driver;
  driver.driver = true;
  ASSERT_EQ(apply_policy_to_paths(driver, {root_ / "pkg"}).failed, 0u);
  auto after = check_paths({root_ / "pkg"}, options_);
  EXPECT_FALSE(after.any_at_least(Severity::Warning)) << format_check_text(after, false);
  EXPECT_EQ(after.files.size(), 5u);

  // JUnit: well-formed XML with a testcase per file (xmllint validates the syntax).
  std::string junit = check_junit(before, Severity::Error);
  test::write_file(root_ / "report.xml", std::vector<uint8_t>(junit.begin(), junit.end()));
  EXPECT_EQ(test::junit_lint_errors(root_ / "report.xml").value_or(""), "");
  if (test::have_program("xmllint")) {
    auto count =
        test::run_command({"xmllint", "--xpath", "count(//testsuite/testcase)", (root_ / "report.xml").string()});
    EXPECT_EQ(count.output, std::to_string(before.files.size()) + "\n");
    auto failures =
        test::run_command({"xmllint", "--xpath", "string(//testsuite/@failures)", (root_ / "report.xml").string()});
    EXPECT_NE(failures.output, "0\n");
  }
  // SARIF 2.1.0 required parts: version, runs[].tool.driver.name, results[].message.text.
  auto sarif = check_sarif(before, "test");
  if (auto schema = test::sarif_schema_violations(sarif)) {
    EXPECT_TRUE(schema->empty()) << ::testing::PrintToString(*schema);
  }
  EXPECT_EQ(sarif["version"], "2.1.0");
  ASSERT_EQ(sarif["runs"].size(), 1u);
  EXPECT_EQ(sarif["runs"][0]["tool"]["driver"]["name"], "runpatch");
  EXPECT_EQ(sarif["runs"][0]["tool"]["driver"]["rules"].size(), check_rules().size());
  ASSERT_EQ(sarif["runs"][0]["results"].size(), before.findings.size());
  for (const auto& r : sarif["runs"][0]["results"]) {
    EXPECT_TRUE(r["message"]["text"].is_string());
    EXPECT_TRUE(r["ruleId"].is_string());
    EXPECT_TRUE(r["level"] == "error" || r["level"] == "warning" || r["level"] == "note");
    EXPECT_EQ(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].get<std::string>().rfind("file:///", 0),
              0u);
  }
}

TEST_F(Check, CommandLineExitCodesAndCudaToolkit) {
  using test::cli;
  fs::copy(host_.dir / "cuda-pkg", root_ / "pkg", fs::copy_options::recursive);
  auto r = cli({"check", "--ignore-environment", (root_ / "pkg").string(), "--junit", (root_ / "j.xml").string(),
                "--sarif", (root_ / "s.sarif").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("stubs-entry"), std::string::npos);
  EXPECT_TRUE(fs::exists(root_ / "j.xml"));
  EXPECT_EQ(test::junit_lint_errors(root_ / "j.xml").value_or(""), "");
  auto written = test::parse_json(test::read_file(root_ / "s.sarif"));
  EXPECT_EQ(written["version"], "2.1.0");
  if (auto schema = test::sarif_schema_violations(written)) {
    EXPECT_TRUE(schema->empty()) << ::testing::PrintToString(*schema);
  }
  EXPECT_EQ(cli({"check", "--disable", "no-such-rule", (root_ / "pkg").string()}).exit_code, 2);
  // --search: a dependency found in another output is not unresolved.
  fs::create_directories(root_ / "deps");
  fs::copy_file(host_.dir / "lib/libgreet.so", root_ / "deps/libgreet.so");
  fs::copy_file(host_.dir / "prog-norunpath", root_ / "solo");
  EXPECT_EQ(cli({"check", "--ignore-environment", (root_ / "solo").string()}).exit_code, 1);
  EXPECT_EQ(cli({"check", "--ignore-environment", "--search", (root_ / "deps").string(), (root_ / "solo").string()})
                .exit_code,
            0);
  EXPECT_EQ(cli({"check", "--fail-on", "loud", (root_ / "pkg").string()}).exit_code, 2);
  EXPECT_EQ(cli({"check", "--ignore-environment", "--disable", "stubs-entry", "--disable", "driver-dir-missing",
                 "--disable", "missing-entry", (root_ / "pkg").string()})
                .exit_code,
            0);

  fs::path cuda = "/usr/local/cuda-13.0/lib";
  if (!fs::exists(cuda)) GTEST_SKIP() << cuda << " is absent";
  auto report = check_paths({cuda}, options_);
  std::set<std::string> missing_driver;
  for (const auto& f : report.findings) {
    EXPECT_NE(f.rule_id(), "unresolved-needed") << f.file << ": " << f.message;  // no false unresolved libraries
    if (f.rule_id() != "driver-dir-missing") continue;
    missing_driver.insert(fs::path(f.file).filename().string());
    // Every one loads libcuda.so.1: it names it (libcudart, or a static CUDA runtime inside).
    auto bytes = test::read_file(f.file);
    const std::string needle("libcuda.so.1\0", 13);
    EXPECT_NE(::memmem(bytes.data(), bytes.size(), needle.data(), needle.size()), nullptr) << f.file;
  }
  // libcudart dlopens the driver; libcublasLt and libcufft carry the static runtime, which does too.
  for (const char* lib : {"libcudart.so.13", "libcublasLt.so.13", "libcufft.so.12"}) {
    if (fs::exists(cuda / lib)) {
      EXPECT_TRUE(missing_driver.count(lib)) << lib;
    }
  }
}

// compat-needs-driver, for a consumer: the driver directory behind each cuda_compat directory.
TEST_F(Check, CompatDirectoryNeedsTheDriverBehindIt) {
  options_.disabled = {CheckRule::UnusedEntry};
  std::string compat = (root_ / "store/x-cuda_compat-12.9/compat").string();
  fs::create_directories(compat);
  std::string driver = kDefaultDriverDir;
  EXPECT_EQ(rules_for(clean_library("compat-alone.so", compat)), std::set<std::string>{"compat-needs-driver"});
  EXPECT_EQ(rules_for(clean_library("compat-then-driver.so", compat + ":" + driver)), std::set<std::string>{});
  // A driver directory in front is compat-after-driver's finding, not this one.
  EXPECT_EQ(rules_for(clean_library("driver-then-compat.so", driver + ":" + compat)),
            std::set<std::string>{"compat-after-driver"});
  options_.disabled.insert(CheckRule::CompatNeedsDriver);
  EXPECT_EQ(rules_for(clean_library("compat-alone-off.so", compat)), std::set<std::string>{});
}

// compat-needs-driver, for cuda_compat's libcuda itself (aarch64, as on a
// Jetson): its libnvrm_* come from its own runpath, whatever loads it.
TEST_F(Check, CompatLibcudaReachesLibnvrmThroughItsOwnRunpath) {
  std::optional<test::FixtureArch> arm;
  for (const auto& a : test::fixture_arches())
    if (a.name == "aarch64") arm = a;
  if (!arm) GTEST_SKIP() << "no aarch64 fixtures";
  options_.env = SearchEnvironment{};  // an aarch64 tree: nothing of this host's loader applies
  options_.disabled = {CheckRule::UnresolvedNeeded, CheckRule::UnusedEntry};  // libc.so.6 is not in the tree
  fs::path compat = root_ / "store/y-cuda_compat-12.9/compat";
  fs::create_directories(compat);
  fs::copy_file(arm->dir / "l4t/compat/libcuda.so.1", compat / "libcuda.so.1");
  auto report = check_paths({compat / "libcuda.so.1"}, options_);
  std::set<std::string> rules;
  for (const auto& f : report.findings) rules.emplace(f.rule_id());
  // libnvrm_* are the driver's (driver-library, info), not unresolved errors.
  EXPECT_EQ(rules, (std::set<std::string>{"driver-library", "compat-needs-driver"}))
      << format_check_text(report, false);
  for (const auto& f : report.findings) {
    if (f.rule_id() == "compat-needs-driver") {
      EXPECT_NE(f.message.find("libnvrm_gpu.so, libnvrm_mem.so"), std::string::npos) << f.message;
    }
  }
  EditRequest r;
  r.runpath = set_runpath_update(std::string(kDefaultDriverDir));
  ASSERT_TRUE(edit_elf_file(compat / "libcuda.so.1", r));
  rules.clear();
  for (const auto& f : check_paths({compat / "libcuda.so.1"}, options_).findings) rules.emplace(f.rule_id());
  EXPECT_EQ(rules, std::set<std::string>{"driver-library"});

  // L4T's own driver libcuda lies beside its libnvrm_* and has no runpath: normal for the driver.
  fs::path driver = root_ / "rootfs/usr/lib/aarch64-linux-gnu/nvidia";
  fs::create_directories(driver);
  fs::copy_file(arm->dir / "l4t/compat/libcuda.so.1", driver / "libcuda.so.1");
  for (const char* lib : {"libnvrm_gpu.so", "libnvrm_mem.so"}) fs::copy_file(arm->dir / "l4t/nvrm" / lib, driver / lib);
  rules.clear();
  for (const auto& f : check_paths({driver / "libcuda.so.1"}, options_).findings) rules.emplace(f.rule_id());
  EXPECT_FALSE(rules.count("compat-needs-driver")) << "the driver's libcuda is no compat layer";
}

// jetpack-cuda-range: the package set's CUDA release against --jetpack.
TEST_F(Check, PackageSetMustBeInTheJetpackRange) {
  options_.disabled = {CheckRule::UnusedEntry, CheckRule::StubsEntry, CheckRule::DriverDirMissing,
                       CheckRule::RuntimeStub};
  fs::copy(host_.dir / "cuda-pkg", root_ / "pkg", fs::copy_options::recursive);  // libcudart.so.13: CUDA 13
  fs::path prog = root_ / "pkg/bin/cuda-prog";
  auto rules_on = [&](const char* jetpack) {
    options_.jetpack = find_jetpack(jetpack);
    std::set<std::string> rules;
    for (const auto& f : check_paths({prog}, options_).findings) {
      rules.emplace(f.rule_id());
      if (f.rule_id() == "jetpack-cuda-range") {
        // Outside whatever the minor: said; a major JetPack 7 runs only in part (13.0 natively): unknown.
        EXPECT_TRUE(f.message.find("CUDA 13 package set") != std::string::npos ||
                    (std::string_view(jetpack) == "7.0" && f.message.starts_with("unknown: uses CUDA 13.x")))
            << f.message;
      }
    }
    return rules;
  };
  EXPECT_EQ(rules_on("6.2.1"), std::set<std::string>{"jetpack-cuda-range"});  // 12.6 with compat up to 12.9
  EXPECT_EQ(rules_on("5"), std::set<std::string>{"jetpack-cuda-range"});
  // Native CUDA 13.0 and no cuda_compat: a later 13.x does not run, and the SONAME cannot tell which 13.x it is.
  EXPECT_EQ(rules_on("7.0"), std::set<std::string>{"jetpack-cuda-range"});
  options_.jetpack = nullptr;
  EXPECT_EQ(rules_for(prog), std::set<std::string>{});

  // A cuda_* store path says the minor release too: CUDA 12.8 is past JetPack 5's compat (12.2), within 6's.
  fs::path store = root_ / "nix/store/cccccccccccccccccccccccccccccccc-cuda_cudart-12.8.90/lib";
  fs::create_directories(store);
  fs::copy_file(root_ / "pkg/lib/libcudart.so.13", store / "libcudart.so.13");
  fs::path prog12 = root_ / "prog12";
  fs::copy_file(prog, prog12);
  EditRequest r;
  r.runpath = set_runpath_update(store.string());
  ASSERT_TRUE(edit_elf_file(prog12, r));
  options_.jetpack = find_jetpack("5.1.5");
  auto report = check_paths({prog12}, options_);
  ASSERT_EQ(report.findings.size(), 1u) << format_check_text(report, false);
  EXPECT_EQ(report.findings[0].rule_id(), "jetpack-cuda-range");
  EXPECT_NE(report.findings[0].message.find("CUDA 12.8 package set"), std::string::npos) << report.findings[0].message;
  options_.jetpack = find_jetpack("6.2.1");
  EXPECT_TRUE(check_paths({prog12}, options_).findings.empty());

  auto cli =
      test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", "--jetpack", "6", "--disable", "stubs-entry",
                         "--disable", "driver-dir-missing", "--disable", "runtime-stub", prog.string()});
  EXPECT_EQ(cli.exit_code, 1) << cli.output;
  EXPECT_NE(cli.output.find("jetpack-cuda-range"), std::string::npos) << cli.output;
  auto unknown = test::run_command({RUNPATCH_CLI, "check", "--jetpack", "4.6", prog.string()}, true);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("JetPack 5.1.5 (L4T R35.6.2), JetPack 6.2.1 (L4T R36.4.4), JetPack 7.0 (L4T R38.2.1)"),
            std::string::npos)
      << unknown.output;
  // A release between rows is judged by its line's row, and the run says so.
  auto between =
      test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", "--jetpack", "R36.3.0", "--disable",
                         "stubs-entry", "--disable", "driver-dir-missing", "--disable", "runtime-stub", prog.string()},
                        true);
  EXPECT_EQ(between.exit_code, cli.exit_code) << between.output;
  EXPECT_NE(between.output.find("note: --jetpack R36.3.0: judged by JetPack 6.2.1 (L4T R36.4.4)"), std::string::npos)
      << between.output;
}

// jetpack-cuda-range reads the minor release where the files say it (a
// cuda-X.Y directory, the versioned libcudart file, a store path whatever its
// hash length); libcudart's SONAME alone names only the major, which is
// "unknown" when the JetPack runs only part of that major — never a pass.
// The host's fixtures and the aarch64 ones (a Jetson package checked on the x86 builder).
TEST_F(Check, JetpackRangeReadsTheMinorReleaseOrSaysUnknown) {
  options_.disabled = {CheckRule::UnusedEntry, CheckRule::StubsEntry, CheckRule::DriverDirMissing,
                       CheckRule::RuntimeStub};
  for (const auto& arch : test::fixture_arches()) {
    if (arch.name != host_.name && arch.name != "aarch64") continue;
    SCOPED_TRACE(arch.name);
    jetpack_range_cases(arch.dir, root_ / arch.name);
  }
}

void Check::jetpack_range_cases(const fs::path& fixtures, const fs::path& root) {
  fs::create_directories(root);
  fs::copy(fixtures / "cuda-pkg", root / "pkg", fs::copy_options::recursive);
  fs::path cudart13 = root / "pkg/lib/libcudart.so.13";
  const std::string patchelf = test::runpatch_patchelf_path();
  // A CUDA 12 runtime (SONAME libcudart.so.12) in `dir` under `file_name`, and a program using it from there.
  auto cuda12 = [&](const fs::path& dir, const std::string& file_name) {
    fs::create_directories(dir);
    fs::copy_file(cudart13, dir / file_name, fs::copy_options::overwrite_existing);
    EXPECT_EQ(test::run_command({patchelf, "--set-soname", "libcudart.so.12", (dir / file_name).string()}).exit_code,
              0);
    if (file_name != "libcudart.so.12") fs::create_symlink(file_name, dir / "libcudart.so.12");
    fs::path prog = dir / "prog";
    fs::copy_file(root / "pkg/bin/cuda-prog", prog);
    auto r = test::run_command({patchelf, "--replace-needed", "libcudart.so.13", "libcudart.so.12", "--set-rpath",
                                dir.string(), prog.string()},
                               true);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return prog;
  };
  auto range_findings = [&](const fs::path& prog, const char* jetpack) {
    options_.jetpack = find_jetpack(jetpack);
    std::vector<std::string> messages;
    for (const auto& f : check_paths({prog}, options_).findings)
      if (f.rule_id() == "jetpack-cuda-range") messages.push_back(f.message);
    return messages;
  };
  // SONAME only: JetPack 5.1.5 runs CUDA 12 up to 12.2, so "12" cannot pass.
  fs::path plain = cuda12(root / "plain", "libcudart.so.12");
  auto unknown = range_findings(plain, "5.1.5");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_TRUE(unknown[0].starts_with("unknown: uses CUDA 12.x")) << unknown[0];
  // A cuda-12.6 directory says 12.6: past JetPack 5.1.5, within 6.2.1.
  fs::path toolkit = cuda12(root / "usr/local/cuda-12.6/lib", "libcudart.so.12");
  auto outside = range_findings(toolkit, "5.1.5");
  ASSERT_EQ(outside.size(), 1u);
  EXPECT_NE(outside[0].find("CUDA 12.6 package set"), std::string::npos) << outside[0];
  EXPECT_TRUE(range_findings(toolkit, "6.2.1").empty());
  // The versioned file the SONAME link names says 12.2: within JetPack 5.1.5.
  fs::path versioned = cuda12(root / "versioned", "libcudart.so.12.2.140");
  EXPECT_TRUE(range_findings(versioned, "5.1.5").empty());
  // A store path with a short hash still names its package set: 12.8.
  fs::path store = cuda12(root / "nix/store/abc-cuda_cudart-12.8.90/lib", "libcudart.so.12");
  auto stored = range_findings(store, "5.1.5");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_NE(stored[0].find("CUDA 12.8 package set"), std::string::npos) << stored[0];
}

}  // namespace
}  // namespace runpatch
