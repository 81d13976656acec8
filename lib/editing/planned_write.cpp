#include "editing/planned_write.hpp"

#include <cstring>

#include <fmt/format.h>

namespace runpatch {

namespace {

// [first, last) of the bytes where two equal-sized tables differ (first ==
// last when they do not): memcmp over blocks, a big library's string table
// is tens of megabytes and an edit changes a few bytes of it.
std::pair<size_t, size_t> differing_range(const std::vector<uint8_t>& before, const std::vector<uint8_t>& after) {
  constexpr size_t kBlock = 4096;
  size_t size = std::min(before.size(), after.size()), first = 0, last = size;
  while (first < size) {
    size_t n = std::min(kBlock, size - first);
    if (std::memcmp(before.data() + first, after.data() + first, n) != 0) break;
    first += n;
  }
  while (first < size && before[first] == after[first]) ++first;
  if (first == size) return {size, size};
  while (last - first > kBlock && std::memcmp(before.data() + last - kBlock, after.data() + last - kBlock, kBlock) == 0)
    last -= kBlock;
  while (last > first && before[last - 1] == after[last - 1]) --last;
  return {first, last};
}

}  // namespace

std::optional<PlannedWrite> changed_bytes_write(WritePhase phase, uint64_t offset, const std::vector<uint8_t>& before,
                                                const std::vector<uint8_t>& after, WriteKind kind) {
  auto [first, last] = differing_range(before, after);
  if (first >= last) return std::nullopt;
  return PlannedWrite{phase, offset + first, std::vector<uint8_t>(after.begin() + first, after.begin() + last), kind};
}

std::vector<PlannedWrite> changed_runs_writes(WritePhase phase, uint64_t offset, const std::vector<uint8_t>& before,
                                              const std::vector<uint8_t>& after, WriteKind kind, size_t joined_gap) {
  auto [first, last] = differing_range(before, after);
  std::vector<PlannedWrite> writes;
  for (size_t at = first; at < last;) {
    size_t end = at + 1;  // past the run's last differing byte
    for (size_t i = end; i < last; ++i) {
      if (before[i] != after[i])
        end = i + 1;
      else if (i + 1 - end > joined_gap)
        break;
    }
    writes.push_back({phase, offset + at,
                      std::vector<uint8_t>(after.begin() + std::ptrdiff_t(at), after.begin() + std::ptrdiff_t(end)),
                      kind});
    at = end;
    while (at < last && before[at] == after[at]) ++at;
  }
  return writes;
}

std::string PlannedWrite::description() const {
  if (kind == WriteKind::SymbolVersion) return fmt::format("version of {}", subject);
  return std::string(write_kind_name(kind));
}

}  // namespace runpatch
