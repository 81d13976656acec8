// Scans a loader file for the strings that decide its model (loader_file.hpp).
#include "resolving/loader_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <string_view>
#include <vector>

namespace runpatch {

namespace {

constexpr std::string_view kCacheSuffix = "/etc/ld.so.cache";
constexpr std::string_view kRelease = "release version ";
// Nixpkgs' ldcache.patch names the searches it adds "RESCACHE" (what LD_DEBUG=libs prints).
constexpr std::string_view kNoteMarker("RESCACHE\0", 9);
constexpr size_t kMostBytes = 64u << 20;  // a loader is well under a megabyte; bound a hostile file

std::optional<std::string> read_whole(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string bytes;
  char chunk[65536];
  ssize_t n = 0;
  while (bytes.size() < kMostBytes && (n = ::read(fd, chunk, sizeof chunk)) > 0)
    bytes.append(chunk, static_cast<size_t>(n));
  ::close(fd);
  if (n < 0) return std::nullopt;
  return bytes;
}

// The NUL-terminated string that ends at `end` (exclusive).
std::string_view string_ending_at(std::string_view bytes, size_t end) {
  size_t start = bytes.rfind('\0', end - 1);
  start = start == std::string_view::npos ? 0 : start + 1;
  return bytes.substr(start, end - start);
}

std::optional<std::string> cache_path(std::string_view bytes) {
  for (size_t at = bytes.find(kCacheSuffix); at != std::string_view::npos; at = bytes.find(kCacheSuffix, at + 1)) {
    size_t end = at + kCacheSuffix.size();
    if (end >= bytes.size() || bytes[end] != '\0') continue;
    std::string_view whole = string_ending_at(bytes, end);
    if (!whole.empty() && whole.front() == '/') return std::string(whole);
  }
  return std::nullopt;
}

std::optional<GlibcVersion> release(std::string_view bytes) {
  size_t at = bytes.find(kRelease);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = bytes.substr(at + kRelease.size(), 16);
  GlibcVersion v;
  size_t i = 0;
  auto number = [&](int& into) {
    size_t first = i;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])) && i - first < 4)
      into = into * 10 + (rest[i++] - '0');
    return i > first;
  };
  if (!number(v.major) || i >= rest.size() || rest[i++] != '.' || !number(v.minor)) return std::nullopt;
  return v;
}

}  // namespace

LoaderFileFacts read_loader_file(const std::filesystem::path& loader) {
  LoaderFileFacts facts;
  auto bytes = read_whole(loader);
  if (!bytes) return facts;
  facts.ld_so_cache = cache_path(*bytes);
  facts.version = release(*bytes);
  facts.reads_resolution_cache_note = bytes->find(kNoteMarker) != std::string::npos;
  return facts;
}

}  // namespace runpatch
