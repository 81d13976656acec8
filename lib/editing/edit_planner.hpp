// Plans an edit of one ELF image: first tries to fit everything into the
// existing tables (edit_planner.cpp), otherwise lays out a new segment at the
// end of the file (appended_segment.cpp). Planning only reads the image; the
// writes come back as an EditPlan, which edit_verifier.hpp checks.
#pragma once

#include "editing/plan_options.hpp"
#include "editing/planned_write.hpp"
#include "reading/elf_view.hpp"
#include "runpatch/editing/edit.hpp"

namespace runpatch {

template <class E>
Expected<EditPlan> plan_edit(const MappedElfView<E>& view, const ElfInfo& info, const PlanOptions& options,
                             const EditRequest& request);

#define RUNPATCH_EXTERN_PLAN_EDIT(E)                                                                        \
  extern template Expected<EditPlan> plan_edit(const MappedElfView<E>&, const ElfInfo&, const PlanOptions&, \
                                               const EditRequest&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_EXTERN_PLAN_EDIT)
#undef RUNPATCH_EXTERN_PLAN_EDIT

}  // namespace runpatch
