// Finds room for new strings inside an existing string table: the bytes that
// no surviving reference covers (byte 0, the empty string, always stays).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "editing/string_refs.hpp"

namespace runpatch {

class StringSpace {
 public:
  StringSpace(uint64_t table_size, std::vector<ByteRange> used);

  // Reserves len bytes (the string and its NUL) and returns their offset.
  std::optional<uint64_t> allocate(uint64_t len);

  // Reserves [at, at+len) if all of it is free.
  bool claim(uint64_t at, uint64_t len);

  // Zeroes (or sets to `fill`) the free bytes of `within` in `table` (bytes past its end are left).
  void zero_free_bytes(std::vector<uint8_t>& table, ByteRange within, uint8_t fill = 0) const;

 private:
  std::vector<ByteRange> free_;  // sorted, disjoint
};

}  // namespace runpatch
