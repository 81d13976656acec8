// What the tools used to decide themselves and the library now decides: rule
// ids and JetPack releases named on the command line, the build directories
// no runpath may point into, and what a Nix bintools wrapper says.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "runpatch/autopatchelf/auto_patchelf.hpp"
#include "runpatch/checking/check.hpp"
#include "fixtures.hpp"

namespace runpatch {
namespace {

TEST(CheckOptionsFromNames, DisableTurnsOffTheNamedRules) {
  CheckOptions options;
  ASSERT_TRUE(disable_check_rules(options, {"unused-entry", "stubs-entry"}));
  EXPECT_EQ(options.disabled, (std::set<CheckRule>{CheckRule::UnusedEntry, CheckRule::StubsEntry}));
}

TEST(CheckOptionsFromNames, UnknownRuleIsAnErrorNamingIt) {
  CheckOptions options;
  Status status = disable_check_rules(options, {"unused-entry", "no-such-rule"});
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message(), "unknown rule 'no-such-rule'");
}

TEST(CheckOptionsFromNames, EveryRuleIdCanBeDisabled) {
  for (const RuleInfo& rule : check_rules()) {
    CheckOptions options;
    ASSERT_TRUE(disable_check_rules(options, {std::string(rule.id)})) << rule.id;
    EXPECT_EQ(options.disabled, std::set<CheckRule>{rule.rule}) << rule.id;
  }
}

TEST(CheckOptionsFromNames, JetpackByReleaseOrPrefix) {
  CheckOptions options;
  auto exact = target_jetpack(options, "6.2.1");
  ASSERT_TRUE(exact);
  EXPECT_EQ(*exact, "") << "the row is that release: no note";
  ASSERT_NE(options.jetpack, nullptr);
  EXPECT_EQ(std::string(options.jetpack->jetpack), "6.2.1");
  auto between = target_jetpack(options, "6.2");
  ASSERT_TRUE(between);
  EXPECT_EQ(*between,
            "--jetpack 6.2: judged by JetPack 6.2.1 (L4T R36.4.4), the newest release of its line in runpatch's table");
  auto unknown = target_jetpack(options, "99");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().what.find("--jetpack 99: not a release of a JetPack line runpatch knows (JetPack 5.1.5 "
                                      "(L4T R35.6.2)"),
            std::string::npos)
      << unknown.error().what;
}

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(BuildDirectoryPrefixes, TmpdirAndBuildTopEndInSlashTmpItselfIsNot) {
  ScopedEnv tmpdir("TMPDIR", "/build");
  ScopedEnv top("NIX_BUILD_TOP", "/build/top/");
  EXPECT_EQ(build_directory_prefixes(), (std::vector<std::string>{"/build/", "/build/top/"}));
  ScopedEnv plain_tmp("TMPDIR", "/tmp");
  ScopedEnv unset("NIX_BUILD_TOP", nullptr);
  EXPECT_TRUE(build_directory_prefixes().empty());
  ScopedEnv empty("TMPDIR", "");
  EXPECT_TRUE(build_directory_prefixes().empty());
}

TEST(NixBintools, InterpreterAndLibcFromNixSupport) {
  auto dir = test::scratch_dir("nix_bintools");
  std::filesystem::create_directories(dir / "nix-support");
  std::ofstream(dir / "nix-support/dynamic-linker") << "/nix/store/x-glibc/lib/ld-linux-x86-64.so.2  \n";
  std::ofstream(dir / "nix-support/orig-libc") << "/nix/store/x-glibc\n";
  AutoPatchelfOptions options;
  use_nix_bintools(options, dir);
  EXPECT_EQ(options.interpreter, "/nix/store/x-glibc/lib/ld-linux-x86-64.so.2");
  EXPECT_EQ(options.libc_dir, "/nix/store/x-glibc/lib");

  AutoPatchelfOptions given;
  given.interpreter = "/lib/ld.so";  // --interpreter wins over the wrapper
  use_nix_bintools(given, dir);
  EXPECT_EQ(given.interpreter, "/lib/ld.so");
}

TEST(NixBintools, TheWrapperNixBintoolsNames) {
  auto dir = test::scratch_dir("nix_bintools_env");
  std::filesystem::create_directories(dir / "nix-support");
  std::ofstream(dir / "nix-support/dynamic-linker") << "/lib/ld-from-env.so\n";
  ScopedEnv bintools("NIX_BINTOOLS", dir.c_str());
  AutoPatchelfOptions options;
  use_nix_bintools(options);
  EXPECT_EQ(options.interpreter, "/lib/ld-from-env.so");
  ScopedEnv unset("NIX_BINTOOLS", nullptr);
  AutoPatchelfOptions without;
  use_nix_bintools(without);
  EXPECT_FALSE(without.interpreter);
}

TEST(NixBintools, MissingFilesLeaveOptionsAlone) {
  AutoPatchelfOptions options;
  use_nix_bintools(options, test::scratch_dir("nix_bintools_empty"));
  EXPECT_FALSE(options.interpreter);
  EXPECT_FALSE(options.libc_dir);
}

}  // namespace
}  // namespace runpatch
