// Predicts which libcuda.so.1 a CUDA program gets on this machine and
// whether it can work with the loaded NVIDIA kernel driver.
#include "runpatch/diagnosing/doctor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <set>
#include <string_view>

#include "diagnosing/doctor_l4t.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/diagnosing/diagnose.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "runpatch/cuda/cuda.hpp"

namespace runpatch {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kLibcuda = "libcuda.so.1";

std::string read_small_file(const fs::path& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.substr(0, 1 << 16);
}

// "580.159.04", "535.104": 3-4 digits, then one or two groups of 1-3 digits.
bool is_driver_version(std::string_view v) {
  size_t groups = 0, start = 0;
  for (size_t i = 0; i <= v.size(); ++i) {
    if (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) continue;
    if (i < v.size() && v[i] != '.') return false;
    size_t len = i - start;
    if (groups == 0 ? (len < 3 || len > 4) : (len < 1 || len > 3)) return false;
    ++groups;
    start = i + 1;
  }
  return groups == 2 || groups == 3;
}

// The first dotted driver version in text (hand-parsed: std::regex is heavy and trips GCC's warnings).
std::optional<std::string> find_version(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
    std::string_view token(text.data() + i, end - i);
    while (!token.empty() && token.back() == '.') token.remove_suffix(1);
    if (is_driver_version(token)) return std::string(token);
    i = end;
  }
  return std::nullopt;
}

// Forward compatibility: does the GPU class take a newer user-space driver?
// Only GeForce/TITAN boards are known to refuse it (NVIDIA's compatibility guide).
bool consumer_gpu(const std::string& model) {
  return model.find("GeForce") != std::string::npos || model.find("TITAN") != std::string::npos;
}

}  // namespace

std::optional<int> compare_driver_versions(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& v) -> std::optional<std::vector<long>> {
    std::vector<long> out;
    size_t start = 0;
    while (start <= v.size()) {
      size_t dot = v.find('.', start);
      std::string piece = v.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (piece.empty() || !std::all_of(piece.begin(), piece.end(), ::isdigit) || piece.size() > 9) return std::nullopt;
      out.push_back(std::stol(piece));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return out;
  };
  auto pa = parts(a), pb = parts(b);
  if (!pa || !pb) return std::nullopt;
  for (size_t i = 0; i < std::max(pa->size(), pb->size()); ++i) {
    long x = i < pa->size() ? (*pa)[i] : 0, y = i < pb->size() ? (*pb)[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::string verdict_name(DoctorVerdict verdict) {
  switch (verdict) {
    case DoctorVerdict::Ok: return "ok";
    case DoctorVerdict::CompatOlderThanDriver: return "compat-older-than-driver";
    case DoctorVerdict::CompatUnsupportedGpu: return "compat-unsupported-gpu";
    case DoctorVerdict::DriverLibraryMismatch: return "driver-library-mismatch";
    case DoctorVerdict::NoLibcuda: return "no-libcuda";
    case DoctorVerdict::StubLibcuda: return "stub-libcuda";
    case DoctorVerdict::NoKernelDriver: return "no-kernel-driver";
    case DoctorVerdict::CompatOutsideRange: return "compat-outside-range";
    case DoctorVerdict::CompatDepsUnreachable: return "compat-deps-unreachable";
    case DoctorVerdict::L4tLibraryMismatch: return "l4t-library-mismatch";
  }
  return "?";
}

bool DoctorReport::ok() const {
  return !unknown() &&
         std::all_of(loads.begin(), loads.end(), [](const LibcudaLoad& l) { return l.verdict == DoctorVerdict::Ok; });
}

DriverFacts read_driver_facts(const fs::path& proc_root) {
  DriverFacts facts;
  for (const char* file : {"proc/driver/nvidia/version", "sys/module/nvidia/version"}) {
    fs::path path = proc_root / file;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    if (auto v = find_version(read_small_file(path))) {
      facts.kernel_version = v;
      facts.source = path.string();
      break;
    }
  }
  // None loaded: the source names the file that is missing (under which root).
  if (!facts.kernel_version) facts.source = (proc_root / "proc/driver/nvidia/version").lexically_normal().string();
  std::error_code ec;
  for (const auto& gpu : fs::directory_iterator(proc_root / "proc/driver/nvidia/gpus", ec)) {
    std::ifstream in(gpu.path() / "information");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("Model:", 0) == 0) {
        auto first = line.find_first_not_of(" \t", 6);
        if (first != std::string::npos) facts.gpu_models.push_back(line.substr(first));
      }
  }
  return facts;
}

struct DoctorContext {
  const DoctorOptions& options;
  const DriverFacts& driver;
  ResolutionSession& session;  // resolves what a chosen libcuda needs itself (L4T)
  std::string host_path(const std::string& path) const { return under_root(options.env.root, path).string(); }
};

namespace {

LibcudaCandidate describe(const DoctorContext& ctx, const std::string& path, std::string rule, FoundVia via) {
  LibcudaCandidate c;
  c.path = path;
  c.rule = std::move(rule);
  c.via = via;
  std::error_code ec;
  fs::path real = fs::canonical(ctx.host_path(path), ec);
  std::string name = ec ? basename_of(path) : real.filename().string();
  // The driver installs libcuda.so.<version>; libcuda.so.1 links to it.
  constexpr std::string_view kPrefix = "libcuda.so.";
  if (name.rfind(kPrefix, 0) == 0 && is_driver_version(std::string_view(name).substr(kPrefix.size())))
    c.version = name.substr(kPrefix.size());
  std::string dir = dirname_of(path);
  c.compat = basename_of(dir) == "compat" || looks_like_compat_dir(dir);
  c.stub = is_stub_library(path);
  return c;
}

// The chosen libcuda and what it shadows, from a resolution made with
// SearchEnvironment::every_candidate: the loader's own search order, hwcaps
// and rpath chains included. A file reached twice is one candidate.
void fill_candidates(const DoctorContext& ctx, const Resolution& r, LibcudaLoad& load) {
  if (!r.path) return;
  std::vector<std::string> seen;
  auto first_time = [&](const std::string& path) {
    std::error_code ec;
    std::string real = fs::canonical(ctx.host_path(path), ec).string();
    if (std::find(seen.begin(), seen.end(), real) != seen.end()) return false;
    seen.push_back(real);
    return true;
  };
  std::string chosen_rule = found_via_name(r.via);  // e.g. "already loaded": no attempts were made
  for (const auto& a : r.attempts)
    if (a.outcome == AttemptOutcome::Found) chosen_rule = a.rule;
  first_time(*r.path);
  load.chosen = describe(ctx, *r.path, chosen_rule, r.via);
  for (const auto& a : r.attempts)
    if (a.outcome == AttemptOutcome::AlsoFound && first_time(a.path))
      load.shadowed.push_back(describe(ctx, a.path, a.rule, a.via));
}

// A GPU kernel driver runs here: the nvidia module (its version is known), or L4T's nvgpu.
bool kernel_driver_loaded(const DriverFacts& driver) {
  return driver.kernel_version || (driver.l4t && driver.l4t->nvgpu);
}

// Without a kernel driver no libcuda can work, and the driver's libcuda is
// usually missing too: the driver is the cause, so it is the verdict.
void judge_no_kernel_driver(const DriverFacts& driver, LibcudaLoad& load) {
  load.verdict = DoctorVerdict::NoKernelDriver;
  if (driver.l4t) {
    load.explanation = "this L4T host has no GPU kernel driver loaded (neither nvgpu nor nvidia)";
    load.fix = "load L4T's GPU driver (nvgpu on JetPack 5 and 6, nvidia on JetPack 7)";
  } else {
    load.explanation = "no NVIDIA kernel driver is loaded on this machine";
    load.fix = "run on a machine with an NVIDIA GPU and driver (or load the nvidia kernel module)";
  }
  if (load.chosen) return;
  load.explanation += ", and no libcuda.so.1 is in any directory the loader searches for " + load.loader;
  load.fix += "; if none is found there either, add the driver directory to the runpath (runpatch driver FILE)";
}

void judge(const DoctorContext& ctx, LibcudaLoad& load) {
  const auto& kernel = ctx.driver.kernel_version;
  if (!load.chosen && !kernel_driver_loaded(ctx.driver)) {
    judge_no_kernel_driver(ctx.driver, load);
    return;
  }
  if (!load.chosen) {
    load.verdict = DoctorVerdict::NoLibcuda;
    load.explanation = "no libcuda.so.1 in any directory the loader searches for " + load.loader;
    load.fix = "add the driver directory to the runpath (runpatch driver FILE), or install the NVIDIA driver";
    return;
  }
  const LibcudaCandidate& c = *load.chosen;
  bool via_llp = c.via == FoundVia::LdLibraryPath;
  if (c.stub) {
    load.verdict = DoctorVerdict::StubLibcuda;
    load.explanation = c.path + " is the CUDA toolkit's link-time stub; every CUDA call fails";
    load.fix = via_llp ? "remove the stubs directory from LD_LIBRARY_PATH"
                       : "remove the stubs directory from the runpath (runpatch driver drops it)";
    return;
  }
  if (!kernel_driver_loaded(ctx.driver)) {
    judge_no_kernel_driver(ctx.driver, load);
    return;
  }
  if (ctx.driver.l4t) {
    judge_l4t(ctx.driver, ctx.session, ctx.options.env.root, load);
    return;
  }
  std::string version = c.version.value_or("unknown");
  if (c.compat) {
    auto order = c.version ? compare_driver_versions(*c.version, *kernel) : std::nullopt;
    if (order && *order < 0) {
      load.verdict = DoctorVerdict::CompatOlderThanDriver;
      load.explanation = fmt::format(
          "the forward-compatibility libcuda {} ({}) is older than the kernel driver {}: CUDA calls fail with error "
          "803 "
          "(unsupported display driver / cuda driver combination)",
          version, c.rule, *kernel);
      load.fix = via_llp
                     ? "unset LD_LIBRARY_PATH (or drop the compat directory from it)"
                     : fmt::format("drop the cuda_compat layer from the runpath, or update cuda_compat to {} or newer",
                                   *kernel);
      return;
    }
    for (const auto& model : ctx.driver.gpu_models)
      if (consumer_gpu(model)) {
        load.verdict = DoctorVerdict::CompatUnsupportedGpu;
        load.explanation = fmt::format(
            "{} does not support forward compatibility; the compat libcuda {} fails with error 804", model, version);
        load.fix = "drop the cuda_compat layer: this GPU needs the driver's own libcuda";
        return;
      }
    load.explanation = fmt::format("forward-compatibility libcuda {} over kernel driver {}", version, *kernel);
    return;
  }
  if (c.version && compare_driver_versions(*c.version, *kernel) != std::optional<int>(0)) {
    load.verdict = DoctorVerdict::DriverLibraryMismatch;
    load.explanation = fmt::format("libcuda {} ({}) does not match the kernel driver {}", version, c.rule, *kernel);
    load.fix = via_llp ? "unset LD_LIBRARY_PATH, or point it at the driver's own directory"
                       : "put the directory of the running driver's libcuda first (runpatch driver --driver-dir DIR)";
    return;
  }
  load.explanation = fmt::format("the driver's libcuda {} matches the kernel driver {}", version, *kernel);
}

}  // namespace

namespace {
// The doctor's search: every attempt recorded, and past the first hit, so that shadowed copies show.
SearchEnvironment searching_every_candidate(SearchEnvironment env) {
  env.record_attempts = true;
  env.every_candidate = true;
  return env;
}
}  // namespace

Doctor::Doctor(DoctorOptions options)
    : options_(std::move(options)),
      driver_(read_driver_facts(options_.proc_root)),
      session_(searching_every_candidate(options_.env)) {
  driver_.l4t = read_l4t_facts(options_.proc_root, options_.env.root);
}

Doctor::~Doctor() = default;

Expected<DoctorReport> Doctor::diagnose(const fs::path& file) {
  RUNPATCH_TRY(DependencyTree tree, session_.resolve_tree(file));
  DoctorReport report;
  report.file = file.string();
  DoctorContext ctx{options_, driver_, session_};
  auto add_load = [&](size_t requester, std::string how, const Resolution& r) {
    LibcudaLoad load;
    load.loader = tree.objects[requester].path;
    load.how = std::move(how);
    fill_candidates(ctx, r, load);
    judge(ctx, load);
    report.loads.push_back(std::move(load));
  };
  bool has_cudart = false;
  for (const auto& edge : tree.edges) {
    const std::string& name = edge.resolution.name;
    if (name.rfind("libcudart.so", 0) == 0) has_cudart = true;
    if (name != kLibcuda) continue;
    std::string how = edge.dlopen ? "dlopen by " + basename_of(tree.objects[edge.from].path) : "DT_NEEDED";
    add_load(edge.from, how, edge.resolution);
  }
  for (const auto& object : tree.objects)
    if (object.info->soname && object.info->soname->rfind("libcudart.so", 0) == 0) has_cudart = true;
  const ElfInfo& self = *tree.objects[0].info;
  if (report.loads.empty() && !has_cudart && carries_static_cuda_runtime(self, file))
    add_load(0, "dlopen by the static CUDA runtime", session_.resolve_name(tree, 0, std::string(kLibcuda)));
  report.uses_cuda = !report.loads.empty();
  for (const auto& edge : tree.edges)
    if (!edge.resolution.path && !edge.dlopen)
      report.unresolved.push_back(edge.resolution.name + " (needed by " + tree.objects[edge.from].path + ")");
  return report;
}

namespace {

bool same_library_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return a == b || fs::equivalent(a, b, ec);
}

}  // namespace

bool LibcudaObservation::agrees() const {
  if (!path || !predicted) return !path && !predicted && predicted_load;
  return same_library_file(*path, *predicted);
}

// A requester in the trace is the loader's path of the object (bin/../lib/x), the
// prediction's is the resolver's: the same file is the same requester.
std::vector<LibcudaObservation> observe_libcuda(const std::vector<const DoctorReport*>& predictions,
                                                const TraceAnalysis& trace) {
  std::vector<LibcudaObservation> observations;
  for (const auto& l : trace.loads) {
    if (l.name != kLibcuda) continue;
    LibcudaObservation o{l.pid, l.requester, l.path, std::nullopt, false};
    for (const DoctorReport* prediction : predictions) {
      for (const auto& p : prediction->loads) {
        if (!same_library_file(p.loader, l.requester)) continue;
        o.predicted_load = true;
        if (p.chosen) o.predicted = p.chosen->path;
      }
      if (o.predicted_load) break;
    }
    observations.push_back(std::move(o));
  }
  return observations;
}

bool DoctorRun::ok() const {
  auto report_ok = [](const DoctorReport& r) { return r.ok(); };
  return program.ok() && std::all_of(requesters.begin(), requesters.end(), report_ok) && problems.empty() &&
         std::all_of(observations.begin(), observations.end(), [](const auto& o) { return o.agrees(); });
}

DoctorRun doctor_traced_run(Doctor& doctor, DoctorReport program, const TraceAnalysis& trace, int exit_code) {
  DoctorRun run{std::move(program), {}, {}, {}, exit_code};
  auto predicted_for = [&](const std::string& requester) {
    auto has_load = [&](const DoctorReport& r) {
      return std::any_of(r.loads.begin(), r.loads.end(),
                         [&](const LibcudaLoad& l) { return same_library_file(l.loader, requester); });
    };
    return has_load(run.program) || std::any_of(run.requesters.begin(), run.requesters.end(), has_load);
  };
  std::set<std::string> tried;
  for (const auto& l : trace.loads) {
    if (l.name != kLibcuda || l.requester.empty() || predicted_for(l.requester) || !tried.insert(l.requester).second)
      continue;
    // Not in the program's tree (loaded at run time by path, or by an
    // interpreter): predicted from the requester's own search.
    auto report = doctor.diagnose(l.requester);
    if (report)
      run.requesters.push_back(std::move(*report));
    else
      run.problems.push_back(report.error().message());
  }
  std::vector<const DoctorReport*> predictions = {&run.program};
  for (const auto& r : run.requesters) predictions.push_back(&r);
  run.observations = observe_libcuda(predictions, trace);
  return run;
}

}  // namespace runpatch
