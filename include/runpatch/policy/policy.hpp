// Ordered runpath policies: the final runpath of a file is built from layers
//   cuda_compat dirs → driver dirs → resolved dependency dirs → kept entries → appended entries,
// deduplicated (first occurrence wins), filtered, idempotent, and independent
// of the order in which the layers were requested: a compat or driver
// directory already in the runpath is recognised and put back in its layer.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runpatch/cuda/cuda.hpp"  // kDefaultDriverDir, looks_like_compat_dir
#include "runpatch/editing/edit_options.hpp"
#include "runpatch/editing/edit_outcome.hpp"
#include "runpatch/editing/edit_request.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

struct RunpathPolicy {
  std::vector<std::string> compat_dirs;  // cuda_compat: ahead of the driver
  bool driver = false;                   // add the driver layer
  std::vector<std::string> driver_dirs = {kDefaultDriverDir};
  std::vector<std::string> resolved_dirs;  // directories that resolve DT_NEEDED (auto-patchelf)
  bool keep_existing = true;               // keep the file's current entries (after the layers)
  std::vector<std::string> append;
  std::vector<std::string> forbidden_prefixes;  // e.g. the build directory, $TMPDIR
  bool drop_stubs = true;                       // never keep a .../stubs directory
  bool keep_origin = true;                      // keep $ORIGIN entries
  bool force_rpath = false;                     // write DT_RPATH instead of DT_RUNPATH

  // Fields of a JSON policy file (docs/policies.md): unknown keys are errors.
  static Expected<RunpathPolicy> from_json_file(const std::filesystem::path& path);
  static Expected<RunpathPolicy> from_json_text(const std::string& text, const std::string& origin);
};

// A cuda_compat directory (`--libcuda`) a runpath can hold: absolute (or
// $ORIGIN-relative), no unsubstituted @placeholder@, a directory and not
// libcuda.so.1 itself: else an InvalidInput error. A directory that does not
// exist here is accepted (it may exist where the program runs), with the
// words of a warning.
Expected<std::optional<std::string>> validate_compat_dir(const std::string& dir);

// The runpath the policy gives a file whose runpath is now `current`;
// compat_entries: entries of it found to be compat layers by their content
// (compat_entries_by_content), placed with the compat layer wherever they are.
std::string apply_policy(const RunpathPolicy& policy, const std::string& current,
                         const std::set<std::string>& compat_entries = {});

// The entries of the file's runpath that hold a libcuda other than the
// driver's or a stub: cuda_compat wherever it lies (l4t-cuda's cuda_compat/,
// /usr/local/cuda-12.8/compat), which must stay ahead of the driver.
std::set<std::string> compat_entries_by_content(const RunpathPolicy& policy, const ElfInfo& info);

// The policy as an editor request (runpath computed from the file's current one).
EditRequest policy_request(const RunpathPolicy& policy);

}  // namespace runpatch

namespace runpatch {

struct PolicyFileOutcome {
  enum class Status { Edited, Unchanged, SkippedStatic, Failed };
  std::string path;
  Status status = Status::Unchanged;
  std::string old_runpath, new_runpath;
  std::optional<Error> error;         // for Failed
  std::vector<EditWarning> warnings;  // e.g. why no resolution cache was written
};

struct PolicyRun {
  std::vector<PolicyFileOutcome> files;  // sorted by path
  size_t edited = 0, unchanged = 0, skipped_static = 0, failed = 0;
  std::vector<Error> problems;  // unreadable roots
};

// Applies the policy to every dynamically linked ELF file under paths (files
// or trees, each inode once), on all cores; statically linked files are
// skipped and counted.
struct ApplyOptions {
  EditOptions edit;      // how each file is written (dry_run: write nothing); its group is the run's
  unsigned threads = 0;  // 0: one per core
  std::function<void(size_t done, size_t total)> progress;              // called from worker threads as files finish
  ResolutionCacheMode resolution_cache = ResolutionCacheMode::Refresh;  // EditRequest::resolution_cache
};
PolicyRun apply_policy_to_paths(const RunpathPolicy& policy, const std::vector<std::filesystem::path>& paths,
                                const ApplyOptions& options = {});

}  // namespace runpatch
