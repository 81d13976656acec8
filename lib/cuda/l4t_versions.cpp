// The JetPack table. Source: jetpack-nixos, "Pill 06: CUDA, cuDNN, TensorRT &
// GPU Packages", section "CUDA Version Mapping" (JetPack | L4T | Native CUDA |
// cuda_compat Range); docs/doctor.md ("Jetson") shows the same rows.
#include "runpatch/cuda/l4t_versions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

namespace runpatch {

namespace {

constexpr std::array<JetpackRelease, 3> kReleases = {{
    {"5.1.5", {35, 6, 2}, {11, 4}, std::nullopt, CudaVersion{12, 2}},        // compat: up to 12.2
    {"6.2.1", {36, 4, 4}, {12, 6}, CudaVersion{12, 4}, CudaVersion{12, 9}},  // compat: 12.4 - 12.9
    {"7.0", {38, 2, 1}, {13, 0}, std::nullopt, std::nullopt},                // no cuda_compat
}};

// Dotted decimal numbers, at most `most` of them, each at most 4 digits.
std::optional<std::vector<int>> dotted_numbers(std::string_view text, size_t most) {
  std::vector<int> out;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view piece = text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    int value = 0;
    auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (piece.empty() || piece.size() > 4 || ec != std::errc() || end != piece.data() + piece.size())
      return std::nullopt;
    out.push_back(value);
    if (out.size() > most) return std::nullopt;
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

// <0, 0, >0; a side without a minor compares by major only.
int compare(const CudaVersion& a, const CudaVersion& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (!a.minor || !b.minor || *a.minor == *b.minor) return 0;
  return *a.minor < *b.minor ? -1 : 1;
}

}  // namespace

std::optional<CudaVersion> parse_cuda_version(std::string_view text) {
  auto n = dotted_numbers(text, 3);  // "12.6.85": the patch level does not matter here
  if (!n) return std::nullopt;
  CudaVersion v{(*n)[0], std::nullopt};
  if (n->size() > 1) v.minor = (*n)[1];
  return v;
}

std::string cuda_version_text(const CudaVersion& v) {
  return v.minor ? fmt::format("{}.{}", v.major, *v.minor) : fmt::format("{}", v.major);
}

std::optional<L4tVersion> parse_l4t_version(std::string_view text) {
  if (!text.empty() && (text[0] == 'R' || text[0] == 'r')) text.remove_prefix(1);
  auto n = dotted_numbers(text, 3);
  if (!n || n->size() < 2) return std::nullopt;
  return L4tVersion{(*n)[0], (*n)[1], n->size() > 2 ? (*n)[2] : 0};
}

std::string l4t_version_text(const L4tVersion& v) { return fmt::format("{}.{}.{}", v.major, v.minor, v.patch); }

std::span<const JetpackRelease> jetpack_releases() { return kReleases; }

std::optional<JetpackTarget> find_jetpack_release(std::string_view text) {
  bool l4t = !text.empty() && (text[0] == 'R' || text[0] == 'r');
  std::string_view digits = l4t ? text.substr(1) : text;
  auto n = dotted_numbers(digits, 3);
  if (!n || n->empty()) return std::nullopt;
  l4t = l4t || (*n)[0] >= 30;  // JetPack majors are single digits, L4T's are 32 and up
  for (const auto& r : kReleases) {
    int major = l4t ? r.l4t.major : r.jetpack[0] - '0';
    if (major != (*n)[0]) continue;
    bool line_only = n->size() == 1;
    bool exact = line_only || (l4t ? parse_l4t_version(text) == r.l4t : r.jetpack == digits);
    return JetpackTarget{&r, exact};
  }
  return std::nullopt;
}

const JetpackRelease* find_jetpack(std::string_view version) {
  auto target = find_jetpack_release(version);
  return target ? target->release : nullptr;
}

L4tMatch find_l4t(const L4tVersion& version) {
  for (const auto& r : kReleases)
    if (r.l4t.major == version.major) return {&r, r.l4t == version};
  return {};
}

bool compat_in_range(const JetpackRelease& release, const CudaVersion& compat) {
  if (!release.compat_to) return false;
  if (compare(compat, *release.compat_to) > 0) return false;
  return !release.compat_from || compare(compat, *release.compat_from) >= 0;
}

bool package_set_runs(const JetpackRelease& release, const CudaVersion& package_set) {
  if (package_set.major < release.native_cuda.major) return false;
  const CudaVersion& top = release.compat_to && compare(*release.compat_to, release.native_cuda) > 0
                               ? *release.compat_to
                               : release.native_cuda;
  return compare(package_set, top) <= 0;
}

bool is_l4t_driver_library(std::string_view name) {
  for (std::string_view prefix : {"libnvrm_", "libnvdla", "libnvos.", "libnvsci", "libnvsocsys.", "libnvidia-"})
    if (name.substr(0, prefix.size()) == prefix) return true;
  return false;
}

std::string describe_cuda_range(const JetpackRelease& release) {
  std::string native = "native CUDA " + cuda_version_text(release.native_cuda);
  if (!release.compat_to) return native + ", no cuda_compat";
  if (!release.compat_from) return native + ", cuda_compat up to " + cuda_version_text(*release.compat_to);
  return fmt::format("{}, cuda_compat {}-{}", native, cuda_version_text(*release.compat_from),
                     cuda_version_text(*release.compat_to));
}

}  // namespace runpatch
