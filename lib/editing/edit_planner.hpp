// Plans an edit of one ELF image: first tries to fit everything into the
// existing tables (edit_planner.cpp), otherwise lays out a new segment at the
// end of the file (appended_segment.cpp). Planning only reads the image; the
// writes come back as an EditPlan, which edit_verifier.hpp checks.
#pragma once

#include "editing/planned_write.hpp"
#include "reading/elf_view.hpp"
#include "runpatch/edit.hpp"

namespace runpatch {

template <class E>
Expected<EditPlan> plan_edit(const ElfView<E>& view, const ElfInfo& info, const EditOptions& options,
                             const EditRequest& request);

extern template Expected<EditPlan> plan_edit(const ElfView<elf::Elf32LE>&, const ElfInfo&, const EditOptions&,
                                             const EditRequest&);
extern template Expected<EditPlan> plan_edit(const ElfView<elf::Elf32BE>&, const ElfInfo&, const EditOptions&,
                                             const EditRequest&);
extern template Expected<EditPlan> plan_edit(const ElfView<elf::Elf64LE>&, const ElfInfo&, const EditOptions&,
                                             const EditRequest&);
extern template Expected<EditPlan> plan_edit(const ElfView<elf::Elf64BE>&, const ElfInfo&, const EditOptions&,
                                             const EditRequest&);

}  // namespace runpatch
