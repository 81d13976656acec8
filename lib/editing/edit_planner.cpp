#include "editing/edit_planner.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "editing/appended_segment.hpp"
#include "editing/header_edits.hpp"
#include "editing/plan_context.hpp"
#include "editing/string_space.hpp"

namespace runpatch {

namespace {

// [first, last) of the bytes where two equal-sized tables differ (first ==
// last when they do not): memcmp over blocks, a big library's string table
// is tens of megabytes and an edit changes a few bytes of it.
std::pair<size_t, size_t> differing_range(const std::vector<uint8_t>& before, const std::vector<uint8_t>& after) {
  constexpr size_t kBlock = 4096;
  size_t size = std::min(before.size(), after.size()), first = 0, last = size;
  while (first < size) {
    size_t n = std::min(kBlock, size - first);
    if (std::memcmp(before.data() + first, after.data() + first, n) != 0) break;
    first += n;
  }
  while (first < size && before[first] == after[first]) ++first;
  if (first == size) return {size, size};
  while (last - first > kBlock && std::memcmp(before.data() + last - kBlock, after.data() + last - kBlock, kBlock) == 0)
    last -= kBlock;
  while (last > first && before[last - 1] == after[last - 1]) --last;
  return {first, last};
}

// Works out what the request wants (the context), then lays it out in place
// when it fits: new strings in unused bytes of the string table, or one string
// over its own bytes; otherwise hands over to the appended segment.
template <class E>
class EditPlanner : PlanContext<E> {
  RUNPATCH_USE_PLAN_CONTEXT

 public:
  using Ctx::Ctx;

  Expected<EditPlan> plan(const EditRequest& request) {
    RUNPATCH_TRY(auto table, read_dynamic(view_, options_.dynamic_source));
    // The interpreter and the header fields need no dynamic section (patchelf edits such files too).
    if ((!table || !table->has_strtab) && only_interpreter(request)) return plan_interpreter_only(request);
    if (!table && needs_dynamic_entries(request.headers))
      return view_.error("has no dynamic section (statically linked, or separate debug information)");
    if (!table) return view_.error("statically linked (no dynamic section): nothing to edit");
    if (!table->has_strtab) return view_.error("dynamic section has no string table");
    RUNPATCH_CHECK(check_segments());
    table_ = *table;
    RUNPATCH_CHECK(check_string_table_alone());
    RUNPATCH_TRY(original_, DynamicModel::load(view_, table_));
    RUNPATCH_TRY(model_, apply(request));
    RUNPATCH_TRY(renamer_, SymbolRenamer<E>::plan(view_, table_, request.rename_symbols));
    RUNPATCH_CHECK(plan_version_need_files(request));
    RUNPATCH_CHECK(plan_interpreter(request));
    stack_entry_wanted_ =
        request.headers.exec_stack && !view_.find_phdr(elf::PT_GNU_STACK) && !view_.find_phdr(elf::PT_NULL);
    RUNPATCH_TRY(note_, plan_note_change(view_, info_, original_, model_, request));

    RUNPATCH_TRY(EditPlan result, plan_tables());
    result.carries_resolution_cache = note_.writes() || (note_.existing && note_.action == NoteChange::Action::None);
    // The note's and the planner's warnings, then the layout's.
    result.warnings.insert(result.warnings.begin(), warnings_.begin(), warnings_.end());
    result.warnings.insert(result.warnings.begin(), note_.warnings.begin(), note_.warnings.end());
    return result;
  }

 private:
  // Besides the interpreter, at most fields of the ELF and program headers.
  static bool only_interpreter(const EditRequest& r) {
    bool header_fields = r.headers.osabi || r.headers.exec_stack;
    return (r.interpreter || header_fields) && !r.runpath && !r.soname && r.add_needed.empty() &&
           r.remove_needed.empty() && r.replace_needed.empty() && r.rename_symbols.empty() &&
           follows_other_changes(r.resolution_cache) && !needs_dynamic_entries(r.headers) &&
           r.headers.clear_symbol_version.empty();
  }

  static bool needs_dynamic_entries(const HeaderEditRequest& h) { return h.no_default_lib || h.add_debug_tag; }

  // A program whose loader sees no dynamic section (PT_DYNAMIC hidden, or
  // nothing but DT_NULL): the interpreter is rewritten where it is, or moves
  // into a segment of its own.
  Expected<EditPlan> plan_interpreter_only(const EditRequest& request) {
    RUNPATCH_CHECK(check_segments());
    RUNPATCH_CHECK(plan_interpreter(request));
    EditPlan plan;
    plan.new_size = view_.bytes().size();
    if (!interp_changed_) return plan;
    if (interp_needs_room_) return plan_appended_segment<E>(*this, /*with_dynamic=*/false);
    plan.strategy = EditStrategy::InPlace;
    plan.layout_description = "interpreter rewritten in place";
    add_interp_write(plan, WritePhase::Commit);
    return plan;
  }

  // The editor maps new addresses through the PT_LOADs and copies segments'
  // bytes, so they must be sound (gABI: inside the file; p_filesz <= p_memsz;
  // power-of-two alignment; no two PT_LOADs overlapping in memory). The loader rejects or crashes on such files anyway;
  // editing one would produce a file whose new tables map to the wrong bytes.
  Status check_segments() const {
    const auto& phdrs = view_.phdrs();
    uint64_t header_offset = view_.ehdr().e_phoff;
    for (size_t i = 0; i < phdrs.size(); ++i) {
      const Phdr& a = phdrs[i];
      uint64_t at = header_offset + i * sizeof(Phdr);
      // Any segment's bytes may be carried into the new segment (notes, interpreter).
      if (a.p_filesz > 0 && (a.p_offset > view_.bytes().size() || a.p_filesz > view_.bytes().size() - a.p_offset))
        return view_.error(
            fmt::format("program header #{} (type {:#x}) extends past the end of the file", i, uint32_t(a.p_type)), at);
      if (a.p_type != elf::PT_LOAD) continue;
      if (a.p_filesz > a.p_memsz)
        return view_.error(fmt::format("PT_LOAD #{}: file size is larger than memory size", i), at);
      // Alignment decides where a new segment goes: a corrupt one would pad the file without bound.
      if (a.p_align > 1 && ((a.p_align & (a.p_align - 1)) != 0 || a.p_align > kMaxLoadAlign))
        return view_.error(
            fmt::format("PT_LOAD #{}: alignment {:#x} is not a power of two up to 64 MiB", i, uint64_t(a.p_align)), at);
      if (uint64_t(a.p_vaddr) + uint64_t(a.p_memsz) < uint64_t(a.p_vaddr))
        return view_.error(fmt::format("PT_LOAD #{}: address range wraps around", i), at);
      for (size_t j = 0; j < i; ++j) {
        const Phdr& b = phdrs[j];
        if (b.p_type != elf::PT_LOAD || a.p_memsz == 0 || b.p_memsz == 0) continue;
        if (a.p_vaddr < b.p_vaddr + b.p_memsz && b.p_vaddr < a.p_vaddr + a.p_memsz)
          return view_.error(fmt::format("PT_LOAD #{} and #{} overlap in memory", j, i), at);
      }
    }
    return {};
  }

  // Bytes of the string table no string uses are where new strings go: if
  // the table overlaps another structure, those bytes are that structure.
  Status check_string_table_alone() const {
    uint64_t begin = table_.strtab_offset, end = begin + table_.strtab_size;
    auto overlaps = [&](uint64_t off, uint64_t size) { return size > 0 && off < end && begin < off + size; };
    const auto& eh = view_.ehdr();
    std::vector<std::pair<const char*, std::pair<uint64_t, uint64_t>>> others = {
        {"the ELF header", {0, sizeof(Ehdr)}},
        {"the program header table", {uint64_t(eh.e_phoff), view_.phdrs().size() * sizeof(Phdr)}},
        {"the dynamic section", {table_.offset, table_.slots.size() * sizeof(Dyn)}},
        {"the section header table", {uint64_t(eh.e_shoff), view_.shdrs().size() * sizeof(Shdr)}},
    };
    for (const auto& [what, range] : others)
      if (overlaps(range.first, range.second))
        return view_.error(std::string("the dynamic string table overlaps ") + what, begin);
    for (const auto& sh : view_.shdrs()) {
      if (!(sh.sh_flags & elf::SHF_ALLOC) || sh.sh_type == elf::SHT_NOBITS) continue;
      bool is_the_table = sh.sh_offset <= begin && uint64_t(sh.sh_offset) + uint64_t(sh.sh_size) >= end;
      if (!is_the_table && overlaps(sh.sh_offset, sh.sh_size))
        return view_.error("the dynamic string table overlaps another allocated section", begin);
    }
    return {};
  }

  Expected<DynamicModel> apply(const EditRequest& request) {
    DynamicModel model = original_;
    if (request.runpath) {
      RUNPATCH_TRY(RunpathChange change, request.runpath(info_));
      if (change.kind == RunpathChange::Kind::Set)
        model.set_runpath(change.value, request.force_rpath ? elf::DT_RPATH : elf::DT_RUNPATH);
      else if (change.kind == RunpathChange::Kind::Remove)
        model.remove_runpath();
    }
    if (request.soname) model.set_soname(*request.soname);
    for (const auto& [from, to] : request.replace_needed) model.replace_needed(from, to);
    for (const auto& name : request.remove_needed) model.remove_needed(name);
    model.add_needed(request.add_needed);
    if (request.headers.no_default_lib) model.set_flags_1(elf::DF_1_NODEFLIB);
    // ld.so writes r_debug's address into DT_DEBUG (gdb finds the link map there).
    if (request.headers.add_debug_tag) model.add_once(elf::DT_DEBUG, 0);
    for (const auto& e : model.entries)
      if (e.text && e.text->find('\0') != std::string::npos) return view_.error("a new string contains a NUL byte");
    return model;
  }

  // ld.so finds the library a Verneed names by vn_file: a replaced DT_NEEDED
  // whose versions stay under the old name aborts the program at start-up
  // (dl-version.c: "needed != NULL"). patchelf rewrites vn_file too.
  Status plan_version_need_files(const EditRequest& request) {
    if (request.replace_needed.empty() && request.remove_needed.empty()) return {};
    detail::StringRefCollector<E> refs(view_, table_);
    RUNPATCH_TRY(auto files, refs.version_need_files());
    for (const auto& file : files) {
      for (const auto& [from, to] : request.replace_needed)
        if (file.library == from && from != to) {
          verneed_updates_.push_back({file.field_offset, to, 0});
          break;
        }
      // As patchelf, a removed library's version needs stay (docs/editing.md); say what that means.
      if (std::find(request.remove_needed.begin(), request.remove_needed.end(), file.library) !=
          request.remove_needed.end())
        warnings_.push_back(
            fmt::format("{} still has symbol-version needs (.gnu.version_r): ld.so aborts at start-up "
                        "unless another object loads it",
                        file.library));
    }
    return {};
  }

  Status plan_interpreter(const EditRequest& request) {
    if (!request.interpreter || request.interpreter == info_.interpreter) return {};
    interp_phdr_ = view_.find_phdr(elf::PT_INTERP);
    if (!interp_phdr_) return view_.error("file has no interpreter (PT_INTERP) to replace");
    interp_changed_ = true;
    new_interp_ = *request.interpreter;
    interp_needs_room_ = new_interp_.size() + 1 > uint64_t(interp_phdr_->p_filesz);
    return {};
  }

  // A file an earlier runpatch edit appended a segment to: that segment is
  // rebuilt from the tables it copied rather than edited in its slack, so
  // that the bytes depend only on the original file and the final content
  // (the driver and compat hooks in either order give one NAR hash). Only
  // where the segment may be reclaimed (a copy, or a build's outputs).
  std::optional<EditPlan> rebuilt_earlier_tail() {
    if (!options_.reclaim_earlier_segment || options_.commit_in_elf_header) return std::nullopt;
    auto rebuilt = plan_appended_segment<E>(*this, /*with_dynamic=*/true);
    if (!rebuilt || !rebuilt->reclaimed_from || rebuilt->reclaimed_from == info_.interrupted_edit_tail)
      return std::nullopt;
    return std::move(*rebuilt);
  }

  // Dynamic section, interpreter and resolution-cache note: in place where
  // they fit, otherwise in segments appended to the file.
  Expected<EditPlan> plan_tables() {
    EditPlan plan;
    plan.new_size = view_.bytes().size();
    bool tables_change = model_.any_changed(original_) || interp_changed_ || !verneed_updates_.empty() ||
                         !renamer_.empty() || stack_entry_wanted_;
    if (!tables_change && note_.action == NoteChange::Action::None) return plan;
    if (interp_needs_room_ || stack_entry_wanted_) return plan_appended_segment<E>(*this, /*with_dynamic=*/true);
    if (tables_change) {
      RUNPATCH_TRY(auto in_place, plan_in_place());
      // Several writes in place (the interpreter and the dynamic section) cannot commit as one.
      if (in_place && options_.commit_in_elf_header && !commits_in_one_write(*in_place)) in_place.reset();
      if (!in_place) return plan_appended_segment<E>(*this, /*with_dynamic=*/true);
      if (auto rebuilt = rebuilt_earlier_tail()) return std::move(*rebuilt);
      plan = std::move(*in_place);
    }
    if (note_.action == NoteChange::Action::None) return plan;
    if (auto writes = note_writes_in_place()) {
      plan.strategy = EditStrategy::InPlace;
      append_description(plan.layout_description, note_.action == NoteChange::Action::Remove
                                                      ? "resolution cache removed"
                                                      : "resolution cache rewritten in place");
      plan.writes.insert(plan.writes.end(), writes->begin(), writes->end());
      return plan;
    }
    RUNPATCH_TRY(EditPlan appended, plan_appended_segment<E>(*this, /*with_dynamic=*/false));
    append_description(appended.layout_description, plan.layout_description);
    appended.writes.insert(appended.writes.begin(), plan.writes.begin(), plan.writes.end());
    return appended;
  }

  // ---- Resolution-cache note in place ---------------------------------------

  // The section header of the old note, after the edit: renamed (and made
  // inactive when its segment goes) so no tool shows a stale .note.nixos.ldcache.
  std::optional<PlannedWrite> retire_note_section(bool inactive) const {
    if (!note_.existing_section) return std::nullopt;
    Shdr sh = view_.shdrs()[*note_.existing_section];
    sh.sh_name = 0;
    if (inactive) sh = Shdr{};  // SHT_NULL: every field zero (gABI)
    return section_header_write(*note_.existing_section, sh);
  }

  PlannedWrite section_header_write(size_t index, const Shdr& sh) const {
    return {WritePhase::Cleanup, uint64_t(view_.ehdr().e_shoff) + index * sizeof(Shdr),
            bytes_of(std::span<const Shdr>(&sh, 1)), "section header"};
  }

  // Removal always works in place; a new note fits where the old one was when
  // it is alone in its segment and no larger (or exactly as large when not alone).
  std::optional<std::vector<PlannedWrite>> note_writes_in_place() const {
    if (!note_.existing) return std::nullopt;
    const NoteRef& old = *note_.existing;
    const Phdr& segment = view_.phdrs()[old.segment];
    std::vector<PlannedWrite> writes;
    if (note_.action == NoteChange::Action::Remove) {
      if (old.alone) {
        Phdr cleared = segment;
        cleared.p_type = elf::PT_NULL;
        writes.push_back({WritePhase::Commit, phdr_offset(old.segment), phdr_bytes(cleared), "program header"});
        writes.push_back(
            {WritePhase::Cleanup, old.offset, std::vector<uint8_t>(segment.p_filesz, 0), "old resolution cache"});
      } else {
        writes.push_back({WritePhase::Commit, old.offset, neutralized_note_header(view_, old), "old resolution cache"});
      }
      if (auto w = retire_note_section(old.alone)) writes.push_back(std::move(*w));
      return writes;
    }
    uint64_t room = old.alone ? uint64_t(segment.p_filesz) : old.size;
    if (note_.bytes.size() > room || (!old.alone && note_.bytes.size() != room)) return std::nullopt;
    std::vector<uint8_t> bytes = note_.bytes;
    bytes.resize(room, 0);
    writes.push_back({WritePhase::Commit, old.offset, std::move(bytes), "resolution cache"});
    if (note_.bytes.size() != room) {
      // Zeros after the note would read as empty notes: the segment ends with it.
      Phdr shrunk = segment;
      shrunk.p_filesz = note_.bytes.size();
      shrunk.p_memsz = note_.bytes.size();
      writes.push_back({WritePhase::Commit, phdr_offset(old.segment), phdr_bytes(shrunk), "program header"});
      if (note_.existing_section) {
        Shdr sh = view_.shdrs()[*note_.existing_section];
        sh.sh_size = note_.bytes.size();
        writes.push_back(section_header_write(*note_.existing_section, sh));
      }
    }
    return writes;
  }

  // ---- In place -----------------------------------------------------------

  // Byte ranges the current file references, and those the new one still will.
  struct StringUse {
    std::vector<ByteRange> now;       // everything referenced before the edit
    std::vector<ByteRange> survives;  // what stays referenced after it
  };

  Expected<std::optional<StringUse>> string_use() {
    auto symbols = symbol_string_refs();
    if (!symbols) return std::optional<StringUse>();  // cannot prove bytes free: append instead
    StringUse use{*symbols, *symbols};
    for (const auto& e : original_.entries)
      if (e.text) use.now.push_back({e.value, e.value + e.text->size() + 1});
    add_unchanged_entry_refs(use.survives);
    return std::optional<StringUse>(std::move(use));
  }

  Expected<std::optional<EditPlan>> plan_in_place() {
    if (model_.entries.size() + 1 > table_.slots.size()) return std::optional<EditPlan>();
    RUNPATCH_TRY(auto use, string_use());
    if (!use) return std::optional<EditPlan>();
    DynamicModel placed = model_;
    EditPlan plan;
    plan.strategy = EditStrategy::InPlace;
    plan.new_size = view_.bytes().size();
    std::vector<uint8_t> strtab = copy_range(table_.strtab_offset, table_.strtab_size);
    std::vector<uint8_t> original_strtab = strtab;

    if (!model_.any_changed(original_) && verneed_updates_.empty() && renamer_.empty()) {
      plan.layout_description = "interpreter rewritten in place";
    } else if (StringSpace unused(table_.strtab_size, use->now); place_strings(placed, unused, strtab)) {
      // (a) New strings into bytes nothing references now; the dynamic table write commits.
      plan.layout_description = "new strings in unused bytes of the string table";
      add_string_writes(plan, WritePhase::Prepare, original_strtab, strtab);
      add_dynamic_write(plan, placed, WritePhase::Commit);
    } else if (auto single = single_string_rewrite(); single && verneed_updates_.empty() && renamer_.empty()) {
      // (b) One string rewritten over its own bytes (and free bytes after it): that write commits.
      placed = model_;
      strtab = original_strtab;
      auto& entry = placed.entries[*single];
      uint64_t at = original_.entries[*single].value;
      StringSpace reusable(table_.strtab_size, use->survives);
      if (!reusable.claim(at, entry.text->size() + 1)) return std::optional<EditPlan>();
      std::memcpy(strtab.data() + at, entry.text->c_str(), entry.text->size() + 1);
      entry.value = at;
      plan.layout_description = "string rewritten over its own bytes";
      add_string_writes(plan, WritePhase::Commit, original_strtab, strtab);
    } else {
      return std::optional<EditPlan>();
    }
    if (interp_changed_) add_interp_write(plan, WritePhase::Commit);
    add_version_need_writes(plan);
    add_symbol_rename_writes(plan);
    add_cleanup(plan, placed, *use, strtab);
    return std::optional<EditPlan>(std::move(plan));
  }

  // Index of the only changed entry when the edit is "this one string, same place in the table".
  std::optional<size_t> single_string_rewrite() const {
    if (model_.entries.size() != original_.entries.size()) return std::nullopt;
    std::optional<size_t> only;
    for (size_t i = 0; i < model_.entries.size(); ++i) {
      const auto& now = model_.entries[i];
      const auto& before = original_.entries[i];
      if (!now.changed) continue;
      if (only || now.tag != before.tag || !before.text) return std::nullopt;
      only = i;
    }
    return only;
  }

  // Gives every changed string (dynamic entries, vn_file names) an offset in space and copies it into strtab.
  bool place_strings(DynamicModel& model, StringSpace& space, std::vector<uint8_t>& strtab) {
    std::map<std::string, uint64_t> placed;
    auto place = [&](const std::string& text, uint64_t& value) {
      if (auto it = placed.find(text); it != placed.end()) {
        value = it->second;
        return true;
      }
      auto at = space.allocate(text.size() + 1);
      if (!at) return false;
      std::memcpy(strtab.data() + *at, text.c_str(), text.size() + 1);
      value = *at;
      placed[text] = *at;
      return true;
    };
    for (auto& e : model.entries)
      if (e.changed && e.text && !place(*e.text, e.value)) return false;
    for (auto& update : verneed_updates_)
      if (!place(update.text, update.new_value)) return false;
    for (const auto& name : renamer_.new_names())
      if (!place(name, symbol_name_offsets_[name])) return false;
    return true;
  }

  // One write covering every byte that differs (they are few and close together).
  void add_string_writes(EditPlan& plan, WritePhase phase, const std::vector<uint8_t>& before,
                         const std::vector<uint8_t>& after) const {
    auto [first, last] = differing_range(before, after);
    if (first >= last) return;
    plan.writes.push_back({phase, table_.strtab_offset + first,
                           std::vector<uint8_t>(after.begin() + first, after.begin() + last), "dynamic strings"});
  }

  // Only the bytes that change: usually one entry, so the write lies in one sector.
  void add_dynamic_write(EditPlan& plan, const DynamicModel& model, WritePhase phase) const {
    size_t count = std::max(model.entries.size(), original_.entries.size()) + 1;
    std::vector<uint8_t> bytes = serialize_dynamic(model, count);
    std::vector<uint8_t> before = copy_range(table_.offset, bytes.size());
    size_t first = 0, last = bytes.size();
    while (first < last && bytes[first] == before[first]) ++first;
    while (last > first && bytes[last - 1] == before[last - 1]) --last;
    if (first == last) return;
    plan.writes.push_back({phase, table_.offset + first,
                           std::vector<uint8_t>(bytes.begin() + first, bytes.begin() + last), "dynamic section"});
  }

  // After the commit, zero the old strings no one references any more — not
  // when processes that have the file mapped may still read them.
  void add_cleanup(EditPlan& plan, const DynamicModel& placed, const StringUse& use,
                   const std::vector<uint8_t>& strtab) const {
    if (options_.commit_in_elf_header) return;
    std::vector<ByteRange> live = use.survives;
    for (const auto& e : placed.entries)
      if (e.text) live.push_back({e.value, e.value + e.text->size() + 1});
    std::vector<uint8_t> cleaned = strtab;
    for (const auto& e : original_.entries) {
      if (!e.text) continue;
      for (uint64_t b = e.value; b < e.value + e.text->size() + 1; ++b) {
        bool referenced =
            std::any_of(live.begin(), live.end(), [&](const ByteRange& r) { return b >= r.begin && b < r.end; });
        if (!referenced) cleaned[b] = 0;
      }
    }
    add_string_writes(plan, WritePhase::Cleanup, strtab, cleaned);
  }
};

}  // namespace

template <class E>
Expected<EditPlan> plan_edit(const MappedElfView<E>& view, const ElfInfo& info, const PlanOptions& options,
                             const EditRequest& request) {
  RUNPATCH_TRY(EditPlan plan, EditPlanner<E>(view, info, options).plan(request));
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
