#include "runpatch/ld_so_cache.hpp"

#include <fmt/format.h>
#include <glob.h>

#include <cstring>
#include <fstream>
#include <set>

#include "runpatch/mapped_file.hpp"

namespace runpatch {

namespace {

constexpr char kOldMagic[] = "ld.so-1.7.0";          // 11 bytes used
constexpr char kNewMagic[] = "glibc-ld.so.cache1.1";  // magic + version, 20 bytes
constexpr size_t kOldHeader = 16, kOldEntry = 12, kNewHeader = 48, kNewEntry = 24;

class CacheReader {
 public:
  CacheReader(std::span<const uint8_t> bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  Expected<std::vector<CacheEntry>> parse() {
    if (starts_with(0, kNewMagic, 20)) return parse_new(0);
    if (!starts_with(0, kOldMagic, 11)) return error("not an ld.so.cache (unknown magic)", 0);
    if (bytes_.size() < kOldHeader) return error("truncated header", 0);
    uint64_t nlibs = u32(12, false);
    uint64_t entries_end = kOldHeader + nlibs * kOldEntry;
    if (nlibs > bytes_.size() / kOldEntry || entries_end > bytes_.size())
      return error(fmt::format("{} entries do not fit in the file", nlibs), 12);
    // A new-format cache may follow the old entries, 8-aligned; it is the richer one.
    uint64_t new_at = (entries_end + 7) & ~uint64_t(7);
    if (new_at + 20 <= bytes_.size() && starts_with(new_at, kNewMagic, 20)) return parse_new(new_at);
    std::vector<CacheEntry> entries;
    for (uint64_t i = 0; i < nlibs; ++i) {
      // Old-format strings are relative to the end of the entries.
      RUNPATCH_TRY(CacheEntry e, entry_at(kOldHeader + i * kOldEntry, entries_end, false));
      entries.push_back(std::move(e));
    }
    return entries;
  }

 private:
  Expected<std::vector<CacheEntry>> parse_new(uint64_t base) {
    if (base + kNewHeader > bytes_.size()) return error("truncated header", base);
    uint8_t endian = bytes_[base + 28] & 3;
    big_ = endian == 3 || (endian == 0 && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
    uint64_t nlibs = u32(base + 20, big_);
    uint64_t entries_end = base + kNewHeader + nlibs * kNewEntry;
    if (nlibs > bytes_.size() / kNewEntry || entries_end > bytes_.size())
      return error(fmt::format("{} entries do not fit in the file", nlibs), base + 20);
    std::vector<CacheEntry> entries;
    entries.reserve(nlibs);
    for (uint64_t i = 0; i < nlibs; ++i) {
      // New-format strings are relative to the new header.
      uint64_t at = base + kNewHeader + i * kNewEntry;
      RUNPATCH_TRY(CacheEntry e, entry_at(at, base, big_));
      e.hwcap = u64(at + 16, big_);
      entries.push_back(std::move(e));
    }
    return entries;
  }

  // flags, key and value: the first 12 bytes of an entry in both formats.
  Expected<CacheEntry> entry_at(uint64_t at, uint64_t strings, bool big) const {
    CacheEntry e;
    e.flags = static_cast<int32_t>(u32(at, big));
    RUNPATCH_TRY(e.name, string_at(strings, u32(at + 4, big)));
    RUNPATCH_TRY(e.path, string_at(strings, u32(at + 8, big)));
    return e;
  }

  bool starts_with(uint64_t at, const char* magic, size_t n) const {
    return at + n <= bytes_.size() && std::memcmp(bytes_.data() + at, magic, n) == 0;
  }
  uint64_t u32(uint64_t at, bool big) const {
    uint64_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint64_t(bytes_[at + (big ? 3 - i : i)]) << (8 * i);
    return v;
  }
  uint64_t u64(uint64_t at, bool big) const {
    return big ? (u32(at, true) << 32) | u32(at + 4, true) : u32(at, false) | (u32(at + 4, false) << 32);
  }
  Expected<std::string> string_at(uint64_t base, uint64_t offset) const {
    uint64_t at = base + offset;
    if (offset >= bytes_.size() || at >= bytes_.size()) return error(fmt::format("string offset {} is past the end", offset), base);
    const void* nul = std::memchr(bytes_.data() + at, 0, bytes_.size() - at);
    if (!nul) return error("string is not NUL-terminated", at);
    return std::string(reinterpret_cast<const char*>(bytes_.data() + at), static_cast<const uint8_t*>(nul) - (bytes_.data() + at));
  }
  Error error(std::string what, uint64_t at) const { return make_error(path_, std::move(what), at); }

  std::span<const uint8_t> bytes_;
  std::string path_;
  bool big_ = false;
};

void read_conf(const std::filesystem::path& root, const std::string& conf, std::vector<std::string>& dirs,
               std::set<std::string>& seen_files, int depth) {
  if (depth > 16 || !seen_files.insert(conf).second) return;
  std::ifstream in(root / std::filesystem::path(conf).relative_path());
  for (std::string line; std::getline(in, line);) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t") - first + 1);
    if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      std::string pattern = line.substr(line.find_first_not_of(" \t", 7));
      if (pattern[0] != '/') pattern = std::filesystem::path(conf).parent_path() / pattern;
      std::string rooted = (root / std::filesystem::path(pattern).relative_path()).string();
      glob_t matches{};
      if (::glob(rooted.c_str(), 0, nullptr, &matches) == 0) {
        std::string prefix = root.string() == "/" ? "" : root.string();
        for (size_t i = 0; i < matches.gl_pathc; ++i) {
          std::string match = matches.gl_pathv[i];
          read_conf(root, "/" + std::filesystem::path(match.substr(prefix.size())).relative_path().string(), dirs,
                    seen_files, depth + 1);
        }
      }
      ::globfree(&matches);
    } else if (line.rfind("hwcap", 0) != 0) {
      dirs.push_back(line);
    }
  }
}

}  // namespace

Expected<std::vector<CacheEntry>> parse_ld_so_cache(std::span<const uint8_t> bytes, const std::string& path) {
  return CacheReader(bytes, path).parse();
}

Expected<std::vector<CacheEntry>> read_ld_so_cache(const std::filesystem::path& path) {
  RUNPATCH_TRY(MappedFile file, MappedFile::open(path));
  return parse_ld_so_cache(file.bytes(), file.path());
}

std::vector<std::string> read_ld_so_conf(const std::filesystem::path& root, const std::string& conf) {
  std::vector<std::string> dirs;
  std::set<std::string> seen;
  read_conf(root, conf, dirs, seen, 0);
  return dirs;
}

}  // namespace runpatch
