// What the CUDA driver, cuda_compat and the toolkit's link-time stubs look
// like in paths and names: the one place the library knows them.
#pragma once

#include <optional>
#include <string>

#include "runpatch/elf_info.hpp"

namespace runpatch {

// Where NixOS puts the driver's libraries (addDriverRunpath's driverLink).
inline constexpr const char* kDefaultDriverDir = "/run/opengl-driver/lib";

// Whether an existing entry is a cuda_compat directory: a directory named
// "compat" inside a cuda_compat / cuda-compat package.
bool looks_like_compat_dir(const std::string& entry);

// True for the CUDA toolkit's link-time stubs (lib/stubs/libcuda.so and friends).
bool is_stub_library(const std::string& path);
// A libcuda.so* whose code is a few kilobytes: the toolkit's stub, wherever it
// lies (the real driver library has tens of megabytes of code).
bool is_stub_libcuda(const ElfInfo& info);
// True for a directory of such stubs (".../stubs", with or without a trailing slash).
bool is_stubs_directory(const std::string& dir);

// Libraries that only the NVIDIA driver installs (libcuda, libnvidia-*, the
// Jetson driver's libnvrm_* ...): never resolvable at build time.
bool is_driver_library(const std::string& name);

// A dlopen the file does without declaring it in a dlopen note: libcudart
// loads the driver's libcuda.so.1. nullopt when there is none or the file's
// notes already declare it.
std::optional<DlopenDependency> undeclared_cuda_dlopen(const ElfInfo& info);

}  // namespace runpatch
