// Nix store paths in runpath entries: which package, version and output an
// entry points into, and how many bytes it keeps alive.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace runpatch {

struct StorePath {
  std::string root;     // /nix/store/<hash>-<name>-<version>[-<output>]
  std::string name;     // cuda_cudart
  std::string version;  // 12.8.90
  std::string output;   // "" for out, else dev, static, lib, ...
};

// The store path an entry lies in, if any ("/nix/store/<hash>-..." anywhere in it; Nix's hashes are 32
// characters, any run of letters and digits is taken).
std::optional<StorePath> parse_store_path(const std::string& entry);

// "12.8" of a CUDA package set member (cuda_* packages carry the CUDA release).
std::optional<std::string> cuda_release_of(const StorePath& path);

// Bytes of regular files under dir (recursively, at most max_entries visited); nullopt if unreadable.
std::optional<uint64_t> directory_bytes(const std::filesystem::path& dir, size_t max_entries = 200000);

}  // namespace runpatch
