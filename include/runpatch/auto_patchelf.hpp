// A drop-in for Nixpkgs' auto-patchelf: resolve every DT_NEEDED (and
// .note.dlopen soname) of the files being patched against the package's own
// outputs first, then --libs; set the interpreter of executables; write the
// runpath through the policy engine (so driver/compat layers land in the same
// write); report what could not be satisfied.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runpatch/policy.hpp"

namespace runpatch {

struct AutoPatchelfOptions {
  std::vector<std::filesystem::path> paths;   // to patch, and indexed first (all outputs)
  std::vector<std::filesystem::path> libs;    // searched after them (not recursively)
  std::vector<std::string> runtime_dependencies;  // first in executables' runpaths
  std::vector<std::string> append_rpaths;
  std::vector<std::string> ignore_missing;    // globs; "*" ignores every missing library
  bool recurse = true;          // false: only the top level of each --paths directory
  bool keep_libc = false;
  bool ignore_existing = false;  // do not follow existing runpaths of indexed libraries
  bool origin = false;           // a dependency in the file's own directory becomes $ORIGIN
  std::optional<std::string> interpreter;  // set on dynamic executables; its machine is the target
  std::optional<std::string> libc_dir;     // libraries found here are not added (unless keep_libc)
  RunpathPolicy layers;          // compat/driver layers applied in the same write
  EditRequest extra;             // further edits (--extra-args), in the same write
  bool dry_run = false;
  bool in_place = false;  // EditOptions::in_place
  unsigned threads = 0;
};

struct AutoPatchedDependency {
  std::string name;
  std::optional<std::string> found_dir;
  bool optional = false;   // a dlopen soname whose priority is not "required"
};

struct AutoPatchedFile {
  std::string path;
  std::string skip_reason;  // non-empty: skipped, with the message to print
  std::vector<AutoPatchedDependency> dependencies;
  bool set_interpreter = false;
  std::optional<std::string> runpath;  // what was (or would be) written
  std::optional<Error> error;
  std::vector<std::string> warnings;  // from the edit, e.g. why no resolution cache was written
};

struct MissingDependency {
  std::string name, wanted_by;
  bool ignored;
};

struct AutoPatchelfResult {
  std::vector<AutoPatchedFile> files;  // in path order
  std::vector<MissingDependency> missing;
  bool failed() const;
};

AutoPatchelfResult auto_patchelf(const AutoPatchelfOptions& options);

}  // namespace runpatch
