// Emulation of glibc's ld.so library search (elf/dl-load.c): for a file and an
// environment, where each DT_NEEDED is found, through which rule, and every
// path tried on the way.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/expected.hpp"
#include "runpatch/resolving/loader_model.hpp"

namespace runpatch {

struct SearchEnvironment {
  // Every absolute path (runpaths, cache entries, default dirs) is looked up
  // under root; results are reported as the loader would see them (without root).
  std::filesystem::path root = "/";
  std::vector<std::string> ld_library_path;  // already split; empty: unset
  // The cache a glibc model reads instead of its own (host: <root>/etc/ld.so.cache;
  // Nixpkgs: <glibc prefix>/etc/ld.so.cache if there is one); musl reads none.
  std::optional<std::filesystem::path> ld_so_cache;
  // Whose rules apply: by default each file's PT_INTERP decides (loader_model.hpp).
  LoaderChoice loader;
  std::optional<std::vector<std::string>> default_dirs;  // host glibc; default: derived from the machine
  std::vector<std::string> hwcaps_subdirs;               // glibc-hwcaps subdirectories, best first
  // glibc < 2.37's legacy subdirectories ("tls/x86_64/x86_64", ..., "x86_64"), best first, "" left out.
  std::vector<std::string> legacy_hwcaps_subdirs;
  std::string platform;              // $PLATFORM; default: from the machine
  std::string lib;                   // $LIB; default: from the machine
  std::vector<std::string> preload;  // LD_PRELOAD / ld.so.preload names or paths
  // Fill default_dirs, hwcaps_subdirs, legacy_hwcaps_subdirs, platform and lib from the host's
  // `ld.so --list-diagnostics` the first time one of them is needed.
  bool ask_host_loader = false;
  // Keep every path tried in Resolution::attempts (for `why` and JSON); a
  // plain tree turns it off and spares an allocation per probe.
  bool record_attempts = true;
  // Go on searching after the first hit, recording each further one as an
  // attempt "also found": what the first hit shadows (runpatch doctor).
  bool every_candidate = false;
  // Emulate Nixpkgs' loader patch: a DT_NEEDED listed in the requesting
  // object's resolution-cache note is looked for at the note's locations
  // instead of every DT_RUNPATH entry (runpatch/resolving/resolution_cache.hpp). A
  // Nixpkgs glibc whose loader carries the patch reads the note regardless.
  bool use_resolution_cache = false;

  // The running system: its loader's settings (asked lazily, see ask_host_loader)
  // and, if asked for, LD_LIBRARY_PATH from the environment.
  static SearchEnvironment host(bool with_ld_library_path);

  // Does what ask_host_loader promises, now; a no-op when it is false.
  void complete_from_host_loader();
};

enum class FoundVia {
  AlreadyLoaded,  // a loaded object's SONAME (or name) matched
  DirectPath,     // the name holds a slash
  Rpath,          // DT_RPATH of the loader or one of its loaders
  LdLibraryPath,
  Runpath,  // DT_RUNPATH of the loader
  LdSoCache,
  DefaultDirs,
  NotFound,
};
std::string found_via_name(FoundVia via);

// What one open the loader would try came to.
enum class AttemptOutcome {
  Found,
  AlsoFound,  // a later candidate (SearchEnvironment::every_candidate)
  NoSuchFile,
  NotLoadable,          // detail: what the reader found wrong
  WrongClassOrMachine,  // detail: the candidate's class and machine
  NotInCache,           // ld.so.cache lists no file of the name (path: the cache); no file was opened
};

struct SearchAttempt {
  std::string path;  // as the loader would open it
  AttemptOutcome outcome = AttemptOutcome::NoSuchFile;
  std::string rule;                   // for people, e.g. "runpath of /usr/bin/foo"
  std::string detail;                 // why, for NotLoadable and WrongClassOrMachine (and "(musl stops here)")
  FoundVia via = FoundVia::NotFound;  // for code: the search step that made the attempt

  // For people: "found", "also found", "no such file", "not loadable: <detail>",
  // "wrong class or machine: <detail>", "not listed" (ld.so.cache).
  std::string outcome_text() const;
};

struct Resolution {
  std::string name;                 // as written in DT_NEEDED
  std::optional<std::string> path;  // the file the loader maps
  FoundVia via = FoundVia::NotFound;
  std::string via_object;  // whose rpath/runpath, or the loaded object that matched
  std::vector<SearchAttempt> attempts;
};

struct LoadedObject {
  std::string path;                     // loader's view
  std::shared_ptr<const ElfInfo> info;  // shared with the session: trees of many files repeat libraries
  std::optional<size_t> loader;         // index of the object whose DT_NEEDED loaded it
  int depth = 0;
};

struct DependencyEdge {
  size_t from;  // requesting object
  Resolution resolution;
  std::optional<size_t> to;     // object it resolved to
  bool dlopen = false;          // loaded at run time (.note.dlopen, or libcuda.so.1 for libcudart)
  std::string dlopen_reason;    // the note's feature, or why it is implied
  std::string dlopen_priority;  // the note's: "required", "recommended", "suggested"; "" when implied
};

struct DependencyTree {
  LoaderModel loader;                 // whose rules resolved it
  std::vector<LoadedObject> objects;  // load (breadth-first) order; [0] is the file
  std::vector<DependencyEdge> edges;  // in the order ld.so resolves them; dlopen ones last
  // $LIB and $PLATFORM as this loader substitutes them; set when the file's own runpath names them.
  std::string lib_token, platform_token;
  // Every DT_NEEDED found (dlopen'ed libraries may legitimately be absent at build time).
  bool all_found() const;
};

// Whether the loader of object accepts candidate (class, byte order, machine,
// OS ABI); any other candidate is skipped and the search goes on.
bool loadable_together(const ElfIdentity& object, const ElfIdentity& candidate);

// The loader model for a file (file_view: its path as the loader sees it):
// env.loader, or else its PT_INTERP; a file without one (a library) by the
// glibc its runpath holds, or musl when it needs musl's libc.so.
LoaderModel choose_loader_model(const ElfInfo& file, const std::string& file_view, const SearchEnvironment& env);

// Splits an LD_LIBRARY_PATH-style list (':' or ';' separated; empty entries kept).
std::vector<std::string> split_search_path(const std::string& list);

// Libraries an object loads with dlopen: its .note.dlopen entries, and
// libcuda.so.1 for libcudart (the CUDA runtime dlopens the driver library).
std::vector<DlopenDependency> dlopen_dependencies(const ElfInfo& info);

// Resolves many files against one environment, sharing what they have in
// common: the parsed ld.so.cache, headers of libraries read once, directory checks.
class ResolutionSession {
 public:
  explicit ResolutionSession(SearchEnvironment env);
  ~ResolutionSession();
  ResolutionSession(const ResolutionSession&) = delete;
  ResolutionSession& operator=(const ResolutionSession&) = delete;

  // file's dependencies, breadth-first as ld.so loads them, then what each
  // loaded object dlopens, searched as that object's dlopen would.
  Expected<DependencyTree> resolve_tree(const std::filesystem::path& file);

  // One name as `requester` (an object of tree) would find it, without loading it.
  Resolution resolve_name(const DependencyTree& tree, size_t requester, const std::string& name);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// One-off conveniences over a ResolutionSession.
Expected<DependencyTree> resolve_tree(const std::filesystem::path& file, const SearchEnvironment& env);
Resolution resolve_name(const DependencyTree& tree, size_t requester, const std::string& name,
                        const SearchEnvironment& env);

}  // namespace runpatch
