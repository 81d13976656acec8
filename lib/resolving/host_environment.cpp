// The running system's loader settings, as its ld.so reports them.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string_view>

#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

namespace {

// `ld.so --list-diagnostics` (glibc ≥ 2.33) prints key="value" lines.
std::map<std::string, std::string> loader_diagnostics(const std::string& loader) {
  std::map<std::string, std::string> values;
  std::string command = "'" + loader + "' --list-diagnostics 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return values;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe.get())) {
    std::string text(line);
    auto eq = text.find('=');
    if (eq == std::string::npos) continue;
    std::string value = text.substr(eq + 1);
    while (!value.empty() && (value.back() == '\n' || value.back() == '"')) value.pop_back();
    if (!value.empty() && value.front() == '"') value.erase(0, 1);
    values[text.substr(0, eq)] = value;
  }
  return values;
}

// The hwcap bits glibc < 2.37 turns into subdirectory names: those the CPU
// has among the "important" ones, highest bit first (their order in a path).
// Names are known for x86 (sysdeps/x86/dl-hwcap.h); other machines' bits
// are not x86's, so none is named for them.
std::vector<std::string> legacy_hwcap_names(std::map<std::string, std::string>& d, bool x86) {
  if (!x86) return {};
  unsigned long masked =
      std::strtoul(d["dl_hwcap"].c_str(), nullptr, 0) & std::strtoul(d["dl_hwcap_important"].c_str(), nullptr, 0);
  static const char* const kX86[] = {"sse2", "x86_64", "avx512_1"};
  std::vector<std::string> names;
  for (int bit = 2; bit >= 0; --bit)
    if (masked >> bit & 1) names.push_back(kX86[bit]);
  return names;
}

// Every combination of "tls", the platform and the hwcap names, in that
// order within a path, most components first (LD_DEBUG=libs on glibc 2.36:
// tls/x86_64/x86_64, tls/x86_64, tls/x86_64, tls, x86_64/x86_64, x86_64, x86_64).
std::vector<std::string> legacy_subdirs(const std::string& platform, const std::vector<std::string>& hwcaps) {
  std::vector<std::string> parts{"tls"};
  if (!platform.empty()) parts.push_back(platform);
  parts.insert(parts.end(), hwcaps.begin(), hwcaps.end());
  size_t k = parts.size();
  std::vector<std::string> out;
  for (size_t mask = (size_t{1} << k) - 1; mask > 0; --mask) {
    std::string path;
    for (size_t i = 0; i < k; ++i)
      if (mask >> (k - 1 - i) & 1) path += (path.empty() ? "" : "/") + parts[i];
    out.push_back(path);
  }
  return out;
}

}  // namespace

std::vector<std::string> split_search_path(const std::string& list) { return split_list(list, ":;"); }

void SearchEnvironment::complete_from_host_loader() {
  if (!ask_host_loader) return;
  ask_host_loader = false;
  // The loader that runs this very program is the host's.
  for (const char* host_loader :
       {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux.so.2", "/lib64/ld64.so.2",
        "/lib64/ld64.so.1", "/lib/ld-linux-armhf.so.3", "/lib/ld-linux-riscv64-lp64d.so.1"}) {
    if (::access(host_loader, X_OK) != 0) continue;
    auto d = loader_diagnostics(host_loader);
    if (d.empty()) return;
    if (lib.empty()) lib = d["dl_dst_lib"];
    if (platform.empty()) platform = d["dl_platform"];
    std::vector<std::string> dirs;
    for (int i = 0; d.count("path.system_dirs[0x" + std::to_string(i) + "]"); ++i) {
      std::string dir = d["path.system_dirs[0x" + std::to_string(i) + "]"];
      if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      dirs.push_back(dir);
    }
    if (!dirs.empty() && !default_dirs) default_dirs = dirs;
    std::string_view loader_path(host_loader);
    bool x86 = loader_path == "/lib64/ld-linux-x86-64.so.2" || loader_path == "/lib/ld-linux.so.2";
    legacy_hwcaps_subdirs = legacy_subdirs(d["dl_platform"], legacy_hwcap_names(d, x86));
    // dl_hwcaps_subdirs lists candidates best first; the active mask selects them.
    std::string subdirs = d["dl_hwcaps_subdirs"];
    unsigned long active = std::strtoul(d["dl_hwcaps_subdirs_active"].c_str(), nullptr, 0);
    size_t bit = 0;
    for (const auto& sub : split_runpath(subdirs)) {
      if (!sub.empty() && (active >> bit & 1)) {
        hwcaps_subdirs.push_back(sub);
        break;
      }
      ++bit;
    }
    return;
  }
}

SearchEnvironment SearchEnvironment::host(bool with_ld_library_path) {
  SearchEnvironment env;
  env.ask_host_loader = true;
  if (with_ld_library_path)
    if (const char* llp = std::getenv("LD_LIBRARY_PATH")) env.ld_library_path = split_search_path(llp);
  return env;
}

}  // namespace runpatch
