// Helpers to lay typed ELF structures into byte vectors.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace runpatch {

inline uint64_t align_up(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }
inline uint64_t align_down(uint64_t v, uint64_t a) { return a <= 1 ? v : v / a * a; }

template <class T>
std::vector<uint8_t> bytes_of(std::span<const T> items) {
  std::vector<uint8_t> out(items.size_bytes());
  if (!items.empty()) std::memcpy(out.data(), items.data(), out.size());
  return out;
}

template <class T>
T* struct_at(std::vector<uint8_t>& buffer, uint64_t offset) {
  return reinterpret_cast<T*>(buffer.data() + offset);  // every ELF struct here has alignment 1
}

}  // namespace runpatch
