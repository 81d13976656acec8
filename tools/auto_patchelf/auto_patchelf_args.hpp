// The command line of Nixpkgs' auto-patchelf.py, parsed the way Python's
// argparse parses it (the hook passes every option, often with no values):
// nargs='*' options stop at the next option-looking word, a repeated option
// replaces the earlier one, unambiguous prefixes of long options are accepted,
// --extra-args takes the rest of the line, and usage errors have argparse's
// wording. Plus runpatch's own options (--interpreter, --search-path, ...).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../common/completion.hpp"

namespace runpatch::cli {

struct AutoPatchelfArgs {
  // The script's options, named as its argparse destinations.
  std::vector<std::string> ignore_missing;
  bool recursive = true;  // --no-recurse
  std::vector<std::string> paths;
  std::vector<std::string> libs, runtime_dependencies, append_rpaths;
  bool keep_libc = false;
  bool add_existing = true;  // --ignore-existing
  std::vector<std::string> extra_args;
  // runpatch's additions.
  std::vector<std::pair<std::string, std::string>> search_paths;  // (MODE, PATH), in order
  std::optional<std::string> interpreter;
  bool origin = false, dry_run = false, in_place = true, verbose = false;
  bool ldcache = false, remove_ldcache = false;
  // The driver and cuda_compat layers in the same write (one pass for the
  // three hooks: hooks/auto-patchelf-cuda-hook.sh), and prefixes they drop.
  std::vector<std::string> driver_dirs, libcuda_dirs, forbid;
  bool help = false;  // -h/--help was seen: print help, exit 0
};

struct AutoPatchelfParse {
  std::optional<AutoPatchelfArgs> args;  // absent on a usage error
  std::string error;                     // argparse's message, e.g. "unrecognized arguments: x"
};

// argv without the program name.
AutoPatchelfParse parse_auto_patchelf_args(const std::vector<std::string>& argv);

std::string auto_patchelf_usage();  // "usage: auto-patchelf ...\n"
std::string auto_patchelf_help();

// Each option as a shell completes it, from the same table as the parser (tools/completions).
std::vector<OptionCompletion> auto_patchelf_option_completions();

// pprint.pprint(vars(args)) as the script prints it (runpatch's own options
// appear only when given, so the hook's command line dumps exactly the same).
std::string auto_patchelf_args_dump(const AutoPatchelfArgs& args);

}  // namespace runpatch::cli
