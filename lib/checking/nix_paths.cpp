#include "checking/nix_paths.hpp"

#include <cctype>
#include <string_view>

namespace runpatch {

std::optional<StorePath> parse_store_path(const std::string& entry) {
  constexpr std::string_view kStore = "/nix/store/";
  auto at = entry.find(kStore);
  if (at == std::string::npos) return std::nullopt;
  size_t hash_at = at + kStore.size();
  // Nix's hashes are 32 characters; a test store or another tool's may differ: any run of letters and digits.
  size_t hash_end = hash_at;
  while (hash_end < entry.size() && std::isalnum(static_cast<unsigned char>(entry[hash_end]))) ++hash_end;
  if (hash_end == hash_at || hash_end >= entry.size() || entry[hash_end] != '-') return std::nullopt;
  size_t end = entry.find('/', hash_at);
  StorePath p;
  p.root = entry.substr(0, end);
  size_t name_at = hash_end + 1;
  std::string rest = entry.substr(name_at, end == std::string::npos ? std::string::npos : end - name_at);
  // name-version[-output]: the version starts at the first "-<digit>".
  size_t dash = std::string::npos;
  for (size_t i = 0; i + 1 < rest.size(); ++i)
    if (rest[i] == '-' && std::isdigit(static_cast<unsigned char>(rest[i + 1]))) {
      dash = i;
      break;
    }
  if (dash == std::string::npos) {
    // No version (a derivation named without one): Nix still names an output
    // other than out "<name>-<output>".
    p.name = rest;
    for (std::string_view output : {"dev", "lib", "bin", "static", "doc", "devdoc", "man", "info"}) {
      std::string suffix = "-" + std::string(output);
      if (rest.size() > suffix.size() && rest.ends_with(suffix)) {
        p.name = rest.substr(0, rest.size() - suffix.size());
        p.output = output;
        break;
      }
    }
    return p;
  }
  p.name = rest.substr(0, dash);
  std::string tail = rest.substr(dash + 1);
  size_t next = tail.find('-');
  p.version = tail.substr(0, next);
  if (next != std::string::npos) p.output = tail.substr(next + 1);
  return p;
}

std::optional<std::string> cuda_release_of(const StorePath& path) {
  if (path.name.rfind("cuda_", 0) != 0 && path.name != "cudatoolkit") return std::nullopt;
  auto first = path.version.find('.');
  if (first == std::string::npos) return std::nullopt;
  auto second = path.version.find('.', first + 1);
  return path.version.substr(0, second);
}

std::optional<uint64_t> directory_bytes(const std::filesystem::path& dir, size_t max_entries) {
  std::error_code ec;
  uint64_t total = 0;
  size_t seen = 0;
  std::filesystem::recursive_directory_iterator it(dir, std::filesystem::directory_options::skip_permission_denied, ec);
  if (ec) return std::nullopt;
  for (; it != std::filesystem::recursive_directory_iterator() && seen < max_entries; it.increment(ec), ++seen) {
    if (ec) break;
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += it->file_size(ec);
  }
  return total;
}

}  // namespace runpatch
