#include <fmt/format.h>

#include "runpatch/reporting/doctor_report.hpp"

namespace runpatch {

namespace {

std::string candidate_text(const LibcudaCandidate& c) {
  std::string kind = c.stub ? ", stub" : c.compat ? ", forward compatibility" : "";
  return fmt::format("{} [{}] (version {}{})", c.path, c.rule, c.version.value_or("unknown"), kind);
}

nlohmann::json candidate_json(const LibcudaCandidate& c) {
  return {{"path", c.path},
          {"rule", c.rule},
          {"version", c.version ? nlohmann::json(*c.version) : nlohmann::json(nullptr)},
          {"compat", c.compat},
          {"stub", c.stub}};
}

nlohmann::json l4t_json(const L4tFacts& l4t) {
  const JetpackRelease* jetpack = l4t.jetpack.release;
  auto version = [](const std::optional<CudaVersion>& v) {
    return v ? nlohmann::json(cuda_version_text(*v)) : nlohmann::json(nullptr);
  };
  nlohmann::json row = nullptr;
  if (jetpack)
    row = {{"jetpack", std::string(jetpack->jetpack)},
           {"l4t", l4t_version_text(jetpack->l4t)},
           {"exact", l4t.jetpack.exact},
           {"native_cuda", cuda_version_text(jetpack->native_cuda)},
           {"compat_from", version(jetpack->compat_from)},
           {"compat_to", version(jetpack->compat_to)}};
  return {{"release", l4t.release ? nlohmann::json(l4t_version_text(*l4t.release)) : nlohmann::json(nullptr)},
          {"release_source", l4t.release_source},
          {"release_problem", l4t.release_problem},
          {"soc", l4t.soc},
          {"nvgpu", l4t.nvgpu},
          {"evidence", l4t.evidence},
          {"jetpack", row}};
}

}  // namespace

std::string format_driver_facts(const DriverFacts& facts) {
  if (!facts.kernel_version && facts.l4t && facts.l4t->nvgpu) return "kernel driver: nvgpu (part of L4T)\n";
  if (!facts.kernel_version)
    return fmt::format("kernel driver: none loaded (no {})\n",
                       facts.source.empty() ? std::string("/proc/driver/nvidia/version") : facts.source);
  std::string gpus;
  for (const auto& m : facts.gpu_models) gpus += (gpus.empty() ? "; GPU: " : ", ") + m;
  return fmt::format("kernel driver: {} (from {}){}\n", *facts.kernel_version, facts.source, gpus);
}

std::string format_doctor(const DoctorReport& report, bool color) {
  const char* red = color ? "\033[1;31m" : "";
  const char* green = color ? "\033[32m" : "";
  const char* reset = color ? "\033[0m" : "";
  std::string out = report.file + ":\n";
  if (report.unknown()) {
    out += fmt::format(
        "  verdict  {}unknown{}: part of its tree is not resolved here, so whether it loads "
        "libcuda.so.1 cannot be told (resolve it where it runs, or with --root / --search):\n",
        red, reset);
    for (const auto& name : report.unresolved) out += "    not resolved  " + name + "\n";
    return out;
  }
  if (!report.uses_cuda) return out + "  not a CUDA program (nothing in its tree loads libcuda.so.1)\n";
  for (const auto& load : report.loads) {
    bool ok = load.verdict == DoctorVerdict::Ok;
    out += fmt::format("  libcuda.so.1 for {} ({}):\n", load.loader, load.how);
    out += load.chosen ? "    loads    " + candidate_text(*load.chosen) + "\n" : "    loads    nothing\n";
    for (const auto& s : load.shadowed) out += "    shadows  " + candidate_text(s) + "\n";
    out +=
        fmt::format("    verdict  {}{}{}: {}\n", ok ? green : red, verdict_name(load.verdict), reset, load.explanation);
    if (!load.fix.empty()) out += "    fix      " + load.fix + "\n";
  }
  return out;
}

nlohmann::json doctor_json(const DoctorReport& report) {
  nlohmann::json loads = nlohmann::json::array();
  for (const auto& load : report.loads) {
    nlohmann::json shadowed = nlohmann::json::array();
    for (const auto& s : load.shadowed) shadowed.push_back(candidate_json(s));
    loads.push_back({{"loader", load.loader},
                     {"how", load.how},
                     {"chosen", load.chosen ? candidate_json(*load.chosen) : nlohmann::json(nullptr)},
                     {"shadowed", shadowed},
                     {"verdict", verdict_name(load.verdict)},
                     {"explanation", load.explanation},
                     {"fix", load.fix}});
  }
  return {{"file", report.file}, {"uses_cuda", report.uses_cuda},  {"unknown", report.unknown()}, {"ok", report.ok()},
          {"loads", loads},      {"unresolved", report.unresolved}};
}

nlohmann::json driver_facts_json(const DriverFacts& facts) {
  return {{"kernel_version", facts.kernel_version ? nlohmann::json(*facts.kernel_version) : nlohmann::json(nullptr)},
          {"source", facts.source},
          {"gpu_models", facts.gpu_models},
          {"host_kind", host_kind_name(facts.host_kind())},
          {"driver_loaded", facts.kernel_version.has_value() || facts.l4t.has_value()},
          {"l4t", facts.l4t ? l4t_json(*facts.l4t) : nlohmann::json(nullptr)}};
}

std::string format_host(const DriverFacts& facts) {
  if (!facts.l4t && !facts.kernel_version && facts.gpu_models.empty())
    return "host: no NVIDIA driver loaded and no GPU listed (/proc/driver/nvidia): which libcuda each program would "
           "load is predicted from the files; whether CUDA starts cannot be\n";
  if (!facts.l4t && facts.gpu_models.empty()) return "host: discrete GPU driver, no GPU listed\n";
  if (!facts.l4t) {
    std::string models;
    for (const auto& m : facts.gpu_models) models += (models.empty() ? "" : ", ") + m;
    return fmt::format("host: discrete GPU ({})\n", models);
  }
  std::string evidence;
  for (const auto& e : facts.l4t->evidence) evidence += (evidence.empty() ? "" : ", ") + e;
  return fmt::format("host: {} [{}]\n", describe_l4t(*facts.l4t), evidence);
}

namespace {

nlohmann::json observation_json(const LibcudaObservation& o) {
  return {{"pid", o.pid},
          {"requester", o.requester},
          {"observed", o.path ? nlohmann::json(*o.path) : nlohmann::json(nullptr)},
          {"predicted", o.predicted ? nlohmann::json(*o.predicted) : nlohmann::json(nullptr)},
          {"agrees", o.agrees()}};
}

std::string observation_text(const LibcudaObservation& o) {
  std::string observed = o.path ? *o.path : "nothing (the load failed)";
  std::string predicted = !o.predicted_load ? "no load from this object" : o.predicted ? *o.predicted : "nothing";
  return fmt::format("  observed (pid {}): {} loaded {}\n    predicted: {}: {}\n", o.pid, o.requester, observed,
                     predicted, o.agrees() ? "confirmed" : "the prediction differs");
}

}  // namespace

std::string format_doctor_run(const DoctorRun& run, const std::string& command, bool color) {
  std::string text = format_doctor(run.program, color);
  if (!run.program.uses_cuda && !run.program.unknown() && !run.requesters.empty())
    text += "  (the run loaded libcuda.so.1 from objects outside its tree, predicted below)\n";
  for (const auto& r : run.requesters) text += "loaded by the run: " + format_doctor(r, color);
  for (const auto& problem : run.problems) text += "  cannot predict for a requester the run saw: " + problem + "\n";
  text += fmt::format("run: {} exited with {}\n", command, run.exit_code);
  if (run.observations.empty()) text += "  observed: libcuda.so.1 was not loaded\n";
  for (const auto& o : run.observations) text += observation_text(o);
  return text;
}

nlohmann::json doctor_run_json(const DoctorRun& run) {
  nlohmann::json program = doctor_json(run.program);
  program["observed"] = nlohmann::json::array();
  for (const auto& o : run.observations) program["observed"].push_back(observation_json(o));
  program["exit_code"] = run.exit_code;
  nlohmann::json requesters = nlohmann::json::array();
  for (const auto& r : run.requesters) requesters.push_back(doctor_json(r));
  return {{"files", {program}}, {"run_requesters", requesters}, {"problems", run.problems}, {"ok", run.ok()}};
}

}  // namespace runpatch
