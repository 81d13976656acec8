// The policy engine: layer order, deduplication, idempotence, order
// independence and filters, on runpath strings.
#include <gtest/gtest.h>

#include <filesystem>

#include "fixtures.hpp"
#include "runpatch/cuda/cuda.hpp"

#include "runpatch/policy/policy.hpp"
#include "runpatch/reading/loader_paths.hpp"

namespace runpatch {
namespace {

const std::string kCompat = "/nix/store/aaa-cuda_compat-12.8/compat";
const std::string kDriver = "/run/opengl-driver/lib";

RunpathPolicy driver_policy() {
  RunpathPolicy p;
  p.driver = true;
  return p;
}
RunpathPolicy compat_policy() {
  RunpathPolicy p;
  p.compat_dirs = {kCompat};
  return p;
}

TEST(RunpathText, EmptyEntriesAreTheCurrentDirectory) {
  for (const char* value : {":", "a::b", ":a", "a:"}) EXPECT_TRUE(has_empty_runpath_entry(value)) << value;
  // An empty runpath is no entry at all: glibc's decompose_rpath searches nothing for it.
  for (const char* value : {"", "a", "a:b", "$ORIGIN/../lib:/run/opengl-driver/lib"})
    EXPECT_FALSE(has_empty_runpath_entry(value)) << value;
}

// $ORIGIN as glibc reads the token: braced or not, ending at a non-word character.
TEST(RunpathText, OriginTokens) {
  for (const char* entry : {"$ORIGIN", "${ORIGIN}/lib", "$ORIGIN/../lib", "/a:$ORIGIN", "x/${ORIGIN}"})
    EXPECT_TRUE(names_origin(entry)) << entry;
  for (const char* entry : {"", "/opt/lib", "$ORIGINAL/lib", "${ORIGIN", "$LIB", "ORIGIN"})
    EXPECT_FALSE(names_origin(entry)) << entry;
  for (const char* entry : {"$ORIGIN", "$ORIGIN/lib", "${ORIGIN}/../lib"})
    EXPECT_TRUE(starts_with_origin(entry)) << entry;
  for (const char* entry : {"", "/x/$ORIGIN", "lib/$ORIGIN", "$ORIGINAL"})
    EXPECT_FALSE(starts_with_origin(entry)) << entry;
}

TEST(Policy, LayersInOrder) {
  RunpathPolicy p;
  p.compat_dirs = {kCompat};
  p.driver = true;
  p.resolved_dirs = {"/nix/store/bbb-cudart/lib"};
  p.append = {"/opt/extra"};
  EXPECT_EQ(apply_policy(p, "$ORIGIN/../lib:/nix/store/ccc-zlib/lib"),
            kCompat + ":" + kDriver + ":/nix/store/bbb-cudart/lib:$ORIGIN/../lib:/nix/store/ccc-zlib/lib:/opt/extra");
}

TEST(Policy, IdempotentAndIndependentOfHookOrder) {
  std::string original = "$ORIGIN/../lib:/nix/store/ccc-zlib/lib";
  std::string driver_then_compat = apply_policy(compat_policy(), apply_policy(driver_policy(), original));
  std::string compat_then_driver = apply_policy(driver_policy(), apply_policy(compat_policy(), original));
  EXPECT_EQ(driver_then_compat, compat_then_driver);
  EXPECT_EQ(driver_then_compat, kCompat + ":" + kDriver + ":" + original);
  EXPECT_EQ(apply_policy(driver_policy(), driver_then_compat), driver_then_compat);
  EXPECT_EQ(apply_policy(compat_policy(), driver_then_compat), driver_then_compat);
}

TEST(Policy, DeduplicatesFirstOccurrenceWins) {
  EXPECT_EQ(apply_policy(driver_policy(), "/a:/b:/a:" + kDriver + ":/b"), kDriver + ":/a:/b");
}

TEST(Policy, EntriesDifferingInSlashesAreOneDirectorySpelledAsTheFileHasIt) {
  // An existing driver entry with a trailing slash is the driver layer, not a second entry.
  EXPECT_EQ(apply_policy(driver_policy(), kDriver + "/:/x"), kDriver + "/:/x");
  EXPECT_EQ(apply_policy(compat_policy(), kDriver + "//:/x"), kCompat + ":" + kDriver + "//:/x");
  // compat --libcuda DIR/ then DIR: one entry, still ahead of the driver.
  RunpathPolicy slash = compat_policy();
  slash.compat_dirs = {kCompat + "/"};
  std::string once = apply_policy(slash, kDriver + ":/x");
  EXPECT_EQ(once, kCompat + "/:" + kDriver + ":/x");
  EXPECT_EQ(apply_policy(compat_policy(), once), once);
  EXPECT_EQ(apply_policy(driver_policy(), once), once);
  // Among the file's own entries too, the first spelling wins; the root stays "/".
  EXPECT_EQ(apply_policy(driver_policy(), "/a//b:/a/b/:/:$ORIGIN/:$ORIGIN"), kDriver + ":/a//b:/:$ORIGIN/");
  RunpathPolicy append = driver_policy();
  append.append = {"/opt/lib/"};
  EXPECT_EQ(apply_policy(append, "/opt/lib"), kDriver + ":/opt/lib");
}

TEST(Policy, FiltersStubsForbiddenPrefixesEmptyAndOrigin) {
  RunpathPolicy p = driver_policy();
  p.forbidden_prefixes = {"/build/"};
  EXPECT_EQ(apply_policy(p, "/build/source/lib::$ORIGIN/stubs:/x/lib/stubs:/y/stubs/z:/keep"), kDriver + ":/keep");
  p.keep_origin = false;
  EXPECT_EQ(apply_policy(p, "$ORIGIN/../lib:${ORIGIN}/x:/keep"), kDriver + ":/keep");
  p.keep_existing = false;
  EXPECT_EQ(apply_policy(p, "/keep"), kDriver);
}

TEST(Policy, CompatDirectoriesAreRecognised) {
  EXPECT_TRUE(looks_like_compat_dir(kCompat));
  EXPECT_TRUE(looks_like_compat_dir("/nix/store/x-cuda-compat-1/compat/"));
  EXPECT_FALSE(looks_like_compat_dir("/usr/lib/compat"));
  EXPECT_FALSE(looks_like_compat_dir("/nix/store/x-cuda_compat-1/lib"));
  // Named .../compat: the compat hook wrote it, whatever this host holds there
  // (nothing, an empty directory); otherwise only a real libcuda makes one.
  auto empty = test::scratch_dir("policy/compat-layer") / "opt/compat";
  std::filesystem::create_directories(empty);
  std::vector<std::string> drivers = {kDriver};
  EXPECT_TRUE(is_compat_layer(empty.string(), empty, drivers));
  EXPECT_TRUE(is_compat_layer("/nowhere/compat", "/nowhere/compat", drivers));
  EXPECT_FALSE(is_compat_layer(empty.parent_path().string(), empty.parent_path(), drivers));
  EXPECT_FALSE(is_compat_layer(kDriver, kDriver, drivers));
}

TEST(PolicyFile, ParsesEveryKeyAndRejectsUnknownOnes) {
  auto p = RunpathPolicy::from_json_text(
      R"({"compat": "/c", "driver": ["/d1", "/d2"], "append": ["/z"], "forbid": ["/build"],
          "keep_existing": false, "drop_stubs": false, "keep_origin": false, "force_rpath": true})",
      "p.json");
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->compat_dirs, std::vector<std::string>{"/c"});
  EXPECT_TRUE(p->driver);
  EXPECT_EQ(p->driver_dirs, (std::vector<std::string>{"/d1", "/d2"}));
  EXPECT_FALSE(p->keep_existing);
  EXPECT_TRUE(p->force_rpath);
  EXPECT_EQ(apply_policy(*p, "/old"), "/c:/d1:/d2:/z");
  auto bad = RunpathPolicy::from_json_text(R"({"drvier": true})", "p.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "p.json: unknown policy key \"drvier\"");
  EXPECT_FALSE(RunpathPolicy::from_json_text("{", "p.json"));
  EXPECT_FALSE(RunpathPolicy::from_json_text(R"({"append": [1]})", "p.json"));
}

TEST(PolicyFile, EntriesAreAbsoluteOrOriginRelativeAndErrorsNameFileKeyAndExpectation) {
  auto ok = RunpathPolicy::from_json_text(
      R"({"append": ["$ORIGIN/../lib", "${ORIGIN}/x", "/opt/lib"], "compat": ["/c"], "driver": "/d"})", "p.json");
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->append, (std::vector<std::string>{"$ORIGIN/../lib", "${ORIGIN}/x", "/opt/lib"}));
  EXPECT_EQ(ok->driver_dirs, std::vector<std::string>{"/d"});
  // Input, then the whole error line.
  const std::pair<const char*, const char*> cases[] = {
      {R"({"driver": "yes"})",
       "p.json: \"driver\": expected an absolute directory or one starting with $ORIGIN, got the string \"yes\""},
      {R"({"driver": 1})", "p.json: \"driver\": expected true, false or absolute directories, got number 1"},
      {R"({"driver": []})", "p.json: \"driver\": expected at least one directory (or false), got an empty list"},
      {R"({"append": ["relative/dir"]})",
       "p.json: \"append\"[0]: expected an absolute directory or one starting with $ORIGIN, got the string "
       "\"relative/dir\""},
      {R"({"append": ["/a", ""]})",
       "p.json: \"append\"[1]: expected an absolute directory or one starting with $ORIGIN, got the string \"\""},
      {R"({"compat": ["/c", 7]})",
       "p.json: \"compat\"[1]: expected an absolute directory or one starting with $ORIGIN, got number 7"},
      {R"({"compat": {"dir": "/c"}})",
       "p.json: \"compat\": expected an absolute directory or one starting with $ORIGIN or a list of them, got "
       "object {\"dir\":\"/c\"}"},
      {R"({"forbid": ["$ORIGIN/x"]})",
       "p.json: \"forbid\"[0]: expected an absolute directory prefix, got the string \"$ORIGIN/x\""},
      {R"({"keep_origin": "no"})", "p.json: \"keep_origin\": expected true or false, got the string \"no\""},
      {R"(["/a"])", "p.json: expected a JSON object, got array [\"/a\"]"},
      {"{\n  \"append\": [\"/a\",]\n}", "p.json: not valid JSON at line 2, column 19"},
  };
  for (const auto& [text, message] : cases) {
    auto p = RunpathPolicy::from_json_text(text, "p.json");
    ASSERT_FALSE(p) << text;
    EXPECT_EQ(p.error().message(), message) << text;
  }
}

}  // namespace
}  // namespace runpatch

namespace runpatch {
namespace {

// One splitter for every list the loader reads: runpaths, LD_LIBRARY_PATH
// (':' or ';') and musl's path file (':' or a newline), empty entries kept.
TEST(LoaderLists, OneSplitterKeepsEmptyEntriesForEachSeparatorSet) {
  using List = std::vector<std::string>;
  EXPECT_EQ(split_list("a::b", ":"), (List{"a", "", "b"}));
  EXPECT_EQ(split_list("", ":"), (List{""}));
  EXPECT_EQ(split_runpath(""), List{});
  EXPECT_EQ(split_runpath(":a"), (List{"", "a"}));
  EXPECT_EQ(split_list("/a;/b:/c", ":;"), (List{"/a", "/b", "/c"}));
  EXPECT_EQ(split_list("/lib\n/usr/lib:/opt\n", ":\n"), (List{"/lib", "/usr/lib", "/opt", ""}));
  EXPECT_EQ(join_runpath(split_runpath("/x::/y:")), "/x::/y:");
}

TEST(LoaderLists, MuslsLoaderIsKnownByItsFileName) {
  EXPECT_TRUE(is_musl_interpreter("/lib/ld-musl-x86_64.so.1"));
  EXPECT_TRUE(is_musl_interpreter("ld-musl-aarch64.so.1"));
  EXPECT_FALSE(is_musl_interpreter("/lib64/ld-linux-x86-64.so.2"));
  EXPECT_FALSE(is_musl_interpreter("/opt/ld-musl-x86_64/ld-linux.so.2"));  // a directory named so is not the loader
}

}  // namespace
}  // namespace runpatch
