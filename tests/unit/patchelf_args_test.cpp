// The patchelf option parser on its own, as `auto-patchelf --extra-args` calls
// it on Nixpkgs' patchelfFlags (words without file names).
#include <gtest/gtest.h>

#include <fstream>

#include "fixtures.hpp"
#include "patchelf_args.hpp"

namespace runpatch::cli {
namespace {

TEST(PatchelfArgs, PatchelfFlagsWithoutFiles) {
  auto parsed = parse_patchelf_arguments({"--no-clobber-old-sections", "--no-sort", "--no-default-lib", "--set-os-abi",
                                          "gnu", "--clear-symbol-version", "memcpy", "--add-debug-tag",
                                          "--clear-execstack", "--page-size", "65536"});
  ASSERT_TRUE(parsed) << parsed.error().what;
  EXPECT_TRUE(parsed->files.empty());
  EXPECT_TRUE(parsed->no_clobber_old_sections && parsed->no_sort);
  EXPECT_EQ(parsed->page_size, 65536u);
  EXPECT_TRUE(patchelf_request(*parsed).empty());
  HeaderEditRequest headers = patchelf_header_request(*parsed);
  EXPECT_EQ(headers.osabi, 3);
  EXPECT_EQ(headers.exec_stack, false);
  EXPECT_TRUE(headers.no_default_lib && headers.add_debug_tag);
  EXPECT_EQ(headers.clear_symbol_version, std::vector<std::string>{"memcpy"});
}

TEST(PatchelfArgs, ErrorsAreValues) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--bogus"}, "unrecognized option '--bogus'"},
      {{"--set-rpath"}, "missing argument"},
      {{"--replace-needed", "a"}, "missing argument(s)"},
      {{"--set-os-abi", "beos"}, "unrecognized OS ABI"},
      {{"--page-size", "3"}, "invalid argument to --page-size"},
      {{"--set-rpath", "/a", "--add-rpath", "/b"}, "--set-rpath option not allowed with --add-rpath"},
      // patchelf 0.19's refusal, word for word (its test build-resolution-cache).
      {{"--force-rpath", "--build-resolution-cache", "f"},
       "--build-resolution-cache cannot be combined with --force-rpath"},
  };
  for (const auto& c : cases) {
    auto parsed = parse_patchelf_arguments(c.args);
    ASSERT_FALSE(parsed) << c.message;
    EXPECT_EQ(parsed.error().what, c.message);
  }
}

TEST(PatchelfArgs, AtFileValuesAreTheWholeFile) {
  auto dir = test::scratch_dir("patchelf_args_at_file");
  std::ofstream(dir / "value") << "/a:/b\n";
  auto parsed =
      parse_patchelf_arguments({"--set-rpath", "@" + (dir / "value").string(), "--replace-needed", "@x", "@y"});
  ASSERT_TRUE(parsed) << parsed.error().what;
  EXPECT_EQ(parsed->set_rpath, "/a:/b\n");
  // --replace-needed takes its words as they are, as patchelf does.
  EXPECT_EQ(parsed->replace_needed.at(0), std::make_pair(std::string("@x"), std::string("@y")));
  auto missing = parse_patchelf_arguments({"--add-needed", "@" + (dir / "missing").string()});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().what, "getting info about '" + (dir / "missing").string() + "': No such file or directory");
}

}  // namespace
}  // namespace runpatch::cli

#include "exit_codes.hpp"

namespace runpatch::cli {
namespace {

// One rule turns an error into an exit code, whatever the tool: what the
// command line gives exits 2, a problem with the files worked on 1.
TEST(ExitCodeFor, CommandLineInputIsUsageAndTheFilesAreProblems) {
  Error missing = make_error(ErrorCode::SystemCall, "policy.json", "open: No such file or directory");
  EXPECT_EQ(exit_code_for(missing, ErrorSource::CommandLine), kExitUsage);
  EXPECT_EQ(exit_code_for(missing, ErrorSource::WorkedOn), kExitProblem);
  EXPECT_EQ(exit_code_for(make_error(ErrorCode::Malformed, "lib.so", "truncated"), ErrorSource::WorkedOn),
            kExitProblem);
  EXPECT_EQ(exit_code_for(make_error(ErrorCode::Usage, "", "missing filename"), ErrorSource::WorkedOn), kExitUsage);
}

// The shell completions come from the same table: an option completes a value
// exactly when it takes one, and every OS ABI offered is one the parser takes.
TEST(PatchelfArgs, CompletionsFollowTheTable) {
  std::vector<std::string> abis;
  for (const auto& option : patchelf_option_completions()) {
    bool takes_value = option.values != OptionCompletion::Values::None;
    EXPECT_EQ(takes_value, option.completes.kind != Completes::None) << option.names.front();
    size_t words = 0;  // the metavars --help names
    if (option.values == OptionCompletion::Values::One) words = 1;
    if (option.values == OptionCompletion::Values::Two) words = 2;
    EXPECT_EQ(option.metavars.size(), words) << option.names.front();
    if (option.names.front() == "--set-os-abi" && option.completes.choices) abis = option.completes.choices();
  }
  EXPECT_GE(abis.size(), 12u);
  for (const auto& abi : abis) {
    auto parsed = parse_patchelf_arguments({"--set-os-abi", abi, "f"});
    EXPECT_TRUE(parsed) << abi;
  }
}

}  // namespace
}  // namespace runpatch::cli
