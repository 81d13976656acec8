#include "editing/string_space.hpp"

#include <algorithm>

namespace runpatch {

StringSpace::StringSpace(uint64_t table_size, std::vector<ByteRange> used) {
  used.push_back({0, 1});
  std::sort(used.begin(), used.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  uint64_t cursor = 0;
  for (const auto& r : used) {
    if (r.begin > cursor) free_.push_back({cursor, std::min(r.begin, table_size)});
    cursor = std::max(cursor, r.end);
  }
  if (cursor < table_size) free_.push_back({cursor, table_size});
}

std::optional<uint64_t> StringSpace::allocate(uint64_t len) {
  // Best fit keeps large runs (our own slack) for later, longer strings. The
  // end of the run: a runpath that a later edit prepends to (the driver, a
  // compat directory) then ends where it ended, its old bytes unchanged, so
  // that edit is one write, where one edit of the original puts it too.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->end - it->begin >= len && (best == free_.end() || it->end - it->begin < best->end - best->begin)) best = it;
  if (best == free_.end()) return std::nullopt;
  best->end -= len;
  uint64_t at = best->end;
  if (best->begin == best->end) free_.erase(best);
  return at;
}

bool StringSpace::claim(uint64_t at, uint64_t len) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (at < it->begin || at + len > it->end) continue;
    ByteRange after{at + len, it->end};
    it->end = at;
    if (it->begin == it->end)
      it = free_.erase(it);
    else
      ++it;
    if (after.begin < after.end) free_.insert(it, after);
    return true;
  }
  return false;
}

void StringSpace::zero_free_bytes(std::vector<uint8_t>& table, ByteRange within, uint8_t fill) const {
  for (const auto& r : free_) {
    uint64_t from = std::max(r.begin, within.begin), to = std::min({r.end, within.end, uint64_t(table.size())});
    if (from < to) std::fill(table.begin() + from, table.begin() + to, fill);
  }
}

}  // namespace runpatch
