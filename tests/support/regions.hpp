// The byte ranges an edit may touch, found with readelf (not our reader):
// ELF + program headers, section headers, PT_INTERP, PT_NOTE (both may move out of the way), PT_DYNAMIC, the dynamic
// string table and the symbol tables, plus anything past the old end of the file; string_table_grown:
// from that table's end to its segment's last page's end (the tables after it moved there).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace runpatch::test {

struct Region {
  uint64_t begin, end;
  std::string what;
};

std::vector<Region> editable_regions(const std::filesystem::path& original, bool string_table_grown = false);

// "" when every byte that differs between a and b (below a's size) lies in one of regions.
std::string differences_outside(const std::filesystem::path& a, const std::filesystem::path& b,
                                const std::vector<Region>& regions);

}  // namespace runpatch::test
