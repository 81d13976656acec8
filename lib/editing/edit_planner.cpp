#include "editing/edit_planner.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "editing/appended_segment.hpp"
#include "editing/grown_string_table.hpp"
#include "editing/header_edits.hpp"
#include "editing/plan_inputs.hpp"
#include "editing/string_placer.hpp"

namespace runpatch {

namespace {

// The request's changes laid out in the existing tables: new strings in
// unused bytes of the string table, or one string over its own bytes; a
// resolution-cache note where the old one is.
template <class E>
class InPlacePlanner {
  using Shdr = elf::Shdr<E>;
  using Phdr = elf::Phdr<E>;

 public:
  explicit InPlacePlanner(const PlanInputs<E>& in) : in_(in) {}

  // nullopt: the tables have no room (an appended segment must take the edit).
  Expected<std::optional<EditPlan>> plan_tables() const {
    if (in_.model.entries.size() + 1 > in_.table.slots.size()) return std::optional<EditPlan>();
    auto use = string_use();
    if (!use) return std::optional<EditPlan>();  // cannot prove bytes free: append instead
    EditPlan plan;
    plan.strategy = EditStrategy::InPlace;
    plan.new_size = in_.view.bytes().size();
    std::vector<uint8_t> original_strtab = in_.copy_range(in_.table.strtab_offset, in_.table.strtab_size);
    StringPlacer<E> placer(in_);
    std::optional<PlacedStrings> placed;
    if (!in_.model.any_changed(in_.original) && in_.version_need_renames.empty() && in_.renamer.empty()) {
      placed = PlacedStrings{in_.model, original_strtab, {}};
      plan.layout = {LayoutStep::InterpreterInPlace};
    } else if ((placed = in_own_place(plan, *use, original_strtab))) {
      // (a) New strings where one edit from the original would put them.
      plan.layout = {LayoutStep::StringsInUnusedBytes};
      if (has_phase(plan, WritePhase::Settle)) plan.layout.push_back(LayoutStep::StringsThroughInterimPlace);
    } else if ((placed = placer.in_unused_bytes(use->now))) {
      // (a') New strings into bytes nothing references now; the dynamic table write commits.
      plan.layout = {LayoutStep::StringsInUnusedBytes};
      add_string_writes(plan, WritePhase::Prepare, original_strtab, placed->strtab);
      add_dynamic_write(plan, placed->model, WritePhase::Commit);
    } else if ((placed = placer.over_own_bytes(use->survives))) {
      // (b) One string rewritten over its own bytes (and free bytes after it): that write commits.
      plan.layout = {LayoutStep::StringOverOwnBytes};
      add_string_writes(plan, WritePhase::Commit, original_strtab, placed->strtab);
      // A runpath whose tag switches too: the entry's write commits with it (two writes: not one-write).
      if (placed->model.any_changed_tag(in_.original)) add_dynamic_write(plan, placed->model, WritePhase::Commit);
    } else {
      return std::optional<EditPlan>();
    }
    if (in_.interp.changed) plan.writes.push_back(interpreter_write(in_, WritePhase::Commit));
    add_version_need_writes(in_, placed->offsets, plan);
    add_symbol_rename_writes(in_.renamer.writes(in_.view, placed->offsets), plan);
    if (!has_phase(plan, WritePhase::Settle)) add_cleanup(plan, *placed, *use);
    return std::optional<EditPlan>(std::move(plan));
  }

  // Removal always works in place; a new note fits where the old one was when
  // it is alone in its segment and no larger (or exactly as large when not alone).
  std::optional<std::vector<PlannedWrite>> note_writes() const {
    const NoteChange& note = in_.note;
    if (!note.existing) return std::nullopt;
    const NoteRef& old = *note.existing;
    if (note.action == NoteChange::Action::Remove) return note_removal(old);
    const Phdr& segment = in_.view.phdrs()[old.segment];
    uint64_t room = old.alone ? uint64_t(segment.p_filesz) : old.size;
    if (note.bytes.size() > room || (!old.alone && note.bytes.size() != room)) return std::nullopt;
    std::vector<PlannedWrite> writes;
    std::vector<uint8_t> bytes = note.bytes;
    bytes.resize(room, 0);
    writes.push_back({WritePhase::Commit, old.offset, std::move(bytes), WriteKind::ResolutionCacheNote});
    if (note.bytes.size() != room) {
      // Zeros after the note would read as empty notes: the segment ends with it.
      Phdr shrunk = segment;
      shrunk.p_filesz = note.bytes.size();
      shrunk.p_memsz = note.bytes.size();
      writes.push_back(
          {WritePhase::Commit, in_.phdr_offset(old.segment), phdr_bytes<E>(shrunk), WriteKind::ProgramHeader});
      if (note.existing_section) {
        Shdr sh = in_.view.shdrs()[*note.existing_section];
        sh.sh_size = note.bytes.size();
        writes.push_back(section_header_write(*note.existing_section, sh));
      }
    }
    return writes;
  }

 private:
  // Byte ranges the current file references, and those the new one still will.
  struct StringUse {
    std::vector<ByteRange> now;       // everything referenced before the edit
    std::vector<ByteRange> survives;  // what stays referenced after it
  };

  // New strings at the offsets that one edit of the original file would
  // give them: in the bytes nothing but the replaced strings covers, so the
  // bytes depend on the final content only, whichever edits led there (the
  // driver and compat hooks in either order, or the one-pass hook). Where
  // writing there would change a byte the file references now, the strings go
  // first to an interim place, the entries switch there, then to their own
  // place, and the entries switch again. Not where a process may still read
  // the old strings; staged only when the entries alone change (the writes of
  // renames, an interpreter or a resolution-cache note commit too).
  std::optional<PlacedStrings> in_own_place(EditPlan& plan, const StringUse& use,
                                            const std::vector<uint8_t>& original_strtab) const {
    if (in_.options.old_strings_stay) return std::nullopt;
    StringPlacer<E> placer(in_);
    auto own = placer.in_unused_bytes(use.survives);
    if (!own) return std::nullopt;
    std::vector<ByteRange> own_ranges = ranges_of(own->offsets);
    if (!changes_bytes_in(use.now, original_strtab, own->strtab)) {  // a prepended runpath ends where the old one did
      add_string_writes(plan, WritePhase::Prepare, original_strtab, own->strtab);
      add_dynamic_write(plan, own->model, WritePhase::Commit);
      return own;
    }
    bool only_entries = in_.version_need_renames.empty() && in_.renamer.empty() && !in_.interp.changed &&
                        in_.note.action == NoteChange::Action::None;
    if (!only_entries) return std::nullopt;
    std::vector<ByteRange> avoided = use.now;
    avoided.insert(avoided.end(), own_ranges.begin(), own_ranges.end());
    if (auto interim = placer.in_unused_bytes(avoided)) {
      add_staged_writes(plan, use, original_strtab, *interim, *own, WritePhase::Prepare);
      return own;
    }
    // No unused bytes for it: the interim place is the old string's own (its write commits), clear of the final place.
    auto interim = placer.over_own_bytes(use.survives, StringPlacer<E>::OldTail::Kept);
    if (!interim || overlaps(ranges_of(interim->offsets), own_ranges)) return std::nullopt;
    add_staged_writes(plan, use, original_strtab, *interim, *own, WritePhase::Commit);
    return own;
  }

  static bool overlaps(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
    return std::any_of(a.begin(), a.end(), [&](const ByteRange& x) {
      return std::any_of(b.begin(), b.end(), [&](const ByteRange& y) { return x.begin < y.end && y.begin < x.end; });
    });
  }

  // Prepare: the interim strings (or Commit: over the old one); Commit: the entries to them; Cleanup: the
  // old strings zeroed, the strings in their own place; Switch: the entries
  // there; Settle: the interim strings zeroed. A crash leaves the file before,
  // at the interim state (the new runpath) or after.
  void add_staged_writes(EditPlan& plan, const StringUse& use, const std::vector<uint8_t>& original_strtab,
                         const PlacedStrings& interim, const PlacedStrings& own, WritePhase interim_strings) const {
    std::vector<ByteRange> live = use.survives;
    for (const auto& r : ranges_of(own.offsets)) live.push_back(r);
    std::vector<uint8_t> final_strtab = without_old_strings(own.strtab, live);
    std::vector<uint8_t> final_with_interim = final_strtab;
    for (const auto& r : ranges_of(interim.offsets))
      std::copy(interim.strtab.begin() + std::ptrdiff_t(r.begin), interim.strtab.begin() + std::ptrdiff_t(r.end),
                final_with_interim.begin() + std::ptrdiff_t(r.begin));
    add_string_writes(plan, interim_strings, original_strtab, interim.strtab);
    add_dynamic_write(plan, interim.model, WritePhase::Commit);  // none when the string took its old place
    add_cleanup_writes(plan, WritePhase::Cleanup, interim.strtab, final_with_interim);
    add_dynamic_write(plan, own.model, WritePhase::Switch, interim.model);
    add_cleanup_writes(plan, WritePhase::Settle, final_with_interim, final_strtab);
  }

  static std::vector<ByteRange> ranges_of(const StringOffsets& offsets) {
    std::vector<ByteRange> ranges;
    for (const auto& [text, at] : offsets) ranges.push_back({at, at + text.size() + 1});
    return ranges;
  }

  // Whether `after` differs from `before` inside any of `ranges` (what the file references now).
  static bool changes_bytes_in(const std::vector<ByteRange>& ranges, const std::vector<uint8_t>& before,
                               const std::vector<uint8_t>& after) {
    return std::any_of(ranges.begin(), ranges.end(), [&](const ByteRange& r) {
      uint64_t end = std::min<uint64_t>(r.end, before.size());
      return r.begin < end &&
             !std::equal(before.begin() + std::ptrdiff_t(r.begin), before.begin() + std::ptrdiff_t(end),
                         after.begin() + std::ptrdiff_t(r.begin));
    });
  }

  std::optional<StringUse> string_use() const {
    auto symbols = in_.symbol_string_refs();
    if (!symbols) return std::nullopt;
    StringUse use{*symbols, *symbols};
    for (const auto& e : in_.original.entries)
      if (e.text) use.now.push_back({e.value, e.value + e.text->size() + 1});
    in_.add_unchanged_entry_refs(use.survives);
    return use;
  }

  std::vector<PlannedWrite> note_removal(const NoteRef& old) const {
    const Phdr& segment = in_.view.phdrs()[old.segment];
    std::vector<PlannedWrite> writes;
    if (old.alone) {
      Phdr cleared = segment;
      cleared.p_type = elf::PT_NULL;
      writes.push_back(
          {WritePhase::Commit, in_.phdr_offset(old.segment), phdr_bytes<E>(cleared), WriteKind::ProgramHeader});
      writes.push_back({WritePhase::Cleanup, old.offset, std::vector<uint8_t>(segment.p_filesz, 0),
                        WriteKind::OldResolutionCacheNote});
    } else {
      writes.push_back(
          {WritePhase::Commit, old.offset, neutralized_note_header(in_.view, old), WriteKind::OldResolutionCacheNote});
    }
    if (auto w = retire_note_section(old.alone)) writes.push_back(std::move(*w));
    return writes;
  }

  // The section header of the old note, after the edit: renamed (and made
  // inactive when its segment goes) so no tool shows a stale .note.nixos.ldcache.
  std::optional<PlannedWrite> retire_note_section(bool inactive) const {
    if (!in_.note.existing_section) return std::nullopt;
    Shdr sh = in_.view.shdrs()[*in_.note.existing_section];
    sh.sh_name = 0;
    if (inactive) sh = Shdr{};  // SHT_NULL: every field zero (gABI)
    return section_header_write(*in_.note.existing_section, sh);
  }

  PlannedWrite section_header_write(size_t index, const Shdr& sh) const {
    return {WritePhase::Cleanup, uint64_t(in_.view.ehdr().e_shoff) + index * sizeof(Shdr),
            bytes_of(std::span<const Shdr>(&sh, 1)), WriteKind::SectionHeader};
  }

  // One write covering every byte that differs (they are few and close together).
  void add_string_writes(EditPlan& plan, WritePhase phase, const std::vector<uint8_t>& before,
                         const std::vector<uint8_t>& after) const {
    if (auto write = changed_bytes_write(phase, in_.table.strtab_offset, before, after, WriteKind::DynamicStrings))
      plan.writes.push_back(std::move(*write));
  }

  // Only the bytes that change: usually one entry, so the write lies in one sector.
  // `from`: the entries as an earlier phase of this plan left them (default: the file's).
  void add_dynamic_write(EditPlan& plan, const DynamicModel& model, WritePhase phase,
                         const std::optional<DynamicModel>& from = std::nullopt) const {
    size_t count = std::max(model.entries.size(), in_.original.entries.size()) + 1;
    std::vector<uint8_t> bytes = serialize_dynamic<E>(model, count);
    std::vector<uint8_t> before =
        from ? serialize_dynamic<E>(*from, count) : in_.copy_range(in_.table.offset, bytes.size());
    size_t first = 0, last = bytes.size();
    while (first < last && bytes[first] == before[first]) ++first;
    while (last > first && bytes[last - 1] == before[last - 1]) --last;
    if (first == last) return;
    plan.writes.push_back({phase, in_.table.offset + first,
                           std::vector<uint8_t>(bytes.begin() + first, bytes.begin() + last),
                           WriteKind::DynamicSection});
  }

  // After the commit, zero the strings no one references any more (the
  // replaced ones, and dead ones an earlier tool left) — not when processes
  // that have the file mapped may still read them, nor when no string changes.
  void add_cleanup(EditPlan& plan, const PlacedStrings& placed, const StringUse& use) const {
    if (in_.options.old_strings_stay || !in_.strings_change()) return;
    std::vector<ByteRange> live = use.survives;
    for (const auto& r : ranges_of(placed.offsets)) live.push_back(r);
    add_cleanup_writes(plan, WritePhase::Cleanup, placed.strtab, without_old_strings(placed.strtab, live));
  }

  // `strtab` with every byte `live` (what survives, and the new strings) does not cover zeroed.
  std::vector<uint8_t> without_old_strings(const std::vector<uint8_t>& strtab, std::vector<ByteRange> live) const {
    std::vector<uint8_t> cleaned = strtab;
    in_.zero_unreferenced_strings(cleaned, std::move(live));
    return cleaned;
  }

  // Writes of the runs of bytes that differ (dead strings may lie far apart
  // in a large table); runs close together as one (a write costs more than
  // rewriting that many bytes as they are; nothing else writes the table then).
  void add_cleanup_writes(EditPlan& plan, WritePhase phase, const std::vector<uint8_t>& before,
                          const std::vector<uint8_t>& after) const {
    constexpr size_t kJoinedGap = 64;
    for (auto& w :
         changed_runs_writes(phase, in_.table.strtab_offset, before, after, WriteKind::DynamicStrings, kJoinedGap))
      plan.writes.push_back(std::move(w));
  }

  const PlanInputs<E>& in_;
};

// A program whose loader sees no dynamic section (PT_DYNAMIC hidden, or
// nothing but DT_NULL): the interpreter is rewritten where it is, or moves
// into a segment of its own.
template <class E>
Expected<EditPlan> plan_interpreter_only(const PlanInputs<E>& in) {
  EditPlan plan;
  plan.new_size = in.view.bytes().size();
  if (!in.interp.changed) return plan;
  if (in.interp.needs_room) return plan_appended_segment<E>(in, SegmentCarries::InterpreterOrNote);
  plan.strategy = EditStrategy::InPlace;
  plan.layout = {LayoutStep::InterpreterInPlace};
  plan.writes.push_back(interpreter_write(in, WritePhase::Commit));
  return plan;
}

// A file an earlier runpatch edit appended a segment to: that segment is
// rebuilt from the tables it copied rather than edited in its slack, so
// that the bytes depend only on the original file and the final content
// (the driver and compat hooks in either order give one NAR hash). Only
// where the segment may be reclaimed (a copy, or a build's outputs).
template <class E>
std::optional<EditPlan> rebuilt_earlier_tail(const PlanInputs<E>& in) {
  if (!in.options.reclaim_earlier_segment || in.options.commit_in_elf_header) return std::nullopt;
  auto rebuilt = plan_appended_segment<E>(in, SegmentCarries::DynamicTables);
  if (!rebuilt || !rebuilt->reclaimed_from || rebuilt->reclaimed_from == in.info.interrupted_edit_tail)
    return std::nullopt;
  return std::move(*rebuilt);
}

// The dynamic section and interpreter: in place where they fit, otherwise in
// a segment appended to the file.
template <class E>
Expected<EditPlan> plan_dynamic(const PlanInputs<E>& in) {
  // A longer interpreter alone moves only itself: the dynamic tables stay
  // where the linker put them (patchelf 0.14 edits a program later by what
  // lies before .dynstr; with .dynstr moved away it wrote .dynamic into the
  // read-only first page, and the loader crashed writing DT_DEBUG there).
  bool entries_change = in.model.any_changed(in.original) || !in.version_need_renames.empty() || !in.renamer.empty();
  if (in.interp.needs_room && !in.stack_entry_wanted && !entries_change)
    return plan_appended_segment<E>(in, SegmentCarries::InterpreterOrNote);
  if (in.interp.needs_room || in.stack_entry_wanted) return plan_appended_segment<E>(in, SegmentCarries::DynamicTables);
  RUNPATCH_TRY(auto in_place, InPlacePlanner<E>(in).plan_tables());
  // Several writes in place (the interpreter and the dynamic section) cannot commit as one.
  if (in_place && in.options.commit_in_elf_header && !commits_in_one_write(*in_place)) in_place.reset();
  if (!in_place) {
    // A program's string table grown where it lies costs no byte; an appended segment carries a copy of it.
    if (auto grown = plan_grown_string_table(in)) return std::move(*grown);
    return plan_appended_segment<E>(in, SegmentCarries::DynamicTables);
  }
  if (auto rebuilt = rebuilt_earlier_tail(in)) return std::move(*rebuilt);
  return std::move(*in_place);
}

// Then the resolution-cache note: in place, or in a read-only segment of its own.
template <class E>
Expected<EditPlan> plan_tables(const PlanInputs<E>& in) {
  EditPlan plan;
  plan.new_size = in.view.bytes().size();
  bool tables_change = in.tables_change();
  if (!tables_change && in.note.action == NoteChange::Action::None) return plan;
  if (tables_change) {
    RUNPATCH_TRY(plan, plan_dynamic(in));
    if (plan.strategy == EditStrategy::Appended) return plan;
  }
  if (in.note.action == NoteChange::Action::None) return plan;
  auto writes = InPlacePlanner<E>(in).note_writes();
  // A grown string table rewrote the program headers: a note segment's writes would undo that.
  if (!writes && has_layout_step(plan, LayoutStep::StringTableGrown))
    return plan_appended_segment<E>(in, SegmentCarries::DynamicTables);
  if (writes) {
    plan.strategy = EditStrategy::InPlace;
    plan.layout.push_back(in.note.action == NoteChange::Action::Remove ? LayoutStep::ResolutionCacheRemoved
                                                                       : LayoutStep::ResolutionCacheInPlace);
    plan.writes.insert(plan.writes.end(), writes->begin(), writes->end());
    return plan;
  }
  RUNPATCH_TRY(EditPlan appended, plan_appended_segment<E>(in, SegmentCarries::InterpreterOrNote));
  appended.layout.insert(appended.layout.end(), plan.layout.begin(), plan.layout.end());
  appended.writes.insert(appended.writes.begin(), plan.writes.begin(), plan.writes.end());
  return appended;
}

template <class E>
Expected<EditPlan> plan_request(const MappedElfView<E>& view, const ElfInfo& info, const PlanOptions& options,
                                const EditRequest& request) {
  RUNPATCH_TRY(auto table, read_dynamic(view, options.dynamic_source));
  // The interpreter and the header fields need no dynamic section (patchelf edits such files too).
  if ((!table || !table->has_strtab) && request.only_interpreter_and_headers()) {
    RUNPATCH_TRY(auto in, resolve_plan_inputs<E>(view, info, options, request, nullptr));
    return plan_interpreter_only(in);
  }
  if (!table && request.headers.adds_dynamic_entries())
    return view.error(ErrorCode::NothingToEdit,
                      "has no dynamic section (statically linked, or separate debug information)");
  if (!table) return view.error(ErrorCode::NothingToEdit, "statically linked (no dynamic section): nothing to edit");
  if (!table->has_strtab) return view.error(ErrorCode::NothingToEdit, "dynamic section has no string table");
  RUNPATCH_TRY(auto in, resolve_plan_inputs<E>(view, info, options, request, &*table));
  RUNPATCH_TRY(EditPlan result, plan_tables(in));
  const NoteChange& note = in.note;
  result.carries_resolution_cache = note.writes() || (note.existing && note.action == NoteChange::Action::None);
  // The note's and the request's warnings, then the layout's.
  result.warnings.insert(result.warnings.begin(), in.warnings.begin(), in.warnings.end());
  result.warnings.insert(result.warnings.begin(), note.warnings.begin(), note.warnings.end());
  return result;
}

}  // namespace

template <class E>
Expected<EditPlan> plan_edit(const MappedElfView<E>& view, const ElfInfo& info, const PlanOptions& options,
                             const EditRequest& request) {
  RUNPATCH_TRY(EditPlan plan, plan_request(view, info, options, request));
  plan.dynamic_source = options.dynamic_source;
  RUNPATCH_CHECK(fold_header_fields(view, request.headers, plan));
  return plan;
}

#define RUNPATCH_INSTANTIATE(E)                                                                      \
  template Expected<EditPlan> plan_edit(const MappedElfView<E>&, const ElfInfo&, const PlanOptions&, \
                                        const EditRequest&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

}  // namespace runpatch
