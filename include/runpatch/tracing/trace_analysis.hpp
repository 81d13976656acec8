// What a trace says about each library a program loaded or tried to load,
// joined with the static model of the loader (runpatch/resolving/resolve.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runpatch/resolving/resolve.hpp"
#include "runpatch/tracing/trace_records.hpp"

namespace runpatch {

enum class LoadRequest {
  Needed,            // a DT_NEEDED of the requester
  DeclaredDlopen,    // dlopen of a name in the requester's .note.dlopen
  UndeclaredDlopen,  // dlopen of a name the requester declares nowhere
  DlopenByPath,      // dlopen of a path: the loader runs no search and names no requester
};
std::string load_request_id(LoadRequest request);  // "needed", "dlopen", "undeclared-dlopen", "dlopen-by-path"

struct TracedStep {
  SearchStep step = SearchStep::Original;
  std::string path;  // as the loader tried it
};

struct TracedLoad {
  long pid = 0;           // the first process it was seen in
  std::string program;    // that process's executable
  std::string requester;  // the object that asked ("" when the loader does not say)
  std::string name;       // as asked (DT_NEEDED entry or dlopen argument)
  LoadRequest request = LoadRequest::Needed;
  std::vector<TracedStep> steps;    // every candidate after the name itself, in order
  std::optional<std::string> path;  // what was loaded; none: the load failed
  SearchStep found_by = SearchStep::Original;
  // The audit's step says "rpath or runpath" (LA_SER_RUNPATH); the model tells
  // DT_RPATH (searched first, inherited by what it loads) from DT_RUNPATH.
  bool found_by_rpath = false;
  // The library the name stands for: the requester's .note.dlopen entry that
  // lists it, else the name up to ".so" (libfoo.so.9.19.0, .so.9.19, .so.9).
  std::string library;
  // A failed dlopen that the same requester follows with a successful one of
  // the same library: a fallback probe, neither failed nor undeclared.
  bool probe = false;
  // The static model's words for the step that found it ("runpath of /p/bin/x",
  // "rpath of /p/bin/x", "LD_LIBRARY_PATH", "ld.so.cache", ...), and whether
  // the model finds the same file (it may not: the environment of a child
  // that changed LD_LIBRARY_PATH is not known here).
  std::string rule;
  std::string rule_object;  // whose rpath/runpath it was ("" for other steps)
  bool model_agrees = false;
  // Found through LD_LIBRARY_PATH, ld.so.cache or a default directory only: no
  // rpath or runpath leads to it, so a pure Nix closure would not find it.
  bool host_dependent = false;
  // host_dependent: the directory the requester's runpath should hold.
  std::string runpath_directory;
  // host_dependent: the requester itself was found through the host, so its
  // runpath is not the first thing to fix (no fix is proposed for it).
  bool requester_host_dependent = false;
};

// One program run: a process after each exec, and a forked child (its parent's program).
struct TracedProcess {
  long pid = 0, parent = 0;
  std::string executable;
};

// `runpatch set --add-runpath DIRECTORY FILE` for each directory a file needs.
struct TraceFix {
  std::string file;
  std::vector<std::string> directories;
  std::vector<std::string> libraries;  // the names each fix makes findable
};

// The kinds of load a trace can find that CI may fail on (trace --fail-on).
enum class TraceKind { HostDependent, UndeclaredDlopen, Failed };
inline constexpr TraceKind kTraceKinds[] = {TraceKind::HostDependent, TraceKind::UndeclaredDlopen, TraceKind::Failed};
std::string_view trace_kind_name(TraceKind kind);  // "host-dependent", "undeclared-dlopen", "failed"
std::optional<TraceKind> parse_trace_kind(std::string_view name);
bool is_kind(const TracedLoad& load, TraceKind kind);  // the one test counts, reports and --fail-on use

struct TraceAnalysis {
  std::vector<TracedProcess> processes;
  std::vector<TracedLoad> loads;  // first appearance order; one per program, requester, name and outcome
  std::vector<TraceFix> fixes;
  size_t host_dependent() const;
  size_t undeclared_dlopens() const;
  size_t failed() const;  // probes not counted
  size_t probes() const;
  size_t count(TraceKind kind) const;  // loads of that kind
};

// Sessions of search records become loads: an Original search starts one,
// the searches after it are its steps, and the object opened next by that
// process is what it found (or, for a glibc that reports the first objects'
// opens only after all of them are mapped, the later open of its last
// candidate). env is the environment the command ran in, for the model.
TraceAnalysis analyze_trace(const std::vector<TraceRecord>& records, const SearchEnvironment& env);

}  // namespace runpatch
