// From audit records to loads, and each load joined with the static model.
//
// What the audit interface tells: every name a search tries and the step it
// comes from (la_objsearch), the object that asked (its cookie: for DT_NEEDED
// the object that needs it, for dlopen the object holding the caller), and
// what got loaded (la_objopen). What it does not tell: whether a candidate
// was found (the next open of the same process says it), whose rpath a
// LA_SER_RUNPATH candidate came from (the model says: the requester's, its
// loaders' or the program's), and anything about a dlopen of a path (no
// search, no requester), a name already loaded (no search at all) or a file
// found under a second name (no new open).
#include "runpatch/tracing/trace_analysis.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

namespace runpatch {

std::string load_request_id(LoadRequest request) {
  switch (request) {
    case LoadRequest::Needed: return "needed";
    case LoadRequest::DeclaredDlopen: return "dlopen";
    case LoadRequest::UndeclaredDlopen: return "undeclared-dlopen";
    case LoadRequest::DlopenByPath: return "dlopen-by-path";
  }
  return "?";
}

bool is_kind(const TracedLoad& l, TraceKind kind) {
  switch (kind) {
    case TraceKind::HostDependent: return l.host_dependent;
    case TraceKind::UndeclaredDlopen: return l.request == LoadRequest::UndeclaredDlopen && !l.probe;
    case TraceKind::Failed: return !l.path && !l.probe;  // a probe's failure is not one
  }
  return false;
}

size_t TraceAnalysis::count(TraceKind kind) const {
  return size_t(std::count_if(loads.begin(), loads.end(), [&](const TracedLoad& l) { return is_kind(l, kind); }));
}
size_t TraceAnalysis::host_dependent() const { return count(TraceKind::HostDependent); }
size_t TraceAnalysis::undeclared_dlopens() const { return count(TraceKind::UndeclaredDlopen); }
size_t TraceAnalysis::failed() const { return count(TraceKind::Failed); }
std::string_view trace_kind_name(TraceKind kind) {
  switch (kind) {
    case TraceKind::HostDependent: return "host-dependent";
    case TraceKind::UndeclaredDlopen: return "undeclared-dlopen";
    case TraceKind::Failed: return "failed";
  }
  return "";
}

std::optional<TraceKind> parse_trace_kind(std::string_view name) {
  for (TraceKind kind : kTraceKinds)
    if (trace_kind_name(kind) == name) return kind;
  return std::nullopt;
}

size_t TraceAnalysis::probes() const {
  return size_t(std::count_if(loads.begin(), loads.end(), [](const TracedLoad& l) { return l.probe; }));
}

namespace {

struct Session {
  TracedLoad load;
  bool by_path = false;  // an open no search led to
};

struct ProcessState {
  std::string executable;
  std::optional<size_t> open;   // the session whose open is awaited
  std::vector<size_t> pending;  // closed without an open: a later open of its last candidate is its result
  bool started = false;         // an activity record seen: opens without a search are dlopens of paths now
};

// Groups the records into sessions, in order, each with its result.
class SessionBuilder {
 public:
  void add(const TraceRecord& r) {
    ProcessState& p = processes_[r.pid];
    switch (r.kind) {
      case TraceRecord::Kind::Process: start_process(r, p); break;
      case TraceRecord::Kind::Search: search(r, p); break;
      case TraceRecord::Kind::Open: opened(r, p); break;
      case TraceRecord::Kind::Activity:
        p.started = true;
        // LA_ACT_ADD comes between a search and its open; the others end a dlopen or the start.
        if (r.flag != 1) close(p);
        break;
    }
  }

  std::vector<Session> sessions;
  std::vector<TracedProcess> traced;

 private:
  void start_process(const TraceRecord& r, ProcessState& p) {
    close(p);
    p = ProcessState{};
    p.executable = r.name;
    p.started = r.forked;  // a forked child runs its parent's program, long started
    traced.push_back({r.pid, r.parent, r.name});
  }

  void search(const TraceRecord& r, ProcessState& p) {
    if (r.flag == unsigned(SearchStep::Original)) {
      close(p);
      Session s;
      s.load.pid = r.pid;
      s.load.program = p.executable;
      s.load.requester = r.requester.empty() ? p.executable : r.requester == "?" ? "" : r.requester;
      s.load.name = r.name;
      p.open = sessions.size();
      sessions.push_back(std::move(s));
    } else if (p.open) {
      sessions[*p.open].load.steps.push_back({SearchStep(r.flag), r.name});
    }
  }

  // The open is the result of the session whose last candidate it is; of a
  // path asked for (no candidates: a name with a slash, $ORIGIN expanded), the
  // file of that name.
  static bool result_of(const TracedLoad& load, const std::string& opened) {
    if (!load.steps.empty()) return load.steps.back().path == opened;
    return opened.substr(opened.rfind('/') + 1) == load.name.substr(load.name.rfind('/') + 1);
  }

  void opened(const TraceRecord& r, ProcessState& p) {
    if (r.name.find('/') == std::string::npos) return;  // the program itself (""), the vDSO
    if (p.open && result_of(sessions[*p.open].load, r.name)) {
      sessions[*p.open].load.path = r.name;
      p.open.reset();
      return;
    }
    // A glibc that reports the opens of the first objects only after mapping them all.
    for (auto it = p.pending.begin(); it != p.pending.end(); ++it) {
      TracedLoad& load = sessions[*it].load;
      if (result_of(load, r.name)) {
        load.path = r.name;
        p.pending.erase(it);
        return;
      }
    }
    if (!p.started) return;  // the program's loader, before any search
    Session s;
    s.by_path = true;
    s.load.pid = r.pid;
    s.load.program = p.executable;
    s.load.name = r.name;
    s.load.path = r.name;
    s.load.request = LoadRequest::DlopenByPath;
    sessions.push_back(std::move(s));
  }

  static void close(ProcessState& p) {
    if (p.open) p.pending.push_back(*p.open);
    p.open.reset();
  }

  std::map<long, ProcessState> processes_;
};

// Each file's facts, read once for all processes: a build runs the same
// compiler and its libraries hundreds of times.
class InfoCache {
 public:
  std::shared_ptr<const ElfInfo> get(const std::string& path) {
    auto& slot = infos_[path];
    if (!slot) {
      auto info = read_elf_info(path);
      slot = info ? std::make_shared<const ElfInfo>(std::move(*info)) : std::make_shared<const ElfInfo>();
    }
    return slot;
  }

 private:
  std::map<std::string, std::shared_ptr<const ElfInfo>> infos_;
};

// The objects one process loaded, as a tree the resolver can search from:
// each object's loader is the object that asked for it, as glibc's l_loader.
class ProcessTree {
 public:
  ProcessTree(const std::string& executable, InfoCache& infos) : infos_(infos) { add(executable, std::nullopt); }

  size_t index_of(const std::string& path) {
    auto it = index_.find(path);
    return it != index_.end() ? it->second : add(path, 0);
  }

  size_t add(const std::string& path, std::optional<size_t> loader) {
    auto it = index_.find(path);
    if (it != index_.end()) return it->second;
    tree.objects.push_back({path, infos_.get(path), loader, 0});
    return index_[path] = tree.objects.size() - 1;
  }

  DependencyTree tree;

 private:
  InfoCache& infos_;
  std::map<std::string, size_t> index_;
};

// The directory a runpath needs for path: its own, above a glibc-hwcaps subdirectory.
std::string runpath_directory_of(const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  size_t hwcaps = dir.rfind("/glibc-hwcaps/");
  if (hwcaps != std::string::npos && dir.find('/', hwcaps + 14) == std::string::npos) dir.resize(hwcaps);
  return dir.empty() ? "/" : dir;
}

bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec);
}

std::string library_of(const ElfInfo& requester, const std::string& name) {
  for (const auto& d : requester.dlopen)
    if (std::find(d.sonames.begin(), d.sonames.end(), name) != d.sonames.end()) return "note:" + d.sonames.front();
  std::string base = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
  return base.substr(0, base.find(".so"));
}

LoadRequest request_kind(const ElfInfo& requester, const std::string& name) {
  if (std::find(requester.needed.begin(), requester.needed.end(), name) != requester.needed.end())
    return LoadRequest::Needed;
  for (const auto& d : requester.dlopen)
    if (std::find(d.sonames.begin(), d.sonames.end(), name) != d.sonames.end()) return LoadRequest::DeclaredDlopen;
  return LoadRequest::UndeclaredDlopen;
}

// The host's model: which rule finds the file, in words.
void name_the_rule(TracedLoad& load, const Resolution& host) {
  load.rule = search_step_name(load.found_by);
  if (!host.path || !same_file(*host.path, *load.path)) return;
  load.model_agrees = true;
  for (const auto& a : host.attempts)
    if (a.outcome == AttemptOutcome::Found) load.rule = a.rule;
  if (host.via == FoundVia::DirectPath) load.rule = "the path asked for";  // the model's words are DT_NEEDED's
  if (host.via == FoundVia::Rpath || host.via == FoundVia::Runpath) load.rule_object = host.via_object;
  load.found_by_rpath = host.via == FoundVia::Rpath && load.found_by == SearchStep::Runpath;
}

// The step of the last candidate, the one that found the file.
SearchStep step_of_hit(const TracedLoad& load) {
  if (load.steps.empty()) return SearchStep::Original;
  const TracedStep& last = load.steps.back();
  return load.path && same_file(last.path, *load.path) ? last.step : SearchStep::Original;
}

class Joiner {
 public:
  // The host loader is asked for its defaults once (a process run), for both models.
  explicit Joiner(SearchEnvironment env) : Joiner(completed(std::move(env)), 0) {}

  void join(Session& s) {
    TracedLoad& load = s.load;
    auto [tree_it, added] = trees_.try_emplace({load.pid, load.program}, load.program, infos_);
    ProcessTree& process = tree_it->second;
    if (s.by_path) {
      process.add(*load.path, 0);
      return;
    }
    size_t requester = process.index_of(load.requester);
    load.request = request_kind(*process.tree.objects[requester].info, load.name);
    load.library = library_of(*process.tree.objects[requester].info, load.name);
    if (!load.path) load.path = already_loaded(process, load);
    // A dlopen of a path without $ORIGIN: the loader does not look for the caller
    // and reports the program as the requester, whoever called.
    if (load.request == LoadRequest::UndeclaredDlopen && load.name.find('/') != std::string::npos &&
        load.name.find('$') == std::string::npos) {
      load.request = LoadRequest::DlopenByPath;
      load.requester.clear();
    }
    if (!load.path) return;
    process.add(*load.path, requester);
    load.found_by = step_of_hit(load);
    name_the_rule(load, host_.resolve_name(process.tree, requester, load.name));
    bool host_step = load.found_by == SearchStep::LdLibraryPath || load.found_by == SearchStep::Cache ||
                     load.found_by == SearchStep::Default;
    if (host_step && !closure_.resolve_name(process.tree, requester, load.name).path) {
      load.host_dependent = true;
      load.runpath_directory = runpath_directory_of(*load.path);
    }
  }

 private:
  Joiner(const SearchEnvironment& env, int) : host_(env), closure_(closure_environment(env)) {}

  static SearchEnvironment completed(SearchEnvironment env) {
    env.complete_from_host_loader();
    return env;
  }

  // What a pure closure has: rpaths and runpaths, no LD_LIBRARY_PATH, no cache, no default directories.
  static SearchEnvironment closure_environment(SearchEnvironment env) {
    env.ld_library_path.clear();
    env.ld_so_cache = "/nonexistent/runpatch-trace/ld.so.cache";
    env.default_dirs = std::vector<std::string>{};
    return env;
  }

  // The loader found the last candidate to be an object it had already
  // loaded under another name (the same inode): no open follows, yet it is found.
  // A path asked for (no search, no steps) is its own candidate.
  static std::optional<std::string> already_loaded(const ProcessTree& process, const TracedLoad& load) {
    bool path = load.name.find('/') != std::string::npos && load.name.find('$') == std::string::npos;
    if (load.steps.empty() && !path) return std::nullopt;
    const std::string& candidate = load.steps.empty() ? load.name : load.steps.back().path;
    for (const auto& o : process.tree.objects)
      if (same_file(candidate, o.path)) return o.path;
    return std::nullopt;
  }

  ResolutionSession host_, closure_;
  InfoCache infos_;
  std::map<std::pair<long, std::string>, ProcessTree> trees_;  // a pid that execs runs another program
};

}  // namespace

namespace {

// A requester that was itself found through the host gets no fix of its own:
// the closure has to hold it first (its fix is named where it was loaded).
void mark_host_dependent_requesters(std::vector<TracedLoad>& loads) {
  std::set<std::pair<long, std::string>> host_found;
  for (const auto& l : loads)
    if (l.host_dependent) host_found.emplace(l.pid, *l.path);
  for (auto& l : loads) l.requester_host_dependent = host_found.count({l.pid, l.requester}) > 0;
}

// One load per program, requester, name and outcome: a program run many times
// (a build's compiler) says the same every time.
std::vector<TracedLoad> unique_loads(std::vector<Session>& sessions) {
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
  std::vector<TracedLoad> loads;
  for (auto& s : sessions) {
    TracedLoad& l = s.load;
    if (seen.emplace(l.program, l.requester, l.name, l.path.value_or("")).second) loads.push_back(std::move(l));
  }
  return loads;
}

// cuDNN dlopens libcudnn_graph.so.9.19.0, then .so.9.19, then .so.9; a note
// may list three names of which one exists: the misses before a hit of the
// same library by the same requester are probes.
void mark_probes(std::vector<TracedLoad>& loads) {
  for (size_t i = 0; i < loads.size(); ++i) {
    TracedLoad& miss = loads[i];
    if (miss.path || miss.request == LoadRequest::Needed) continue;
    miss.probe = std::any_of(loads.begin() + i + 1, loads.end(), [&](const TracedLoad& hit) {
      return hit.path && hit.program == miss.program && hit.requester == miss.requester && hit.library == miss.library;
    });
  }
}

std::vector<TraceFix> fixes_for(const std::vector<TracedLoad>& loads) {
  std::vector<TraceFix> fixes;
  for (const auto& l : loads) {
    if (!l.host_dependent || l.requester_host_dependent || l.requester.empty()) continue;
    auto fix = std::find_if(fixes.begin(), fixes.end(), [&](const TraceFix& f) { return f.file == l.requester; });
    if (fix == fixes.end()) fix = fixes.insert(fixes.end(), TraceFix{l.requester, {}, {}});
    if (std::find(fix->directories.begin(), fix->directories.end(), l.runpath_directory) == fix->directories.end())
      fix->directories.push_back(l.runpath_directory);
    if (std::find(fix->libraries.begin(), fix->libraries.end(), l.name) == fix->libraries.end())
      fix->libraries.push_back(l.name);
  }
  return fixes;
}

}  // namespace

TraceAnalysis analyze_trace(const std::vector<TraceRecord>& records, const SearchEnvironment& env) {
  SessionBuilder builder;
  for (const auto& r : records) builder.add(r);
  Joiner joiner(env);
  for (auto& s : builder.sessions) joiner.join(s);
  TraceAnalysis analysis;
  analysis.processes = std::move(builder.traced);
  analysis.loads = unique_loads(builder.sessions);
  mark_probes(analysis.loads);
  mark_host_dependent_requesters(analysis.loads);
  analysis.fixes = fixes_for(analysis.loads);
  return analysis;
}

}  // namespace runpatch
