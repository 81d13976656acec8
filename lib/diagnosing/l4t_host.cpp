// Recognising a Jetson: its GPU driver is part of L4T (kernel module nvgpu on
// JetPack 5/6, the open nvidia module on JetPack 7), the release is in
// /etc/nv_tegra_release and the device tree names a Tegra SoC.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string_view>

#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/diagnosing/doctor.hpp"

namespace runpatch {

namespace fs = std::filesystem;

namespace {

// At most 64 KiB: these are one-line or small procfs/sysfs files.
std::optional<std::string> read_text(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(1 << 16, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

bool nvgpu_loaded(const fs::path& proc_root) {
  std::error_code ec;
  if (fs::is_directory(proc_root / "sys/module/nvgpu", ec)) return true;  // also when built into the kernel
  auto modules = read_text(proc_root / "proc/modules");
  if (!modules) return false;
  std::string_view rest(*modules);
  while (!rest.empty()) {
    std::string_view line = rest.substr(0, rest.find('\n'));
    if (line.rfind("nvgpu ", 0) == 0) return true;
    rest.remove_prefix(std::min(rest.size(), line.size() + 1));
  }
  return false;
}

// "tegra234" from the device tree's NUL-separated compatible list ("nvidia,p3701-0005\0nvidia,tegra234\0").
std::optional<std::string> tegra_soc(const fs::path& proc_root) {
  for (const char* file : {"proc/device-tree/compatible", "sys/firmware/devicetree/base/compatible"}) {
    auto text = read_text(proc_root / file);
    if (!text) continue;
    std::string_view rest(*text);
    while (!rest.empty()) {
      std::string_view entry = rest.substr(0, rest.find('\0'));
      if (entry.rfind("nvidia,tegra", 0) == 0) return std::string(entry.substr(7));
      rest.remove_prefix(std::min(rest.size(), entry.size() + 1));
    }
  }
  return std::nullopt;
}

// The number after `key` in line, up to the next ',' or space: "36" after "# R", "4.4" after "REVISION:".
std::optional<std::string_view> field_after(std::string_view line, std::string_view key) {
  auto at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view value = line.substr(at + key.size());
  while (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  return value.substr(0, value.find_first_of(", ("));
}

// "# R36 (release), REVISION: 4.4, GCID: ..., BOARD: generic, EABI: aarch64, DATE: ..." -> 36.4.4.
void read_release(const fs::path& file, const std::string& text, L4tFacts& facts) {
  std::string_view line = std::string_view(text).substr(0, text.find('\n'));
  auto major = field_after(line, "# R");
  auto revision = field_after(line, "REVISION:");
  std::optional<L4tVersion> release;
  if (major && revision && !major->empty())
    release = parse_l4t_version(std::string(*major) + "." + std::string(*revision));
  if (!release) {
    facts.release_problem =
        fmt::format("{}: the first line is not \"# R<release> (release), REVISION: <x.y>, ...\"", file.string());
    return;
  }
  facts.release = release;
  facts.release_source = file.string();
  facts.jetpack = find_l4t(*release);
}

}  // namespace

std::string host_kind_name(HostKind kind) { return kind == HostKind::L4t ? "l4t" : "discrete"; }

std::optional<L4tFacts> read_l4t_facts(const fs::path& proc_root, const fs::path& root) {
  L4tFacts facts;
  facts.nvgpu = nvgpu_loaded(proc_root);
  if (facts.nvgpu) facts.evidence.push_back("nvgpu kernel module");
  if (auto soc = tegra_soc(proc_root)) {
    facts.soc = *soc;
    facts.evidence.push_back("device tree nvidia," + *soc);
  }
  fs::path release_file = under_root(root, "/etc/nv_tegra_release");
  if (auto text = read_text(release_file)) {
    facts.evidence.push_back("/etc/nv_tegra_release");
    read_release(release_file, *text, facts);
  } else {
    facts.release_problem = fmt::format("{} is missing", release_file.string());
  }
  if (facts.evidence.empty()) return std::nullopt;
  return facts;
}

}  // namespace runpatch
