#include "runpatch/resolving/ld_so_cache.hpp"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>
#include <set>

namespace runpatch {

namespace {

constexpr char kOldMagic[] = "ld.so-1.7.0";           // 11 bytes used
constexpr char kNewMagic[] = "glibc-ld.so.cache1.1";  // magic + version, 20 bytes
constexpr size_t kOldHeader = 16, kOldEntry = 12, kNewHeader = 48, kNewEntry = 24;

// Little helpers over the raw bytes; every read is bounds-checked by the caller's layout.
uint64_t read_u32(std::span<const uint8_t> bytes, uint64_t at, bool big) {
  uint64_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint64_t(bytes[at + (big ? 3 - i : i)]) << (8 * i);
  return v;
}

uint64_t read_u64(std::span<const uint8_t> bytes, uint64_t at, bool big) {
  return big ? (read_u32(bytes, at, true) << 32) | read_u32(bytes, at + 4, true)
             : read_u32(bytes, at, false) | (read_u32(bytes, at + 4, false) << 32);
}

bool starts_with(std::span<const uint8_t> bytes, uint64_t at, const char* magic, size_t n) {
  return at + n <= bytes.size() && std::memcmp(bytes.data() + at, magic, n) == 0;
}

// The NUL-terminated string at strings_base + offset, or nullopt when it leaves the file.
std::optional<std::string_view> string_at(std::span<const uint8_t> bytes, uint64_t strings_base, uint64_t offset) {
  uint64_t at = strings_base + offset;
  if (offset >= bytes.size() || at >= bytes.size()) return std::nullopt;
  const void* nul = std::memchr(bytes.data() + at, 0, bytes.size() - at);
  if (!nul) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(bytes.data() + at),
                          static_cast<size_t>(static_cast<const uint8_t*>(nul) - (bytes.data() + at)));
}

Expected<LdSoCacheLayout> new_format_layout(std::span<const uint8_t> bytes, const std::string& path, uint64_t base) {
  if (base + kNewHeader > bytes.size()) return make_error(ErrorCode::Malformed, path, "truncated header", base);
  uint8_t endian = bytes[base + 28] & 3;
  LdSoCacheLayout layout;
  layout.big_endian = endian == 3 || (endian == 0 && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
  layout.count = read_u32(bytes, base + 20, layout.big_endian);
  layout.entries_at = base + kNewHeader;
  layout.entry_size = kNewEntry;
  layout.strings_base = base;  // new-format strings are relative to the new header
  layout.has_hwcap = true;
  if (layout.count > bytes.size() / kNewEntry || layout.entries_at + layout.count * kNewEntry > bytes.size())
    return make_error(ErrorCode::Malformed, path, fmt::format("{} entries do not fit in the file", layout.count),
                      base + 20);
  return layout;
}

// flags, key and value: the first 12 bytes of an entry in both formats.
Expected<LdSoCacheEntry> entry_at(std::span<const uint8_t> bytes, const std::string& path,
                                  const LdSoCacheLayout& layout, uint64_t index) {
  uint64_t at = layout.entries_at + index * layout.entry_size;
  LdSoCacheEntry e;
  e.flags = static_cast<int32_t>(read_u32(bytes, at, layout.big_endian));
  for (auto [field, out] : {std::pair{at + 4, &e.name}, std::pair{at + 8, &e.path}}) {
    uint64_t offset = read_u32(bytes, field, layout.big_endian);
    auto text = string_at(bytes, layout.strings_base, offset);
    if (!text)
      return make_error(ErrorCode::Malformed, path,
                        fmt::format("string offset {} is past the end or not NUL-terminated", offset), field);
    *out = std::string(*text);
  }
  if (layout.has_hwcap) e.hwcap = read_u64(bytes, at + 16, layout.big_endian);
  return e;
}

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

Expected<LdSoCacheLayout> ld_so_cache_layout(std::span<const uint8_t> bytes, const std::string& path) {
  if (starts_with(bytes, 0, kNewMagic, 20)) return new_format_layout(bytes, path, 0);
  if (!starts_with(bytes, 0, kOldMagic, 11))
    return make_error(ErrorCode::Malformed, path, "not an ld.so.cache (unknown magic)", 0);
  if (bytes.size() < kOldHeader) return make_error(ErrorCode::Malformed, path, "truncated header", 0);
  LdSoCacheLayout layout;
  layout.count = read_u32(bytes, 12, false);
  layout.entries_at = kOldHeader;
  layout.entry_size = kOldEntry;
  uint64_t entries_end = kOldHeader + layout.count * kOldEntry;
  if (layout.count > bytes.size() / kOldEntry || entries_end > bytes.size())
    return make_error(ErrorCode::Malformed, path, fmt::format("{} entries do not fit in the file", layout.count), 12);
  // A new-format cache may follow the old entries, 8-aligned; it is the richer one.
  uint64_t new_at = (entries_end + 7) & ~uint64_t(7);
  if (starts_with(bytes, new_at, kNewMagic, 20)) return new_format_layout(bytes, path, new_at);
  layout.strings_base = entries_end;  // old-format strings are relative to the end of the entries
  return layout;
}

Expected<std::vector<LdSoCacheEntry>> parse_ld_so_cache(std::span<const uint8_t> bytes, const std::string& path) {
  RUNPATCH_TRY(LdSoCacheLayout layout, ld_so_cache_layout(bytes, path));
  std::vector<LdSoCacheEntry> entries;
  entries.reserve(layout.count);
  for (uint64_t i = 0; i < layout.count; ++i) {
    RUNPATCH_TRY(LdSoCacheEntry e, entry_at(bytes, path, layout, i));
    entries.push_back(std::move(e));
  }
  return entries;
}

Expected<std::vector<LdSoCacheEntry>> read_ld_so_cache(const std::filesystem::path& path) {
  RUNPATCH_TRY(MappedFile file, MappedFile::open(path));
  return parse_ld_so_cache(file.bytes(), file.path());
}

Expected<LdSoCache> LdSoCache::open(const std::filesystem::path& path) {
  RUNPATCH_TRY(MappedFile file, MappedFile::open(path));
  RUNPATCH_TRY(LdSoCacheLayout layout, ld_so_cache_layout(file.bytes(), file.path()));
  return LdSoCache(std::move(file), layout);
}

namespace {
// ldconfig's order (glibc's _dl_cache_libcmp): runs of digits compare as
// numbers, so libfoo.so.10 sorts after libfoo.so.9; a digit sorts after any
// other character. The numbers wrap at 32 bits as the loader's int does, so
// absurd version numbers still sort as ldconfig sorted them.
int library_name_order(std::string_view a, std::string_view b) {
  auto digit = [](std::string_view s, size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
  auto sign = [](uint32_t difference) { return static_cast<int32_t>(difference) < 0 ? -1 : 1; };
  size_t i = 0, j = 0;
  while (i < a.size()) {
    if (digit(a, i) && digit(b, j)) {
      uint32_t x = 0, y = 0;
      for (; digit(a, i); ++i) x = x * 10 + uint32_t(a[i] - '0');
      for (; digit(b, j); ++j) y = y * 10 + uint32_t(b[j] - '0');
      if (x != y) return sign(x - y);
    } else if (digit(a, i)) {
      return 1;
    } else if (digit(b, j)) {
      return -1;
    } else if (j >= b.size() || a[i] != b[j]) {
      return j >= b.size() ? 1 : sign(uint32_t(static_cast<unsigned char>(a[i])) - static_cast<unsigned char>(b[j]));
    } else {
      ++i, ++j;
    }
  }
  return j < b.size() ? -1 : 0;
}
}  // namespace

LdSoCache::LdSoCache(MappedFile file, LdSoCacheLayout layout) : file_(std::move(file)), layout_(layout) {}

std::string_view LdSoCache::key_of(uint64_t index) const {
  auto bytes = file_.bytes();
  uint64_t key_field = layout_.entries_at + index * layout_.entry_size + 4;
  return string_at(bytes, layout_.strings_base, read_u32(bytes, key_field, layout_.big_endian)).value_or("");
}

// A binary search over the mapped entries, as the loader does (ldconfig
// writes them in descending library_name_order): a run touches a few pages
// of the cache instead of indexing all of it.
std::vector<LdSoCacheEntry> LdSoCache::lookup(std::string_view name) const {
  uint64_t low = 0, high = layout_.count;  // [low, high) still to search
  std::optional<uint64_t> hit;
  while (low < high && !hit) {
    uint64_t middle = low + (high - low) / 2;
    int order = library_name_order(name, key_of(middle));
    if (order == 0)
      hit = middle;
    else if (order < 0)
      low = middle + 1;
    else
      high = middle;
  }
  std::vector<LdSoCacheEntry> found;
  if (!hit) return found;
  // Entries that compare equal are adjacent. Equal means equal in that order,
  // as for the loader: "libv.so.09" finds libv.so.9.
  auto same = [&](uint64_t i) { return library_name_order(name, key_of(i)) == 0; };
  uint64_t first = *hit, last = *hit + 1;
  while (first > 0 && same(first - 1)) --first;
  while (last < layout_.count && same(last)) ++last;
  for (uint64_t i = first; i < last; ++i)  // the cache's own order decides
    if (auto entry = entry_at(file_.bytes(), file_.path(), layout_, i)) found.push_back(std::move(*entry));
  return found;
}

std::vector<std::string> read_ld_so_conf(const std::filesystem::path& root, const std::string& conf) {
  std::vector<std::string> dirs;
  std::set<std::string> seen;
  read_conf(root, conf, dirs, seen, 0);
  return dirs;
}

}  // namespace runpatch
