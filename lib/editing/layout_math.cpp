#include "editing/layout_math.hpp"

#include <algorithm>

#include "editing/byte_buffer.hpp"

namespace runpatch::layout {

uint64_t congruent_address(uint64_t offset, uint64_t floor, uint64_t page) {
  uint64_t base = align_up(floor, page);
  uint64_t offset_page = align_down(offset, page);
  return base > offset_page ? offset + (base - offset_page) : offset;
}

uint64_t moved_table_offset(uint64_t old_size, uint64_t tool_page, uint64_t ehdr_size) {
  uint64_t offset = align_down(old_size, tool_page) + ehdr_size;
  return offset < old_size ? offset + tool_page : offset;
}

uint64_t offset_keeping_delta(uint64_t offset, uint64_t floor, uint64_t page, uint64_t delta) {
  uint64_t needed = congruent_address(offset, floor, page) - offset;
  return needed > delta ? offset + (needed - delta) : offset;
}

StringTable extended_string_table(std::span<const uint8_t> old, const std::vector<std::string>& added, uint64_t slack) {
  StringTable table{{old.begin(), old.end()}, {}};
  for (const auto& s : added) {
    if (table.offsets.count(s)) continue;
    table.offsets[s] = table.bytes.size();
    table.bytes.insert(table.bytes.end(), s.begin(), s.end());
    table.bytes.push_back(0);
  }
  table.bytes.resize(table.bytes.size() + slack, 0);
  return table;
}

SegmentOffsets lay_out_segment(const SegmentParts& parts) {
  SegmentOffsets at;
  uint64_t cursor = parts.phdr_table;
  if (parts.has_dynamic) {
    at.strtab = parts.phdr_table ? align_up(cursor, 16) : 0;
    at.dynamic = align_up(at.strtab + parts.strtab, 16);
    cursor = at.dynamic + parts.dynamic;
  }
  at.interp = cursor;
  cursor += parts.interp;
  for (const auto& c : parts.carried) {
    at.carried.push_back(align_up(cursor, c.align));
    cursor = at.carried.back() + c.size;
  }
  if (parts.note) {
    at.note = align_up(cursor, 4);
    cursor = at.note + parts.note;
  }
  at.size = cursor;
  return at;
}

}  // namespace runpatch::layout
