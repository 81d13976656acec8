// The arithmetic of an appended segment, apart from any ELF structure so that
// each rule is unit-tested on its own (tests/unit/layout_math_test.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace runpatch::layout {

// The address for a segment starting at file offset `offset`: congruent to it
// modulo page (all the loader needs: p_offset ≡ p_vaddr mod p_align), at or
// above floor rounded up to a page, and never below the offset itself
// (qemu-user's loader miscomputes such segments). No file padding is needed.
uint64_t congruent_address(uint64_t offset, uint64_t floor, uint64_t page);

// Where a program header table moved to the end of a file of old_size bytes
// starts: ehdr_size past a tool_page boundary (binutils' strip and objcopy
// assume that of a table outside the first segment), so less than one
// tool_page of padding.
uint64_t moved_table_offset(uint64_t old_size, uint64_t tool_page, uint64_t ehdr_size);

// The offset at or after `offset` whose address is offset + delta and lies at
// or above floor rounded up to a page: for an executable whose first PT_LOAD's
// address - offset (delta, a multiple of page) must also hold for a moved
// program header table, as kernels before 5.18 compute AT_PHDR from it.
uint64_t offset_keeping_delta(uint64_t offset, uint64_t floor, uint64_t page, uint64_t delta);

// The old string table copied whole (every offset stays valid), each added
// string once in the order given, then `slack` zeros, so that a later edit
// that lengthens the last string a little (a runpath gaining an entry) fits
// in place. Slack is paid in every file edited: it stays small.
struct StringTable {
  std::vector<uint8_t> bytes;
  std::map<std::string, uint64_t> offsets;  // of each added string
};
StringTable extended_string_table(std::span<const uint8_t> old, const std::vector<std::string>& added, uint64_t slack);

// What goes into the new segment, in this order: the program header table
// (first, where objcopy/strip expect it), strings, dynamic section,
// interpreter, carried ranges (notes, tables) and a note.
struct SegmentParts {
  uint64_t phdr_table = 0;  // 0: the table stays where it is
  bool has_dynamic = false;
  uint64_t strtab = 0, dynamic = 0;
  uint64_t interp = 0;  // with its NUL; 0: it stays
  struct Carried {
    uint64_t size, align;
  };
  std::vector<Carried> carried;
  uint64_t note = 0;  // 0: none, or it gets a segment of its own
};
struct SegmentOffsets {
  uint64_t phdrs = 0, strtab = 0, dynamic = 0, interp = 0, note = 0;
  std::vector<uint64_t> carried;
  uint64_t size = 0;
};
SegmentOffsets lay_out_segment(const SegmentParts& parts);

}  // namespace runpatch::layout
