// What the CUDA driver, cuda_compat and the toolkit's link-time stubs look
// like in paths and names: the one place the library knows them.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/cuda/l4t_versions.hpp"

namespace runpatch {

// Where NixOS puts the driver's libraries (addDriverRunpath's driverLink).
inline constexpr const char* kDefaultDriverDir = "/run/opengl-driver/lib";

// Whether an existing entry is a cuda_compat directory: a directory named
// "compat" inside a cuda_compat / cuda-compat package.
bool looks_like_compat_dir(const std::string& entry);
// Whether a runpath entry is a compat layer by name or by content: an
// absolute ".../compat" entry (what the compat hook writes, whatever this host
// holds there), or host_dir (the entry as this host sees it) holds a libcuda
// that is not the toolkit's stub, and the entry is neither a driver directory
// nor a system library directory (where a host's own driver installs libcuda).
bool is_compat_layer(const std::string& entry, const std::filesystem::path& host_dir,
                     std::span<const std::string> driver_dirs);
// Whether the libcuda in host_dir needs driver libraries its directory lacks
// (Jetson's cuda_compat libcuda needs the driver's libnvrm_gpu/libnvrm_mem):
// a layer that only works with the driver directory behind it.
bool libcuda_needs_driver_beside(const std::filesystem::path& host_dir);

// True for the CUDA toolkit's link-time stubs (lib/stubs/libcuda.so and friends).
bool is_stub_library(const std::string& path);
// The toolkit's stub libcuda wherever it lies, by its content: a libcuda.so*
// with a few kilobytes of code and no DT_NEEDED at all (the driver's libcuda
// has tens of megabytes of code, and it and every cuda_compat libcuda need
// libraries: libc, or L4T's libnvrm_*).
bool is_stub_libcuda(const ElfInfo& info);
// The same, or any libcuda.so* in a stubs/ directory (path: the file's).
bool is_stub_libcuda(const ElfInfo& info, std::string_view path);
// True for a directory of such stubs (".../stubs", with or without a trailing slash).
bool is_stubs_directory(const std::string& dir);

// Libraries that only the NVIDIA driver installs (libcuda, libnvidia-*, the
// Jetson driver's libnvrm_* ...): never resolvable at build time.
bool is_driver_library(const std::string& name);

// A dlopen the file does without declaring it in a dlopen note: libcudart
// loads the driver's libcuda.so.1. nullopt when there is none or the file's
// notes already declare it.
std::optional<DlopenDependency> undeclared_cuda_dlopen(const ElfInfo& info);

// Whether the file loads the driver's libcuda: a DT_NEEDED libcuda.so*, or one
// in its dlopen notes.
bool loads_libcuda(const ElfInfo& info);

// Whether the file carries a static CUDA runtime, which dlopens the driver's
// libcuda.so.1 by name without declaring it (libcublas, libcublasLt, libcufft,
// libnvrtc, libcusolver, programs linked with -cudart static): it names
// "libcuda.so.1" in its bytes and is not libcuda itself. bytes: the whole file.
bool carries_static_cuda_runtime(const ElfInfo& info, std::span<const uint8_t> bytes);
bool carries_static_cuda_runtime(const ElfInfo& info, const std::filesystem::path& file);

// The CUDA release a libcudart name (SONAME or file name) stands for: "13" from
// libcudart.so.13; only the major is known (libcudart.so.11.0 is every CUDA 11).
std::optional<CudaVersion> cudart_release(std::string_view name);

// The CUDA release a library's real path says, with its minor: a directory
// "cuda-12.6" (/usr/local/cuda-12.6/…) or the versioned file name the SONAME
// link points to (libcudart.so.12.2.140). nullopt when the path says neither.
std::optional<CudaVersion> cuda_release_in_path(std::string_view path);

}  // namespace runpatch
