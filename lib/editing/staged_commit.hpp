// A grown program header table committed by two one-sector writes instead of
// one write across several sectors (docs/editing.md §4, "Staged commit").
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "editing/planned_write.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

// When plan commits a library's ELF header together with a program header
// table that spans more than one sector (it grew where it is, over bytes the
// edit moved into the new segment), rewrites the plan so that every crash
// point leaves a loadable file: the table is first written past the new end
// and the ELF header switched to it (one sector), then the table is written
// at the front and the ELF header switched back (one sector); the interim
// copy is cut off. Returns whether the plan was staged. The final image is
// unchanged. Programs are never staged (the kernel gives them AT_PHDR from
// PT_PHDR, which must agree with e_phoff), nor plans whose commit touches
// other bytes of the old file.
Expected<bool> stage_table_commit(std::span<const uint8_t> file, const std::string& path, EditPlan& plan);

// When plan rebuilds the segment an earlier edit appended (writing over it,
// plan.reclaimed_from), rewrites it so that the file itself can be written,
// at the cost of the changed bytes instead of a copy of the file, every crash
// point leaving a loadable file: the new segment is first written past the
// end (at an offset congruent with its address) and the program headers
// pointed at it; then it is written in its place and the headers switched
// back; the interim copy is cut off. The final image is unchanged. Returns
// whether the plan was staged: not when the program header table or section
// headers move into the written-over bytes (their offsets would differ).
Expected<bool> stage_segment_rebuild(std::span<const uint8_t> file, const std::string& path, EditPlan& plan);

// The plan's state after its interim commit: the old file with the prepared
// bytes and the ELF header pointing at the interim table (for verification).
EditPlan interim_of_staged(const EditPlan& staged);

}  // namespace runpatch
