// glibc's binary /etc/ld.so.cache: the new "glibc-ld.so.cache1.1" format and
// the old "ld.so-1.7.0" one (alone, or followed by the new one).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "runpatch/expected.hpp"

namespace runpatch {

struct CacheEntry {
  std::string name;  // the SONAME / file name looked up
  std::string path;  // where it is
  int32_t flags = 0; // FLAG_ELF_LIBC6 | architecture bits
  uint64_t hwcap = 0;
};

Expected<std::vector<CacheEntry>> parse_ld_so_cache(std::span<const uint8_t> bytes, const std::string& path);
Expected<std::vector<CacheEntry>> read_ld_so_cache(const std::filesystem::path& path);

// The directories an ld.so.conf names, following `include` globs (relative to root).
std::vector<std::string> read_ld_so_conf(const std::filesystem::path& root, const std::string& conf = "/etc/ld.so.conf");

}  // namespace runpatch
