// glibc's binary /etc/ld.so.cache: the new "glibc-ld.so.cache1.1" format and
// the old "ld.so-1.7.0" one (alone, or followed by the new one).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/reading/expected.hpp"
#include "runpatch/reading/mapped_file.hpp"

namespace runpatch {

struct LdSoCacheEntry {
  std::string name;   // the SONAME / file name looked up
  std::string path;   // where it is
  int32_t flags = 0;  // FLAG_ELF_LIBC6 | architecture bits
  uint64_t hwcap = 0;
};

Expected<std::vector<LdSoCacheEntry>> parse_ld_so_cache(std::span<const uint8_t> bytes, const std::string& path);
Expected<std::vector<LdSoCacheEntry>> read_ld_so_cache(const std::filesystem::path& path);

// Where a cache's entry table and strings lie; validated against the file size.
struct LdSoCacheLayout {
  uint64_t entries_at = 0, count = 0, entry_size = 0;
  uint64_t strings_base = 0;  // string offsets are relative to this
  bool big_endian = false, has_hwcap = false;
};
Expected<LdSoCacheLayout> ld_so_cache_layout(std::span<const uint8_t> bytes, const std::string& path);

// A mapped cache answering lookups in place, as the loader does: a resolver
// asks for a few dozen names, so parsing (or even indexing) thousands of
// entries would cost more than every lookup together.
class LdSoCache {
 public:
  static Expected<LdSoCache> open(const std::filesystem::path& path);
  // Entries whose key is name, in cache order; entries with strings out of bounds are skipped.
  std::vector<LdSoCacheEntry> lookup(std::string_view name) const;

 private:
  LdSoCache(MappedFile file, LdSoCacheLayout layout);
  MappedFile file_;
  LdSoCacheLayout layout_;
  std::string_view key_of(uint64_t index) const;  // empty when out of bounds
};

// The directories an ld.so.conf names, following `include` globs (relative to root).
std::vector<std::string> read_ld_so_conf(const std::filesystem::path& root,
                                         const std::string& conf = "/etc/ld.so.conf");

}  // namespace runpatch
