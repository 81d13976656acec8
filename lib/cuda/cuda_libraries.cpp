#include "runpatch/cuda/cuda.hpp"

#include <cctype>

#include <string.h>

#include <algorithm>
#include <functional>
#include <cstdint>
#include <string_view>

#include "runpatch/cuda/l4t_versions.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/reading/mapped_file.hpp"

namespace runpatch {

namespace {

// The name the loader knows a file by: its DT_SONAME, else its file name.
std::string_view loaded_name(const ElfInfo& info) {
  return info.soname ? std::string_view(*info.soname) : basename_view(info.path);
}

}  // namespace

bool looks_like_compat_dir(const std::string& entry) {
  std::string trimmed = entry;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  bool named_compat = trimmed.ends_with("/compat");
  bool in_compat_package =
      trimmed.find("cuda_compat") != std::string::npos || trimmed.find("cuda-compat") != std::string::npos;
  return named_compat && in_compat_package;
}

bool is_compat_layer(const std::string& entry, const std::filesystem::path& host_dir,
                     std::span<const std::string> driver_dirs) {
  if (looks_like_compat_dir(entry)) return true;
  if (entry.empty() || entry[0] != '/' || is_stubs_directory(entry)) return false;
  std::string trimmed = entry;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  if (std::find(driver_dirs.begin(), driver_dirs.end(), trimmed) != driver_dirs.end()) return false;
  for (std::string_view system : {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"})
    if (trimmed == system || (trimmed.starts_with(system) && trimmed[system.size()] == '/')) return false;
  // A ".../compat" entry is cuda_compat's whatever this machine holds there
  // (the target's path the compat hook wrote, "written anyway"; an empty or
  // test layer): nothing else is named so in a runpath, and taking it for one
  // keeps it ahead of the driver whichever hook runs first.
  if (trimmed.ends_with("/compat")) return true;
  for (const char* name : {"libcuda.so.1", "libcuda.so"}) {
    auto info = read_elf_info(host_dir / name);
    if (info) return !is_stub_libcuda(*info);
  }
  return false;
}

bool libcuda_needs_driver_beside(const std::filesystem::path& host_dir) {
  auto info = read_elf_info(host_dir / "libcuda.so.1");
  if (!info) return false;
  std::error_code ec;
  return std::any_of(info->needed.begin(), info->needed.end(), [&](const std::string& name) {
    return is_driver_library(name) && !std::filesystem::exists(host_dir / name, ec);
  });
}

bool is_stub_libcuda(const ElfInfo& info) {
  constexpr uint64_t kStubCodeLimit = 64 * 1024;  // the CUDA 13 stub has 7 KiB of code
  // The stub links against nothing; the driver's libcuda and every compat
  // libcuda need libraries (libc, libdl, ...; L4T's compat libcuda libnvrm_*),
  // however little code a test build of them has.
  return loaded_name(info).starts_with("libcuda.so") && info.code_size < kStubCodeLimit && info.needed.empty();
}

bool is_stub_libcuda(const ElfInfo& info, std::string_view path) {
  if (!loaded_name(info).starts_with("libcuda.so")) return false;
  size_t slash = path.rfind('/');
  return (slash != std::string_view::npos && is_stubs_directory(std::string(path.substr(0, slash)))) ||
         is_stub_libcuda(info);
}

bool is_stub_library(const std::string& path) {
  return path.find("/stubs/") != std::string::npos || path.rfind("stubs/", 0) == 0;
}

bool is_stubs_directory(const std::string& dir) {
  std::string trimmed = dir;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  return trimmed == "stubs" || is_stub_library(trimmed + "/");
}

bool is_driver_library(const std::string& name) {
  for (const char* prefix : {"libcuda.so", "libnvidia-", "libnvcuvid.so", "libnvoptix.so"})
    if (name.rfind(prefix, 0) == 0) return true;
  return is_l4t_driver_library(name);  // libnvrm_* and friends: the Jetson driver's
}

std::optional<DlopenDependency> undeclared_cuda_dlopen(const ElfInfo& info) {
  constexpr std::string_view kLibcuda = "libcuda.so.1";
  if (!loaded_name(info).starts_with("libcudart.so")) return std::nullopt;
  bool declared = std::any_of(info.dlopen.begin(), info.dlopen.end(), [&](const DlopenDependency& d) {
    return std::find(d.sonames.begin(), d.sonames.end(), kLibcuda) != d.sonames.end();
  });
  if (declared) return std::nullopt;
  return DlopenDependency{{std::string(kLibcuda)}, "CUDA driver (dlopened by libcudart)", "required"};
}

bool loads_libcuda(const ElfInfo& info) {
  auto is_libcuda = [](const std::string& name) { return name.rfind("libcuda.so", 0) == 0; };
  if (std::any_of(info.needed.begin(), info.needed.end(), is_libcuda)) return true;
  for (const auto& d : info.dlopen)
    if (std::any_of(d.sonames.begin(), d.sonames.end(), is_libcuda)) return true;
  return undeclared_cuda_dlopen(info).has_value();
}

bool carries_static_cuda_runtime(const ElfInfo& info, std::span<const uint8_t> bytes) {
  if (loaded_name(info).starts_with("libcuda.so")) return false;  // libcuda names itself
  static constexpr std::string_view kNeedle("libcuda.so.1\0", 13);
  // glibc's memmem (two-way, vectorised) scans a 300 MB library in a few ms.
  return !bytes.empty() && ::memmem(bytes.data(), bytes.size(), kNeedle.data(), kNeedle.size()) != nullptr;
}

bool carries_static_cuda_runtime(const ElfInfo& info, const std::filesystem::path& file) {
  if (loaded_name(info).starts_with("libcuda.so")) return false;
  auto mapped = MappedFile::open(file);
  return mapped && carries_static_cuda_runtime(info, mapped->bytes());
}

std::optional<CudaVersion> cudart_release(std::string_view name) {
  constexpr std::string_view kCudart = "libcudart.so.";
  if (name.substr(0, kCudart.size()) != kCudart) return std::nullopt;
  std::string_view rest = name.substr(kCudart.size());
  auto v = parse_cuda_version(rest.substr(0, rest.find('.')));
  if (v) v->minor.reset();
  return v;
}

namespace {

// "12.6" at the start of text, with both numbers; nullopt otherwise.
std::optional<CudaVersion> major_minor_at(std::string_view text) {
  size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  size_t end = dot + 1;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == dot + 1) return std::nullopt;
  for (size_t i = 0; i < dot; ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  auto v = parse_cuda_version(text.substr(0, end));
  if (!v || !v->minor) return std::nullopt;
  return v;
}

}  // namespace

std::optional<CudaVersion> cuda_release_in_path(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  constexpr std::string_view kCudart = "libcudart.so.";
  if (name.starts_with(kCudart))
    if (auto v = major_minor_at(name.substr(kCudart.size()))) return v;
  for (size_t at = path.find("/cuda-"); at != std::string_view::npos; at = path.find("/cuda-", at + 1))
    if (auto v = major_minor_at(path.substr(at + 6))) return v;
  return std::nullopt;
}

}  // namespace runpatch
