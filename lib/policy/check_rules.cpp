#include "runpatch/check.hpp"

namespace runpatch {

const std::vector<RuleInfo>& check_rules() {
  static const std::vector<RuleInfo> rules = {
      {"unresolved-needed", Severity::Error, "a DT_NEEDED library is not found by the loader's search"},
      {"driver-library", Severity::Info, "needs a library only the NVIDIA driver provides (the toolkit has a stub)"},
      {"driver-dir-missing", Severity::Error, "needs or dlopens libcuda.so.1 but the driver directory is not in the runpath"},
      {"compat-after-driver", Severity::Error, "a cuda_compat directory comes after the driver directory"},
      {"stubs-entry", Severity::Error, "a stubs directory is in the runpath: the link-time stub would load at run time"},
      {"forbidden-prefix", Severity::Error, "a runpath entry points into the build directory or another forbidden prefix"},
      {"relative-entry", Severity::Error, "an empty or relative runpath entry resolves against the current directory"},
      {"world-writable", Severity::Error, "a runpath directory is writable by everyone: anyone can plant a library"},
      {"missing-entry", Severity::Warning, "a runpath directory does not exist"},
      {"duplicate-entry", Severity::Warning, "a runpath entry appears more than once"},
      {"rpath-not-runpath", Severity::Warning, "DT_RPATH is used where DT_RUNPATH is expected"},
      {"wrong-interpreter", Severity::Error, "an executable's interpreter is not the expected one"},
      {"foreign-machine", Severity::Warning, "the file's class or machine differs from the rest of the tree"},
      {"cuda-version-mix", Severity::Error, "the resolved closure mixes CUDA versions: two SONAME majors of one library, or two CUDA package sets"},
      {"closure-bloat", Severity::Warning, "a runpath entry points into a -dev/-static/-doc output, the monolithic cudatoolkit or a compiler"},
      {"unused-entry", Severity::Info, "a runpath entry resolves nothing (what --shrink-rpath would drop) and keeps its store path alive"},
      {"ld-library-path-shadowing", Severity::Warning, "LD_LIBRARY_PATH overrides the library the runpath would load"},
      {"runtime-stub", Severity::Error, "the toolkit's libcuda stub is resolvable from a runtime runpath entry"},
      {"stale-ldcache", Severity::Error, "the resolution-cache note (.note.nixos.ldcache) no longer says what the runpath resolves"},
      {"compat-needs-driver", Severity::Error, "cuda_compat's libcuda cannot reach the driver's libnvrm_* libraries: no driver directory behind the compat directory, or none in its own runpath"},
      {"jetpack-cuda-range", Severity::Error, "with --jetpack: the package set's CUDA release is outside the JetPack's native CUDA and cuda_compat range"},
  };
  return rules;
}

Severity rule_severity(std::string_view id) {
  for (const auto& r : check_rules())
    if (id == r.id) return r.severity;
  return Severity::Error;
}

std::string severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

std::optional<Severity> parse_severity(const std::string& name) {
  if (name == "info") return Severity::Info;
  if (name == "warning") return Severity::Warning;
  if (name == "error") return Severity::Error;
  return std::nullopt;
}

bool CheckReport::any_at_least(Severity s) const {
  for (const auto& f : findings)
    if (f.severity >= s) return true;
  return false;
}

}  // namespace runpatch
