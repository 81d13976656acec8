// Jetson releases as data: JetPack -> L4T -> the CUDA it ships -> the CUDA
// versions cuda_compat adds on it. doctor judges an L4T host with it, check
// --jetpack a package set.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace runpatch {

// A CUDA release "12.6"; minor is nullopt when only the major is known
// (a SONAME like libcudart.so.13 says only that).
struct CudaVersion {
  int major = 0;
  std::optional<int> minor;
  friend constexpr bool operator==(const CudaVersion&, const CudaVersion&) = default;
};
std::optional<CudaVersion> parse_cuda_version(std::string_view text);  // "12", "12.6", "12.6.85"
std::string cuda_version_text(const CudaVersion& v);

// An L4T release "36.4.4" (R36, REVISION 4.4).
struct L4tVersion {
  int major = 0, minor = 0, patch = 0;
  friend constexpr bool operator==(const L4tVersion&, const L4tVersion&) = default;
};
std::optional<L4tVersion> parse_l4t_version(std::string_view text);  // "36.4.4", "R36.4.4", "36.4"
std::string l4t_version_text(const L4tVersion& v);                   // "36.4.4"

struct JetpackRelease {
  std::string_view jetpack;                // "6.2.1"
  L4tVersion l4t;                          // R36.4.4
  CudaVersion native_cuda;                 // what its libcuda (l4t-cuda) implements
  std::optional<CudaVersion> compat_from;  // lowest cuda_compat release; nullopt: "up to compat_to"
  std::optional<CudaVersion> compat_to;    // highest cuda_compat release; nullopt: no cuda_compat at all
};

// The table, oldest first.
std::span<const JetpackRelease> jetpack_releases();

// A JetPack release ("6", "6.0", "6.2.1", "5.1.2") or an L4T one ("R36.4.4",
// "36.3"), and the row that describes it. The table has one row per major
// release line (JetPack 5 = L4T R35, 6 = R36, 7 = R38), the newest of its
// line; every release of a line shares that driver branch, so a release
// between rows is judged by its line's row, and exact says whether the row
// is that very release (a bare major, "6" or "R36", names the line: exact).
struct JetpackTarget {
  const JetpackRelease* release = nullptr;
  bool exact = false;
};
std::optional<JetpackTarget> find_jetpack_release(std::string_view text);
// The row of a release, exactly or by its line (find_jetpack_release).
const JetpackRelease* find_jetpack(std::string_view version);

// The row of the host's L4T release line (the same R number); exact says
// whether the row is that very release or only its line.
struct L4tMatch {
  const JetpackRelease* release = nullptr;
  bool exact = false;
};
L4tMatch find_l4t(const L4tVersion& version);

// Whether a cuda_compat of this CUDA release works on the JetPack: inside
// [compat_from, compat_to] (a major-only version compares by major).
bool compat_in_range(const JetpackRelease& release, const CudaVersion& compat);

// Whether programs of a CUDA package set of this release run on the
// JetPack: from its native CUDA's major up to the top of its compat range
// (up to the native CUDA itself when it has none).
bool package_set_runs(const JetpackRelease& release, const CudaVersion& package_set);

// A user-space library of the L4T driver that cuda_compat's libcuda needs
// from the driver directory: libnvrm_mem.so, libnvrm_gpu.so, libnvdla_runtime.so,
// libnvos.so, libnvsciipc.so, libnvsocsys.so, libnvidia-*.
bool is_l4t_driver_library(std::string_view name);

// "native CUDA 12.6, cuda_compat 12.4–12.9" / "native CUDA 13.0, no cuda_compat".
std::string describe_cuda_range(const JetpackRelease& release);

}  // namespace runpatch
