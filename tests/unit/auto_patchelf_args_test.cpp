// auto-patchelf's command line against what Python's argparse makes of the
// same words for auto-patchelf.py's parser (nargs='*' options, --extra-args
// nargs='...', --paths required), one row per case.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <sstream>

#include "auto_patchelf_args.hpp"

namespace runpatch::cli {
namespace {

std::string list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + (v[i].empty() ? "''" : v[i]);
  return out + "]";
}

// Only what differs from the defaults, so each expectation reads as a diff.
std::string describe(const AutoPatchelfArgs& a) {
  std::ostringstream out;
  out << "paths=" << list(a.paths);
  if (!a.libs.empty()) out << " libs=" << list(a.libs);
  if (!a.runtime_dependencies.empty()) out << " rt=" << list(a.runtime_dependencies);
  if (!a.append_rpaths.empty()) out << " append=" << list(a.append_rpaths);
  if (!a.ignore_missing.empty()) out << " ignore=" << list(a.ignore_missing);
  if (!a.extra_args.empty()) out << " extra=" << list(a.extra_args);
  if (!a.recursive) out << " no-recurse";
  if (a.keep_libc) out << " keep-libc";
  if (!a.add_existing) out << " ignore-existing";
  for (const auto& [mode, path] : a.search_paths) out << " search=" << mode << ":" << path;
  if (a.interpreter) out << " interpreter=" << *a.interpreter;
  if (!a.in_place) out << " atomic";
  if (a.help) out << " help";
  return out.str();
}

struct Row {
  std::vector<std::string> argv;
  std::string expected;  // describe() of the result, or "error: " + argparse's message
};

const Row kRows[] = {
    // The hook's line with every array empty: no option takes the next option's name.
    {{"--ignore-missing", "--paths", "/out", "/lib", "--libs", "--runtime-dependencies", "--append-rpaths",
      "--extra-args"},
     "paths=[/out,/lib]"},
    {{"--ignore-missing", "a.so", "b*", "--paths", "/out", "--libs", "/l1", "/l2", "--runtime-dependencies", "/rt/lib",
      "--append-rpaths", "/ap", "--extra-args", "--force-rpath"},
     "paths=[/out] libs=[/l1,/l2] rt=[/rt/lib] append=[/ap] ignore=[a.so,b*] extra=[--force-rpath]"},
    {{"--no-recurse", "--ignore-missing", "--paths", "/out"}, "paths=[/out] no-recurse"},
    // A bare --ignore-missing ignores nothing.
    {{"--paths", "/out", "--ignore-missing"}, "paths=[/out]"},
    // Empty --paths is accepted by argparse (the script then stops).
    {{"--paths", "--libs", "/l"}, "paths=[] libs=[/l]"},
    {{"--paths"}, "paths=[]"},
    // A repeated option replaces the earlier one.
    {{"--paths", "/a", "--libs", "a", "--libs", "b", "--paths", "/b"}, "paths=[/b] libs=[b]"},
    {{"--ignore-missing", "x", "--paths", "/o", "--append-rpaths", "--ignore-missing=libQt6Pdf.so.6", "--extra-args"},
     "paths=[/o] ignore=[libQt6Pdf.so.6]"},
    {{"--paths", "/o", "--ignore-missing", "a", "--ignore-missing"}, "paths=[/o]"},
    // --opt=value gives exactly one value; the next words are not taken.
    {{"--paths=/o", "--libs=/l"}, "paths=[/o] libs=[/l]"},
    {{"--paths=/o", "/p"}, "error: unrecognized arguments: /p"},
    // Writing and removing the resolution-cache note exclude each other, in argparse's words (as runpatch set refuses
    // it).
    {{"--paths", "/o", "--ldcache", "--remove-ldcache"},
     "error: argument --remove-ldcache: not allowed with argument --ldcache"},
    {{"--remove-ldcache", "--paths", "/o", "--ldcache"},
     "error: argument --ldcache: not allowed with argument --remove-ldcache"},
    {{"--paths", "/o", "--ldcache", "--ldcache"}, "paths=[/o]"},
    {{"--paths=", "--libs"}, "paths=['']"},
    // Unambiguous prefixes.
    {{"--pa", "/o", "--ignore-miss", "x", "--li", "/l", "--k", "--ignore-e", "--no"},
     "paths=[/o] libs=[/l] ignore=[x] no-recurse keep-libc ignore-existing"},
    {{"--paths", "/o", "--ru", "/rt", "--ap", "/ap"}, "paths=[/o] rt=[/rt] append=[/ap]"},
    {{"--paths", "/o", "--ext", "a", "b"}, "paths=[/o] extra=[a,b]"},
    {{"--paths", "/o", "--ignore-miss=x"}, "paths=[/o] ignore=[x]"},
    // Among the script's own options first: runpatch's additions (--interpreter,
    // --in-place, --atomic, --ldcache, --remove-ldcache) never make them ambiguous.
    {{"--paths", "/o", "--i", "x"}, "error: ambiguous option: --i could match --ignore-missing, --ignore-existing"},
    {{"--paths", "/o", "--a", "/ap", "--l", "/l", "--r", "/rt"}, "paths=[/o] libs=[/l] rt=[/rt] append=[/ap]"},
    // A prefix of none of the script's options is one of runpatch's.
    {{"--paths", "/o", "--at"}, "paths=[/o] atomic"},
    {{"--paths", "/o", "--ignore", "x"},
     "error: ambiguous option: --ignore could match --ignore-missing, "
     "--ignore-existing"},
    {{"--paths", "/o", "--ignore=x"},
     "error: ambiguous option: --ignore=x could match --ignore-missing, "
     "--ignore-existing"},
    // --extra-args takes the rest of the line, options included.
    {{"--paths", "/o", "--extra-args", "--paths", "/x", "--set-rpath", "/r"},
     "paths=[/o] extra=[--paths,/x,--set-rpath,/r]"},
    {{"--paths", "/o", "--extra-args", "a", "--", "b"}, "error: unrecognized arguments: -- b"},
    {{"--extra-args=--force-rpath", "--paths", "/o"}, "paths=[/o] extra=[--force-rpath]"},
    // Usage errors.
    {{}, "error: the following arguments are required: --paths"},
    {{"--libs", "/l"}, "error: the following arguments are required: --paths"},
    {{"--paths", "/o", "--bogus"}, "error: unrecognized arguments: --bogus"},
    {{"--paths", "/o", "-x", "y"}, "error: unrecognized arguments: -x y"},
    {{"stray", "--paths", "/o"}, "error: unrecognized arguments: stray"},
    {{"--paths", "/o", "--keep-libc=yes"}, "error: argument --keep-libc: ignored explicit argument 'yes'"},
    {{"--paths", "/o", "--interpreter"}, "error: argument --interpreter: expected one argument"},
    {{"--paths", "/o", "--search-path", "recursive"}, "error: argument --search-path: expected 2 arguments"},
    {{"--paths", "/o", "--search-path", "deep", "/x"},
     "error: argument --search-path: invalid mode: 'deep' (choose from 'recursive', 'shallow')"},
    {{"--paths", "/o", "--search-path", "shallow", ""},
     "error: argument --search-path: empty PATH (it would search the working directory)"},
    {{"--paths", "/o", "--", "/p"}, "error: unrecognized arguments: -- /p"},
    // Words that look like negative numbers or contain spaces are values.
    {{"--paths", "/o", "-1", "--libs", "-x y"}, "paths=[/o,-1] libs=[-x y]"},
    // runpatch's additions.
    {{"--paths", "/o", "--search-path", "recursive", "/a", "--search-path", "shallow", "/b", "--interpreter", "/ld"},
     "paths=[/o] search=recursive:/a search=shallow:/b interpreter=/ld"},
    {{"--paths", "/o", "--atomic"}, "paths=[/o] atomic"},
    // The newer hook's layout: the pairs between --libs' values and --runtime-dependencies.
    {{"--ignore-missing", "--paths", "/o", "--libs", "/l", "--search-path", "shallow", "/s", "--runtime-dependencies",
      "--append-rpaths", "--extra-args"},
     "paths=[/o] libs=[/l] search=shallow:/s"},
    // -h wins over a missing --paths, but not over an earlier error.
    {{"--ignore-missing", "-h"}, "paths=[] help"},
    {{"--paths", "/o", "--keep-libc=1", "--help"}, "error: argument --keep-libc: ignored explicit argument '1'"},
};

TEST(AutoPatchelfArgs, ParsesAsArgparse) {
  for (const auto& row : kRows) {
    auto parsed = parse_auto_patchelf_args(row.argv);
    std::string actual = parsed.args ? describe(*parsed.args) : "error: " + parsed.error;
    EXPECT_EQ(actual, row.expected) << "argv: " << list(row.argv);
  }
}

TEST(AutoPatchelfArgs, DumpIsPprintOfVars) {
  AutoPatchelfArgs a;
  a.paths = {"/o"};
  EXPECT_EQ(auto_patchelf_args_dump(a),
            "{'add_existing': True,\n"
            " 'append_rpaths': [],\n"
            " 'extra_args': [],\n"
            " 'ignore_missing': [],\n"
            " 'keep_libc': False,\n"
            " 'libs': [],\n"
            " 'paths': [PosixPath('/o')],\n"
            " 'recursive': True,\n"
            " 'runtime_dependencies': []}\n");
  a.paths = {"/nix/store/0123456789abcdfghijklmnpqrsvwxyz-cuda_cudart-13.0.48//", "./lib/", "it's"};
  a.ignore_missing = {"libcuda.so.1"};
  a.extra_args = {"--force-rpath"};
  EXPECT_EQ(auto_patchelf_args_dump(a),
            "{'add_existing': True,\n"
            " 'append_rpaths': [],\n"
            " 'extra_args': ['--force-rpath'],\n"
            " 'ignore_missing': ['libcuda.so.1'],\n"
            " 'keep_libc': False,\n"
            " 'libs': [],\n"
            " 'paths': [PosixPath('/nix/store/0123456789abcdfghijklmnpqrsvwxyz-cuda_cudart-13.0.48'),\n"
            "           PosixPath('lib'),\n"
            "           PosixPath(\"it's\")],\n"
            " 'recursive': True,\n"
            " 'runtime_dependencies': []}\n");
  a.paths = {"/o"};
  a.extra_args = {};
  a.ignore_missing = {"libfoo.so.1 libbar.so.2 libbaz.so.3 libqux.so.4 libquux.so.5 libcorge.so.6 libgrault.so.7"};
  EXPECT_EQ(auto_patchelf_args_dump(a),
            "{'add_existing': True,\n"
            " 'append_rpaths': [],\n"
            " 'extra_args': [],\n"
            " 'ignore_missing': ['libfoo.so.1 libbar.so.2 libbaz.so.3 libqux.so.4 '\n"
            "                    'libquux.so.5 libcorge.so.6 libgrault.so.7'],\n"
            " 'keep_libc': False,\n"
            " 'libs': [],\n"
            " 'paths': [PosixPath('/o')],\n"
            " 'recursive': True,\n"
            " 'runtime_dependencies': []}\n");
  // pprint counts characters, not bytes; a byte that is not UTF-8 is its surrogate escape (Python 3.11's output).
  std::string e8;
  for (int i = 0; i < 8; ++i) e8 += "\xc3\xa9";  // é
  a.paths = {"/nix/" + e8 + "-a/lib", "/nix/" + e8 + "-b/lib"};
  a.ignore_missing = {
      "a\xff"
      "b"};
  EXPECT_EQ(auto_patchelf_args_dump(a),
            "{'add_existing': True,\n"
            " 'append_rpaths': [],\n"
            " 'extra_args': [],\n"
            " 'ignore_missing': ['a\\udcffb'],\n"
            " 'keep_libc': False,\n"
            " 'libs': [],\n"
            " 'paths': [PosixPath('/nix/" +
                e8 + "-a/lib'), PosixPath('/nix/" + e8 +
                "-b/lib')],\n"
                " 'recursive': True,\n"
                " 'runtime_dependencies': []}\n");
}

// --help's option list and usage line come from the option table: both name
// the same options, and each is one the parser takes.
TEST(AutoPatchelfArgs, UsageAndHelpNameTheSameOptionsTheParserTakes) {
  auto long_names = [](const std::string& text) {
    std::set<std::string> names;
    for (size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at + 2)) {
      size_t end = at + 2;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-')) ++end;
      names.insert(text.substr(at, end - at));
    }
    return names;
  };
  std::string help = auto_patchelf_help(), usage = auto_patchelf_usage();
  std::string options = help.substr(help.find("options:"));
  auto listed = long_names(options);
  auto in_usage = long_names(usage);
  // argparse's usage names an option by its first name: -h, -v.
  for (const char* shown_short : {"--help", "--verbose"}) in_usage.insert(shown_short);
  EXPECT_EQ(in_usage, listed);
  EXPECT_NE(usage.find("[-h]"), std::string::npos);
  EXPECT_NE(usage.find("[-v]"), std::string::npos);
  EXPECT_GE(listed.size(), 20u);
  for (const auto& name : listed) {
    if (name == "--libs" || name == "--no-recurse" || name == "--paths") continue;  // named in other options' help
    auto parsed = parse_auto_patchelf_args({"--paths", "/o", name, "/x", "y"});
    EXPECT_EQ(parsed.error.find("unrecognized arguments: " + name), std::string::npos) << name << ": " << parsed.error;
  }
}

// The usage line wraps as argparse's HelpFormatter does at 80 columns (the
// text Python's argparse prints for these options with COLUMNS=82): a part goes
// to the next line, under the first part, only when it would pass the width;
// --paths, required, is the one part without brackets.
TEST(AutoPatchelfArgs, UsageWrapsAsArgparseDoes) {
  EXPECT_EQ(auto_patchelf_usage(),
            "usage: auto-patchelf [-h] [--ignore-missing [IGNORE_MISSING ...]] [--no-recurse]\n"
            "                     --paths [PATHS ...] [--libs [LIBS ...]]\n"
            "                     [--runtime-dependencies [RUNTIME_DEPENDENCIES ...]]\n"
            "                     [--append-rpaths [APPEND_RPATHS ...]] [--keep-libc]\n"
            "                     [--ignore-existing] [--search-path MODE PATH]\n"
            "                     [--interpreter INTERPRETER] [--origin] [--dry-run]\n"
            "                     [--atomic] [--in-place] [--ldcache] [--remove-ldcache]\n"
            "                     [--driver-dir DIR] [--libcuda DIR] [--forbid PREFIX] [-v]\n"
            "                     [--extra-args ...]\n");
  std::istringstream lines(auto_patchelf_usage());
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 80u) << line;
  EXPECT_EQ(parse_auto_patchelf_args({"--libs", "/l"}).error, "the following arguments are required: --paths");
}

// The shell completions come from the same table: a value is completed
// exactly where one is taken, and each --search-path MODE offered is accepted.
TEST(AutoPatchelfArgs, CompletionsFollowTheTable) {
  std::vector<std::string> modes;
  for (const auto& option : auto_patchelf_option_completions()) {
    EXPECT_EQ(option.values != OptionCompletion::Values::None, option.completes.kind != Completes::None)
        << option.names.back();
    EXPECT_EQ(option.values == OptionCompletion::Values::Rest, option.completes.kind == Completes::PatchelfArguments)
        << option.names.back();
    if (option.names.back() == "--search-path" && option.completes.choices) modes = option.completes.choices();
  }
  EXPECT_EQ(modes, (std::vector<std::string>{"recursive", "shallow"}));
  for (const auto& mode : modes) {
    auto parsed = parse_auto_patchelf_args({"--paths", "/o", "--search-path", mode, "/x"});
    EXPECT_TRUE(parsed.args) << mode << ": " << parsed.error;
  }
}

}  // namespace
}  // namespace runpatch::cli
