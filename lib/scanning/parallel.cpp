#include <atomic>
#include <thread>

#include "runpatch/scanning/scan.hpp"

namespace runpatch {

void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& fn) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, count));
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  // Work stealing through one counter: files differ wildly in cost.
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) fn(i);
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
}

std::vector<Expected<ElfInfo>> read_elf_infos(const std::vector<std::filesystem::path>& paths, unsigned threads) {
  std::vector<std::optional<Expected<ElfInfo>>> slots(paths.size());
  parallel_for(paths.size(), threads, [&](size_t i) { slots[i].emplace(read_elf_info(paths[i])); });
  std::vector<Expected<ElfInfo>> results;
  results.reserve(paths.size());
  for (auto& slot : slots) results.push_back(std::move(*slot));
  return results;
}

}  // namespace runpatch
