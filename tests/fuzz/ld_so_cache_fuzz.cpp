// Fuzz target: the ld.so.cache parser (both formats) on arbitrary bytes.
#include <cstdint>
#include <cstdlib>

#include "runpatch/resolving/ld_so_cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto layout = runpatch::ld_so_cache_layout(bytes, "fuzz-cache");
  auto entries = runpatch::parse_ld_so_cache(bytes, "fuzz-cache");
  if (entries && !layout) std::abort();  // a cache that parses has a layout
  if (layout && layout->entries_at + layout->count * layout->entry_size > size) std::abort();
  return 0;
}
