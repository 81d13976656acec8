// Fuzz target: parse -> an edit chosen by the input (layout for a copy or for
// one committing write; header fields and symbol renames too) -> plan ->
// verify (as the editor does before writing) -> apply the plan in memory -> re-parse. The result must parse, say what
// was asked, and keep every DT_NEEDED of the original; a resolution-cache note asked for must read back as built, one
// asked away must be gone.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "editing/edit_planner.hpp"
#include "editing/edit_verifier.hpp"
#include "editing/staged_commit.hpp"
#include "reading/elf_dispatch.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/resolving/resolution_cache.hpp"
#include "runpatch/editing/runpath_ops.hpp"

namespace {

// The input's size chooses the edit, so the whole input is the file and the
// fixture ELF files are valid seeds as they are.
struct FuzzEdit {
  runpatch::EditRequest request;
  std::string runpath;  // expected afterwards, when a runpath was set
};

FuzzEdit choose_edit(uint8_t selector, uint8_t length) {
  FuzzEdit edit;
  // Runpath entries that exist nowhere: the note, when written, holds "?" entries only (no file system luck).
  if (selector & 4)
    edit.request.resolution_cache =
        length % 2 ? runpatch::ResolutionCacheMode::Write : runpatch::ResolutionCacheMode::Remove;
  std::string entry = "/fuzz/" + std::string(length, 'r');
  switch (selector % 4) {
    case 0: edit.runpath = entry; break;  // fits or not, by length
    case 1: edit.runpath = entry + ":$ORIGIN/../lib:" + entry; break;
    case 2: edit.request.soname = "libfuzz.so." + std::to_string(length); return edit;
    default: edit.runpath = "/x"; break;  // shorter: in place
  }
  edit.request.runpath = runpatch::set_runpath_update(edit.runpath);
  return edit;
}

// The header fields and renames, chosen by another part of the size.
void add_header_edits(runpatch::EditRequest& request, unsigned choice) {
  if (choice % 3 == 1) {
    request.headers.osabi = 3;
    request.headers.exec_stack = true;
    request.headers.no_default_lib = true;
    request.headers.add_debug_tag = true;
    request.headers.clear_symbol_version = {"greet"};
  } else if (choice % 3 == 2) {
    request.rename_symbols = {{"greet", "greet_fuzz"}, {"printf", "printf_fuzz"}};
  }
}

// Written into the file, a plan may be staged (staged_commit.hpp): the writes
// in their order must give the same image, and the interim state (what a
// crash there leaves) is verified too.
void check_staged_commit(std::span<const uint8_t> bytes, const std::string& name, const runpatch::ElfInfo& before,
                         const runpatch::EditRequest& request, const runpatch::EditPlan& plan,
                         const std::vector<uint8_t>& expected) {
  runpatch::EditPlan staged = plan;
  auto did = runpatch::stage_table_commit(bytes, name, staged);
  if (!did) {
    if (did.error().what.empty()) std::abort();
    return;
  }
  if (!*did) return;
  std::vector<uint8_t> image(bytes.begin(), bytes.end());
  for (auto phase : runpatch::kWritePhases)
    for (const auto& w : staged.writes) {
      if (w.phase != phase) continue;
      if (w.offset + w.bytes.size() > image.size()) image.resize(w.offset + w.bytes.size());
      std::memcpy(image.data() + w.offset, w.bytes.data(), w.bytes.size());
    }
  image.resize(staged.new_size);
  if (image != expected) std::abort();  // staging changes the order of the writes, never the result
  // An interim state the verifier refuses makes the editor refuse the edit: it must say why.
  auto interim = runpatch::verify_edit_plan(bytes, name, before, request, runpatch::interim_of_staged(staged));
  if (!interim && interim.error().what.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzEdit edit = choose_edit(static_cast<uint8_t>(size % 8), static_cast<uint8_t>(size / 8));
  add_header_edits(edit.request, unsigned(size / 16));
  std::span<const uint8_t> bytes(data, size);
  const std::string name = "fuzz-input";
  auto before = runpatch::read_elf_info(bytes, name);
  if (!before) return 0;
  runpatch::PlanOptions options;
  options.in_place = (size / 8) % 2 == 1;
  options.commit_in_elf_header = (size / 8) % 4 == 3;  // as the editor plans first: one write, or nothing
  edit.request.resolution_root = "/nonexistent-fuzz-root";
  auto plan = runpatch::visit_elf(
      bytes, name, [&](const auto& view) { return runpatch::plan_edit(view, *before, options, edit.request); });
  if (!plan) {
    if (plan.error().what.empty()) std::abort();
    return 0;
  }
  // What the editor would write passes its verification (edit_verifier.hpp) or is refused with a reason;
  // the checks below then hold for every plan that passed.
  auto verified = runpatch::verify_edit_plan(bytes, name, *before, edit.request, *plan);
  if (!verified) {
    if (verified.error().what.empty()) std::abort();
    return 0;
  }
  if (plan->new_size > bytes.size() + (uint64_t(1) << 30) + (1u << 20))
    std::abort();                                        // the planner bounds holes at 1 GiB
  if (plan->new_size > (uint64_t(256) << 20)) return 0;  // a legitimate big hole: too big to check in memory here
  std::vector<uint8_t> out(bytes.begin(), bytes.end());
  out.resize(plan->new_size > out.size() ? plan->new_size : out.size());
  for (const auto& w : plan->writes) {
    if (w.offset > out.size() || w.bytes.size() > out.size() - w.offset)
      std::abort();  // writes stay inside the new file
    std::memcpy(out.data() + w.offset, w.bytes.data(), w.bytes.size());
  }
  out.resize(plan->new_size);  // a reclaimed interrupted tail is cut off
  check_staged_commit(bytes, name, *before, edit.request, *plan, out);
  auto after = runpatch::read_elf_info(std::span<const uint8_t>(out), name);
  if (!after) std::abort();                           // the edited file must parse
  if (after->needed != before->needed) std::abort();  // and keep every DT_NEEDED
  if (!edit.runpath.empty() && runpatch::effective_runpath(*after) != edit.runpath) std::abort();
  if (edit.request.soname && after->soname != edit.request.soname) std::abort();
  if (edit.request.headers.osabi && (after->identity.osabi != 3 || !after->nodeflib())) std::abort();
  using Mode = runpatch::ResolutionCacheMode;
  if (edit.request.resolution_cache == Mode::Remove && after->resolution_cache) std::abort();
  if (edit.request.resolution_cache == Mode::Write) {
    runpatch::ResolutionCacheInputs inputs = runpatch::resolution_cache_inputs(*after);
    auto expected = runpatch::build_resolution_cache(inputs, "/nonexistent-fuzz-root");
    bool possible = runpatch::resolution_cache_unavailable_reason(inputs, expected).empty();
    if (possible != after->resolution_cache.has_value()) std::abort();
    if (possible && (!after->resolution_cache->defect.empty() || after->resolution_cache->entries != expected))
      std::abort();
  }
  return 0;
}
