#include "editing/staged_commit.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "editing/byte_buffer.hpp"
#include "reading/elf_dispatch.hpp"

namespace runpatch {

namespace {

// The bytes [0, size) of the file as the plan's Commit writes leave them.
std::vector<uint8_t> committed_front(std::span<const uint8_t> file, const EditPlan& plan, uint64_t size) {
  std::vector<uint8_t> front(file.begin(), file.begin() + std::ptrdiff_t(std::min<uint64_t>(size, file.size())));
  front.resize(size, 0);
  for (const auto& w : plan.writes) {
    if (w.phase != WritePhase::Commit || w.offset >= size) continue;
    uint64_t n = std::min<uint64_t>(w.bytes.size(), size - w.offset);
    std::memcpy(front.data() + w.offset, w.bytes.data(), n);
  }
  return front;
}

template <class E>
Expected<bool> stage(const MappedElfView<E>& view, std::span<const uint8_t> file, EditPlan& plan) {
  using Ehdr = elf::Ehdr<E>;
  using Phdr = elf::Phdr<E>;
  // Programs: the kernel's AT_PHDR comes from PT_PHDR, not from e_phoff.
  if (plan.strategy != EditStrategy::Appended || view.find_phdr(elf::PT_PHDR) || view.find_phdr(elf::PT_INTERP) ||
      uint16_t(view.ehdr().e_type) != elf::ET_DYN || commits_in_one_write(plan))
    return false;
  // The new header and table, as the Commit writes leave the front of the file.
  std::vector<uint8_t> header = committed_front(file, plan, sizeof(Ehdr));
  const Ehdr& new_eh = *struct_at<Ehdr>(header, 0);
  uint64_t phoff = new_eh.e_phoff, table_size = uint64_t(new_eh.e_phnum) * sizeof(Phdr);
  if (phoff < sizeof(Ehdr) || phoff != uint64_t(view.ehdr().e_phoff) || table_size == 0 ||
      phoff + table_size > file.size())
    return false;
  uint64_t front_end = phoff + table_size;
  // Every Commit write lies in the headers or past the old end (nothing references that yet).
  for (const auto& w : plan.writes)
    if (w.phase == WritePhase::Commit && w.offset + w.bytes.size() > front_end && w.offset < file.size()) return false;
  std::vector<uint8_t> front = committed_front(file, plan, front_end);

  std::vector<PlannedWrite> staged;
  for (auto& w : plan.writes)
    if (w.phase == WritePhase::Prepare || (w.phase == WritePhase::Commit && w.offset >= file.size()))
      staged.push_back({WritePhase::Prepare, w.offset, std::move(w.bytes), w.kind, std::move(w.subject)});
  uint64_t interim = align_up(std::max<uint64_t>(plan.new_size, file.size()), 8);
  std::vector<uint8_t> table(front.begin() + std::ptrdiff_t(phoff), front.end());
  staged.push_back({WritePhase::Prepare, interim, table, WriteKind::ProgramHeadersInterim});
  std::vector<uint8_t> interim_header(front.begin(), front.begin() + sizeof(Ehdr));
  struct_at<Ehdr>(interim_header, 0)->e_phoff = interim;
  staged.push_back({WritePhase::Commit, 0, std::move(interim_header), WriteKind::ElfHeaderInterim});
  // Now nothing reads the front past the ELF header: the table is written there.
  staged.push_back({WritePhase::Place, sizeof(Ehdr), std::vector<uint8_t>(front.begin() + sizeof(Ehdr), front.end()),
                    WriteKind::ProgramHeaders});
  for (auto& w : plan.writes)
    if (w.phase == WritePhase::Cleanup) staged.push_back(std::move(w));
  staged.push_back(
      {WritePhase::Switch, 0, std::vector<uint8_t>(front.begin(), front.begin() + sizeof(Ehdr)), WriteKind::ElfHeader});
  plan.writes = std::move(staged);
  return true;
}

}  // namespace

Expected<bool> stage_table_commit(std::span<const uint8_t> file, const std::string& path, EditPlan& plan) {
  return visit_elf(file, path, [&](const auto& view) { return stage(view, file, plan); });
}

EditPlan interim_of_staged(const EditPlan& staged) {
  EditPlan interim;
  interim.new_size = staged.new_size;  // grown by interim writes past it; a plan in the tables keeps the size
  interim.strategy = staged.strategy;
  interim.reclaimed_from = staged.reclaimed_from;
  interim.warnings = staged.warnings;  // they explain what the result lacks (a note not written)
  for (const auto& w : staged.writes)
    if (w.phase == WritePhase::Prepare || w.phase == WritePhase::Commit) {
      interim.writes.push_back(w);
      interim.new_size = std::max<uint64_t>(interim.new_size, w.offset + w.bytes.size());
    }
  return interim;
}

}  // namespace runpatch
