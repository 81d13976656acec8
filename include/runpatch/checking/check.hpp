// runpatch check: runpath verification for CI and build hooks. Each rule has
// an id and a severity and can be turned off; findings come out in file order.
#pragma once

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/cuda/cuda.hpp"
#include "runpatch/cuda/l4t_versions.hpp"
#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

enum class Severity { Info = 0, Warning = 1, Error = 2 };
inline constexpr Severity kSeverities[] = {Severity::Error, Severity::Warning,
                                           Severity::Info};  // as --fail-on lists them
std::string severity_name(Severity s);
std::optional<Severity> parse_severity(const std::string& name);

// Every rule check knows, in report order (docs/check.md).
enum class CheckRule {
  UnresolvedNeeded,
  DriverLibrary,
  DriverDirMissing,
  CompatAfterDriver,
  StubsEntry,
  ForbiddenPrefix,
  RelativeEntry,
  WorldWritable,
  MissingEntry,
  DuplicateEntry,
  RpathNotRunpath,
  WrongInterpreter,
  ForeignMachine,
  CudaVersionMix,
  ClosureBloat,
  UnusedEntry,
  LdLibraryPathShadowing,
  RuntimeStub,
  StaleLdcache,
  CompatNeedsDriver,
  JetpackCudaRange,
  InterruptedEdit,
  UnreadableFile,
  UnresolvedDlopen,
};

struct RuleInfo {
  CheckRule rule;
  std::string_view id;  // what reports, --disable and docs/check.md call it
  Severity severity;
  std::string_view summary;
};
inline constexpr RuleInfo kCheckRules[] = {
    {CheckRule::UnresolvedNeeded, "unresolved-needed", Severity::Error,
     "a DT_NEEDED library is not found by the loader's search"},
    {CheckRule::DriverLibrary, "driver-library", Severity::Info,
     "needs a library only the NVIDIA driver provides (the toolkit has a stub)"},
    {CheckRule::DriverDirMissing, "driver-dir-missing", Severity::Error,
     "needs or dlopens libcuda.so.1 but the driver directory is not in the runpath"},
    {CheckRule::CompatAfterDriver, "compat-after-driver", Severity::Error,
     "a cuda_compat directory comes after the driver directory"},
    {CheckRule::StubsEntry, "stubs-entry", Severity::Error,
     "a stubs directory is in the runpath: the link-time stub would load at run time"},
    {CheckRule::ForbiddenPrefix, "forbidden-prefix", Severity::Error,
     "a runpath entry points into the build directory or another forbidden prefix"},
    {CheckRule::RelativeEntry, "relative-entry", Severity::Error,
     "an empty or relative runpath entry resolves against the current directory"},
    {CheckRule::WorldWritable, "world-writable", Severity::Error,
     "a runpath directory is writable by everyone: anyone can plant a library"},
    {CheckRule::MissingEntry, "missing-entry", Severity::Warning, "a runpath directory does not exist"},
    {CheckRule::DuplicateEntry, "duplicate-entry", Severity::Warning, "a runpath entry appears more than once"},
    {CheckRule::RpathNotRunpath, "rpath-not-runpath", Severity::Warning,
     "DT_RPATH is used where DT_RUNPATH is expected"},
    {CheckRule::WrongInterpreter, "wrong-interpreter", Severity::Error,
     "an executable's interpreter is not the expected one"},
    {CheckRule::ForeignMachine, "foreign-machine", Severity::Warning,
     "the file's class or machine differs from the rest of the tree"},
    {CheckRule::CudaVersionMix, "cuda-version-mix", Severity::Error,
     "the resolved closure mixes CUDA versions: two SONAME majors of one library, or two CUDA package sets"},
    {CheckRule::ClosureBloat, "closure-bloat", Severity::Warning,
     "a runpath entry points into a -dev/-static/-doc output, the monolithic cudatoolkit or a compiler"},
    {CheckRule::UnusedEntry, "unused-entry", Severity::Info,
     "a runpath entry resolves nothing (what --shrink-rpath would drop) and keeps its store path alive"},
    {CheckRule::LdLibraryPathShadowing, "ld-library-path-shadowing", Severity::Warning,
     "LD_LIBRARY_PATH overrides the library the runpath would load"},
    {CheckRule::RuntimeStub, "runtime-stub", Severity::Error,
     "the toolkit's libcuda stub is resolvable from a runtime runpath entry"},
    {CheckRule::StaleLdcache, "stale-ldcache", Severity::Error,
     "the resolution-cache note (.note.nixos.ldcache) no longer says what the runpath resolves"},
    {CheckRule::CompatNeedsDriver, "compat-needs-driver", Severity::Error,
     "cuda_compat's libcuda cannot reach the driver's libnvrm_* libraries: no driver directory behind the compat "
     "directory, or none in its own runpath"},
    {CheckRule::JetpackCudaRange, "jetpack-cuda-range", Severity::Error,
     "with --jetpack: the package set's CUDA release is outside the JetPack's native CUDA and cuda_compat range"},
    {CheckRule::InterruptedEdit, "interrupted-edit", Severity::Warning,
     "unreferenced bytes past the end: the tail of an edit killed before its commit (the next edit reclaims them)"},
    {CheckRule::UnreadableFile, "unreadable-file", Severity::Error,
     "the file cannot be read (truncated, corrupt, unreadable): no other rule could check it"},
    {CheckRule::UnresolvedDlopen, "unresolved-dlopen", Severity::Warning,
     "a library a .note.dlopen entry names is not found: error if required, warning if recommended, info if "
     "suggested"},
};
static_assert(
    [] {
      for (size_t i = 0; i < std::size(kCheckRules); ++i)
        if (kCheckRules[i].rule != CheckRule(i)) return false;
      return true;
    }(),
    "kCheckRules is indexed by CheckRule");

inline std::span<const RuleInfo> check_rules() { return kCheckRules; }
inline const RuleInfo& rule_info(CheckRule rule) { return kCheckRules[size_t(rule)]; }
// The rule an id names; nullopt for an id no rule has.
std::optional<CheckRule> find_check_rule(std::string_view id);

struct Finding {
  CheckRule rule = CheckRule::UnresolvedNeeded;
  Severity severity = Severity::Error;  // the rule's, or the one an option raised it to
  std::string file;
  std::string message;
  // A library the loader does not find in the file's closure, and the object
  // whose search failed (its loader's path; empty: the file itself).
  std::string library, requester;
  // A finding about a file's tree (a version mix, shadowing, a stub loaded): the libraries it concerns.
  std::vector<std::string> libraries;
  std::string_view rule_id() const { return rule_info(rule).id; }
  bool concerns(std::string_view name) const {
    return library == name || std::find(libraries.begin(), libraries.end(), name) != libraries.end();
  }
};

struct CheckOptions {
  SearchEnvironment env;                        // how dependencies resolve
  std::vector<std::string> forbidden_prefixes;  // e.g. the build dir (build_directory_prefixes)
  std::vector<std::string> driver_dirs = {kDefaultDriverDir};
  // Where the files will run, for driver-dir-missing: in a Nix closure the
  // driver's libcuda is found only through a runpath naming the driver
  // directory; a distribution's install finds it through ld.so.cache. Auto: a
  // file in a Nix store path, or loaded by a Nix glibc, or any file inside a
  // Nix build ($NIX_BUILD_TOP set).
  enum class Closure { Auto, Nix, Host } closure = Closure::Auto;
  std::optional<std::string> interpreter;   // wrong-interpreter: executables must use this one
  bool require_runpath = false;             // rpath-not-runpath becomes an error
  const JetpackRelease* jetpack = nullptr;  // jetpack-cuda-range: the target's row (find_jetpack)
  std::set<CheckRule> disabled;             // rules turned off (disable_check_rules)
  unsigned threads = 0;
  // Called from worker threads as files finish (done, total); may be null.
  std::function<void(size_t, size_t)> progress;
};

// --closure's values: "auto", "nix", "host".
inline constexpr CheckOptions::Closure kClosures[] = {CheckOptions::Closure::Auto, CheckOptions::Closure::Nix,
                                                      CheckOptions::Closure::Host};
std::string_view closure_name(CheckOptions::Closure closure);
std::optional<CheckOptions::Closure> parse_closure(std::string_view name);

struct CheckReport {
  std::vector<std::string> files;              // every dynamically linked ELF file checked, sorted
  std::vector<Finding> findings;               // grouped by file, in file order
  std::vector<Error> problems;                 // unreadable inputs (each also an unreadable-file finding)
  std::map<std::string, LoaderModel> loaders;  // by file: whose rules resolved it
  bool any_at_least(Severity s) const;
};

CheckReport check_paths(const std::vector<std::filesystem::path>& paths, const CheckOptions& options);

// Turns off the rules these ids name (--disable); an id no rule has is an error naming it.
Status disable_check_rules(CheckOptions& options, const std::vector<std::string>& ids);
// Checks against this JetPack (--jetpack: a JetPack or L4T release, or a
// major line: find_jetpack_release); one of no line runpatch knows is an
// error listing those it knows. Returns a note when the release is judged by
// its line's row ("" when the row is that release).
Expected<std::string> target_jetpack(CheckOptions& options, std::string_view release);
// The build's own directories, which no runpath may point into: $TMPDIR and
// $NIX_BUILD_TOP when set (and not /tmp itself), each ending in '/'.
std::vector<std::string> build_directory_prefixes();

// The findings about a resolved tree as a whole (cuda-version-mix,
// ld-library-path-shadowing, runtime-stub of what it loads), for `tree` and
// `why` to show under the tree they describe.
std::vector<Finding> tree_findings(const std::filesystem::path& file, const DependencyTree& tree,
                                   const SearchEnvironment& env);

}  // namespace runpatch
