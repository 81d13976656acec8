#include <algorithm>
#include <cstring>
#include <vector>

#include "editing/byte_buffer.hpp"
#include "editing/layout_math.hpp"
#include "editing/staged_commit.hpp"
#include "reading/elf_dispatch.hpp"

namespace runpatch {

namespace {

// The bytes [0, size) of the file as the plan's Commit writes leave them.
std::vector<uint8_t> front_after_commit(std::span<const uint8_t> file, const EditPlan& plan, uint64_t size) {
  std::vector<uint8_t> front(file.begin(), file.begin() + std::ptrdiff_t(std::min<uint64_t>(size, file.size())));
  front.resize(size, 0);
  for (const auto& w : plan.writes)
    if (w.phase == WritePhase::Commit && w.offset < size)
      std::memcpy(front.data() + w.offset, w.bytes.data(), std::min<uint64_t>(w.bytes.size(), size - w.offset));
  return front;
}

// The one write of the rebuilt segment over the earlier one; nullptr when
// anything else is written there too (a moved table, appended section headers).
PlannedWrite* rebuilt_segment_write(EditPlan& plan) {
  PlannedWrite* segment = nullptr;
  for (auto& w : plan.writes) {
    if (w.offset + w.bytes.size() <= *plan.reclaimed_from) continue;
    if (segment || w.phase != WritePhase::Prepare || w.kind != WriteKind::AppendedSegment) return nullptr;
    segment = &w;
  }
  return segment;
}

// The entries `entries` has in [from, to) moved `shift` further into the
// interim copy: in the file, and for a program in memory too.
template <class E>
void move_into_interim(std::span<elf::Phdr<E>> entries, uint64_t from, uint64_t to, uint64_t shift, bool addresses) {
  for (auto& ph : entries) {
    if (uint64_t(ph.p_offset) < from || uint64_t(ph.p_offset) >= to) continue;
    ph.p_offset = uint64_t(ph.p_offset) + shift;
    if (!addresses) continue;
    ph.p_vaddr = uint64_t(ph.p_vaddr) + shift;
    ph.p_paddr = uint64_t(ph.p_paddr) + shift;
  }
}

// The offset the interim copy of [from, to) goes to: past the end of the
// file, by a multiple of the alignment of every entry `entries` has in it
// (offset and address stay congruent); those entries moved there.
template <class E>
uint64_t shift_into_interim(std::span<elf::Phdr<E>> entries, uint64_t from, uint64_t to, uint64_t file_size) {
  uint64_t align = 1;
  for (const auto& ph : entries)
    if (ph.p_offset >= from && ph.p_offset < to) align = std::max<uint64_t>(align, std::max<uint64_t>(ph.p_align, 1));
  uint64_t shift = align_up(std::max<uint64_t>(file_size, to) - from, align);
  move_into_interim<E>(entries, from, to, shift, /*addresses=*/false);
  return shift;
}

// The bytes from offset 0 that switch readers to the interim copy and back:
// as they are, as the interim needs them, and as the edit leaves them.
struct Fronts {
  std::vector<uint8_t> old, interim, final;
  WriteKind to_interim, back;
};

// The plan's writes, staged: its other Prepare writes and the interim copy
// `shift` past the segment's place; the commit of the fronts to the interim;
// then (nothing reads the earlier segment) the segment in its place; the
// switch back. What only tools read (section headers, symbol values) is
// written with the segment, before the switch, as a staged table commit's is.
void write_staged(EditPlan& plan, PlannedWrite& segment, std::vector<uint8_t> interim_segment, uint64_t shift,
                  const Fronts& fronts) {
  uint64_t from = segment.offset;
  std::vector<PlannedWrite> staged;
  for (auto& w : plan.writes)
    if (w.phase == WritePhase::Prepare && &w != &segment) staged.push_back(std::move(w));
  staged.push_back({WritePhase::Prepare, from + shift, std::move(interim_segment), WriteKind::AppendedSegmentInterim});
  if (auto w = changed_bytes_write(WritePhase::Commit, 0, fronts.old, fronts.interim, fronts.to_interim))
    staged.push_back(std::move(*w));
  staged.push_back({WritePhase::Place, from, std::move(segment.bytes), WriteKind::AppendedSegment});
  if (auto w = changed_bytes_write(WritePhase::Switch, 0, fronts.interim, fronts.final, fronts.back))
    staged.push_back(std::move(*w));
  for (auto& w : plan.writes)
    if (w.phase == WritePhase::Cleanup) staged.push_back(std::move(w));
  plan.writes = std::move(staged);
}

// A program's interim copy moves in memory too: kernels before 5.18 and
// qemu-user hand it AT_PHDR as its load address plus e_phoff, so the copy's
// table must lie at the address that e_phoff past the end of the file names.
// The rebuilt segment keeps the first PT_LOAD's p_vaddr - p_offset (rule 5),
// so moving the copy's entries by the same `shift` in address and offset
// keeps that, as long as the copy lands above every other segment's memory
// (its entry is the last PT_LOAD) without a hole of more than kMaxInterimHole
// in the file. The dynamic entries into the segment then point into the copy.
constexpr uint64_t kMaxInterimHole = uint64_t(16) << 20;

// How far a program's interim copy of [from, to) goes, in the file and in
// memory alike: past the end of the file and above every other segment, by a
// multiple of the largest PT_LOAD alignment; none when the rebuilt segment's
// entry is not the last PT_LOAD or does not keep the first one's
// p_vaddr - p_offset, or when the copy would leave too large a hole.
struct ProgramInterim {
  uint64_t shift;      // in the file and in memory
  uint64_t seg_vaddr;  // the rebuilt segment's address, before the shift
};

template <class E>
std::optional<ProgramInterim> program_interim_shift(std::span<const elf::Phdr<E>> entries, uint64_t from, uint64_t to,
                                                    uint64_t file_size) {
  const elf::Phdr<E>* first_load = nullptr;
  const elf::Phdr<E>* segment = nullptr;
  uint64_t others_end = 0, align = 1;
  for (const auto& ph : entries) {
    if (ph.p_type != elf::PT_LOAD) continue;
    if (segment) return std::nullopt;  // the copy's entry must be the last PT_LOAD
    if (!first_load) first_load = &ph;
    if (ph.p_offset == from)
      segment = &ph;
    else
      others_end = std::max<uint64_t>(others_end, uint64_t(ph.p_vaddr) + uint64_t(ph.p_memsz));
    align = std::max<uint64_t>(align, ph.p_align);
  }
  if (!segment || segment == first_load || segment->p_filesz != to - from ||
      uint64_t(segment->p_vaddr) - from != uint64_t(first_load->p_vaddr) - uint64_t(first_load->p_offset))
    return std::nullopt;
  uint64_t past_file = align_up(std::max<uint64_t>(file_size, to) - from, align);
  uint64_t above = align_up(others_end, align), seg_vaddr = segment->p_vaddr;
  uint64_t shift = seg_vaddr + past_file >= above ? past_file : align_up(above - seg_vaddr, align);
  if (shift - past_file > kMaxInterimHole) return std::nullopt;
  return ProgramInterim{shift, seg_vaddr};
}

// The interim copy's dynamic entries that point into the segment (its
// strings, the tables it carries) point into the copy instead; false when
// the dynamic table is not in the segment or holds an entry relative to itself.
template <class E>
bool rebase_dynamic_into_interim(std::span<const elf::Phdr<E>> moved_entries, std::vector<uint8_t>& interim,
                                 uint64_t from, uint64_t to, uint64_t seg_vaddr, uint64_t shift) {
  using Dyn = elf::Dyn<E>;
  for (const auto& ph : moved_entries) {
    if (ph.p_type != elf::PT_DYNAMIC) continue;
    uint64_t rel = uint64_t(ph.p_offset) - shift - from;
    if (rel >= to - from || ph.p_filesz > to - from - rel) return false;
    for (uint64_t at = rel; at + sizeof(Dyn) <= rel + ph.p_filesz; at += sizeof(Dyn)) {
      Dyn* d = struct_at<Dyn>(interim, at);
      uint64_t tag = d->d_tag, value = d->d_val;
      if (tag == elf::DT_MIPS_RLD_MAP_REL) return false;
      bool table = tag == elf::DT_STRTAB || elf::is_table_found_through_dynamic(tag);
      if (table && value >= seg_vaddr && value < seg_vaddr + (to - from)) d->d_val = value + shift;
    }
  }
  return true;
}

// The program header table lies in the rebuilt segment (moved there by an
// earlier edit): the interim copy carries its own table, its entries into
// the segment pointing into the copy, and the ELF header's e_phoff is the
// commit (one sector), switched back once the segment is written in its
// place. A program's copy moves in memory too (program_interim_shift).
template <class E>
Expected<bool> stage_rebuild_with_table(const MappedElfView<E>& view, std::span<const uint8_t> file, EditPlan& plan,
                                        PlannedWrite& segment) {
  using Ehdr = elf::Ehdr<E>;
  using Phdr = elf::Phdr<E>;
  for (const auto& w : plan.writes)
    if (w.phase == WritePhase::Commit && w.offset + w.bytes.size() > sizeof(Ehdr)) return false;
  std::vector<uint8_t> final_header = front_after_commit(file, plan, sizeof(Ehdr));
  const Ehdr& new_eh = *struct_at<Ehdr>(final_header, 0);
  uint64_t from = segment.offset, to = from + segment.bytes.size(), phoff = new_eh.e_phoff;
  std::vector<uint8_t> interim_segment = segment.bytes;
  auto entries = std::span<Phdr>(struct_at<Phdr>(interim_segment, phoff - from), new_eh.e_phnum);
  uint64_t shift = 0;
  if (view.find_phdr(elf::PT_INTERP)) {
    auto program = program_interim_shift<E>(entries, from, to, file.size());
    if (!program) return false;
    shift = program->shift;
    move_into_interim<E>(entries, from, to, shift, /*addresses=*/true);
    if (!rebase_dynamic_into_interim<E>(entries, interim_segment, from, to, program->seg_vaddr, shift)) return false;
  } else {
    shift = shift_into_interim<E>(entries, from, to, file.size());
  }
  Fronts headers{{file.begin(), file.begin() + sizeof(Ehdr)},
                 final_header,
                 final_header,
                 WriteKind::ElfHeaderInterim,
                 WriteKind::ElfHeader};
  struct_at<Ehdr>(headers.interim, 0)->e_phoff = phoff + shift;
  write_staged(plan, segment, std::move(interim_segment), shift, headers);
  return true;
}

template <class E>
Expected<bool> stage_rebuild(const MappedElfView<E>& view, std::span<const uint8_t> file, EditPlan& plan) {
  using Ehdr = elf::Ehdr<E>;
  using Phdr = elf::Phdr<E>;
  if (plan.strategy != EditStrategy::Appended || !plan.reclaimed_from) return false;
  PlannedWrite* segment = rebuilt_segment_write(plan);
  if (!segment) return false;
  std::vector<uint8_t> header = front_after_commit(file, plan, sizeof(Ehdr));
  const Ehdr& new_eh = *struct_at<Ehdr>(header, 0);
  uint64_t phoff = new_eh.e_phoff, front_end = phoff + uint64_t(new_eh.e_phnum) * sizeof(Phdr);
  if (phoff >= segment->offset && front_end <= segment->offset + segment->bytes.size())
    return stage_rebuild_with_table(view, file, plan, *segment);
  // The table stays where it is, before the rebuilt bytes; so does every commit write.
  if (phoff != uint64_t(view.ehdr().e_phoff) || phoff < sizeof(Ehdr) || front_end > *plan.reclaimed_from) return false;
  for (const auto& w : plan.writes)
    if (w.phase == WritePhase::Commit && w.offset + w.bytes.size() > front_end) return false;
  std::vector<uint8_t> final_front = front_after_commit(file, plan, front_end);
  // The interim: entries into the rebuilt bytes point at a copy `shift` further,
  // a multiple of their alignment (offset and address stay congruent).
  Fronts tables{{file.begin(), file.begin() + std::ptrdiff_t(front_end)},
                final_front,
                final_front,
                WriteKind::ProgramHeadersToInterim,
                WriteKind::ProgramHeaders};
  uint64_t shift = shift_into_interim<E>(std::span<Phdr>(struct_at<Phdr>(tables.interim, phoff), new_eh.e_phnum),
                                         segment->offset, segment->offset + segment->bytes.size(), file.size());
  write_staged(plan, *segment, segment->bytes, shift, tables);
  return true;
}

}  // namespace

Expected<bool> stage_segment_rebuild(std::span<const uint8_t> file, const std::string& path, EditPlan& plan) {
  return visit_elf(file, path, [&](const auto& view) { return stage_rebuild(view, file, plan); });
}

}  // namespace runpatch
