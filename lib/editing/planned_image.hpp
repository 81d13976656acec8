// The result of an edit plan as a file image, never materialized: the
// original with the writes laid over it in the order they are applied
// (prepare, commit, cleanup), zeros past its end, cut at the new size. The
// verifier reads it through the same reader as any file; the header-field
// edits find where the result keeps its tables.
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "editing/planned_write.hpp"
#include "reading/file_reader.hpp"

namespace runpatch {

class PlannedImage {
 public:
  PlannedImage(std::span<const uint8_t> original, const EditPlan& plan) : original_(original), size_(plan.new_size) {
    for (auto phase : kWritePhases)
      for (const auto& w : plan.writes)
        if (w.phase == phase) writes_.push_back(&w);
  }

  bool read(uint64_t offset, uint64_t length, uint8_t* out) const {
    if (offset > size_ || length > size_ - offset) return false;
    uint64_t end = offset + length;
    // Only bytes past the original file start as zeros: the rest is copied over
    // (zeroing a big segment first cost as much as the copy).
    uint64_t copied = offset < original_.size() ? std::min<uint64_t>(end, original_.size()) - offset : 0;
    if (copied > 0) std::memcpy(out, original_.data() + offset, copied);
    std::memset(out + copied, 0, length - copied);
    for (const PlannedWrite* w : writes_) {
      uint64_t from = std::max(offset, w->offset), to = std::min(end, w->offset + w->bytes.size());
      if (from < to) std::memcpy(out + (from - offset), w->bytes.data() + (from - w->offset), to - from);
    }
    return true;
  }

  // The original's bytes where no write touches [offset, offset + length), else null.
  const uint8_t* unchanged(uint64_t offset, uint64_t length) const {
    if (offset > original_.size() || length > original_.size() - offset) return nullptr;
    for (const PlannedWrite* w : writes_)
      if (w->offset < offset + length && offset < w->offset + w->bytes.size()) return nullptr;
    return original_.data() + offset;
  }

  // A reader over the image; it refers to this object, which must outlive it.
  // Ranges the plan leaves alone (most of a big library) are read in place.
  FileReader reader(const std::string& path) const {
    return FileReader::from_source(
        [this](uint64_t offset, uint64_t length, uint8_t* out) { return read(offset, length, out); }, size_, path,
        [this](uint64_t offset, uint64_t length) { return unchanged(offset, length); });
  }

 private:
  std::span<const uint8_t> original_;
  uint64_t size_;
  std::vector<const PlannedWrite*> writes_;
};

}  // namespace runpatch
