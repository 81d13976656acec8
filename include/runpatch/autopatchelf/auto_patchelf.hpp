// A drop-in for Nixpkgs' auto-patchelf.py (docs/policies.md): index the
// libraries under --paths, then --libs, each followed by the runpaths of the
// libraries it indexed; match each DT_NEEDED (and each .note.dlopen entry, by
// any of its sonames) by file name; set the interpreter of executables and the
// runpath of every file that needs one; report what could not be satisfied.
// Results carry everything the script prints, in its order.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runpatch/editing/edit_options.hpp"
#include "runpatch/editing/edit_request.hpp"
#include "runpatch/policy/policy.hpp"

namespace runpatch {

// What one patchelf process printed: stdout, then stderr (without "patchelf: ").
struct PatchelfRunOutput {
  std::string printed, diagnostics;
};
// Runs patchelf with these words (argv without argv[0]).
using PatchelfRunner = std::function<Expected<PatchelfRunOutput>(const std::vector<std::string>& words)>;

struct AutoPatchelfOptions {
  std::vector<std::filesystem::path> paths;                // to patch, and indexed first (all outputs)
  std::vector<std::filesystem::path> libs;                 // searched after them (not recursively)
  std::vector<std::pair<bool, std::string>> search_paths;  // (recursive, dir): after --libs, in order
  std::vector<std::string> runtime_dependencies;           // first in executables' runpaths
  std::vector<std::string> append_rpaths;
  std::vector<std::string> ignore_missing;  // fnmatch globs on the missing library's file name
  bool recurse = true;                      // false: only the top level of each --paths directory
  bool keep_libc = false;                   // libc's libraries are searched in the index too (and recorded)
  bool ignore_existing = false;             // the script's --ignore-existing: do not index --paths at all
  bool origin = false;                      // a dependency in the file's own directory becomes $ORIGIN
  std::optional<std::string> interpreter;   // set on dynamic executables; its machine is the target
  std::optional<std::string> libc_dir;      // orig-libc + /lib: consulted before the index
  RunpathPolicy layers;  // compat/driver layers applied in the same write (none: the script's runpath)
  EditRequest extra;     // further edits, header fields included, in the same write
  // The script's --extra-args: it runs `patchelf --set-interpreter I FILE FLAGS...`
  // and `patchelf --set-rpath R FILE FLAGS...`, so each flag acts once per run,
  // in patchelf's precedence (a later --set-interpreter wins, --remove-rpath
  // beats --set-rpath, --output writes elsewhere from the unedited file,
  // --version edits nothing). With flags, each run goes through run_patchelf
  // instead of one combined write; `extra` then adds only its resolution cache.
  std::vector<std::string> patchelf_flags;
  PatchelfRunner run_patchelf;
  EditOptions edit;  // how each file is written (dry_run, in_place, durability); its group is the run's
  unsigned threads = 0;
};

struct AutoPatchedDependency {
  std::string name;                      // as printed: "libfoo.so.1", or "any(a, b)" when none was found
  std::optional<std::string> found_dir;  // where the index found it (printed "-> found: DIR")
  bool satisfied = false;                // found: in the index, in libc, or as an existing absolute path
  bool printed = true;                   // libc and absolute dependencies print nothing
};

struct AutoPatchedFile {
  std::string path;
  std::string skip_reason;          // non-empty: skipped, with the message to print
  std::optional<Error> unreadable;  // not a readable ELF file: skipped without a message, as the script does
  bool set_interpreter = false;
  std::vector<AutoPatchedDependency> dependencies;
  std::optional<std::string> runpath;  // what was (or would be) written
  std::optional<Error> error;          // the edit failed
  // What the patchelf runs printed (only with patchelf_flags): the set-interpreter run, the set-rpath run.
  std::optional<PatchelfRunOutput> interpreter_run, runpath_run;
  std::vector<std::string> warnings;  // from the edit, e.g. why no resolution cache was written
};

struct MissingDependency {
  std::string name, wanted_by;
  bool ignored;
};

struct AutoPatchelfResult {
  std::vector<std::string> index_messages;  // printed while indexing (separate debug objects)
  std::vector<AutoPatchedFile> files;       // in the script's order (a path given twice: twice)
  std::vector<MissingDependency> missing;
  bool failed() const;
};

AutoPatchelfResult auto_patchelf(const AutoPatchelfOptions& options);

// What the Nix bintools wrapper at bintools ($NIX_BINTOOLS) says, read as the
// script reads it: nix-support/dynamic-linker becomes the interpreter unless
// one was given; nix-support/orig-libc + "/lib" the libc directory. A file
// that is missing or empty leaves its option as it was.
void use_nix_bintools(AutoPatchelfOptions& options, const std::filesystem::path& bintools);
// The same for the wrapper $NIX_BINTOOLS names (the hook's environment).
// Without it (no Nix, --interpreter given), libc's directory is the one that
// holds libc.so.6 beside the interpreter (or beside the file it links to), so
// libc.so.6 is satisfied as the script's orig-libc satisfies it.
void use_nix_bintools(AutoPatchelfOptions& options);

// How Python's pathlib writes a path (PurePosixPath(text).as_posix()): the
// script prints and compares paths in this form.
std::string python_path_text(const std::string& text);

}  // namespace runpatch
