// Plans an edit of one ELF image: first tries to fit everything into the
// existing tables, otherwise lays out a new segment at the end of the file.
// Planning only reads the image; the writes come back as an EditPlan.
#pragma once

#include <fmt/format.h>

#include <map>

#include "editing/byte_buffer.hpp"
#include "editing/dynamic_model.hpp"
#include "editing/planned_write.hpp"
#include "editing/resolution_cache_edit.hpp"
#include "editing/string_space.hpp"

namespace runpatch {

template <class E>
class EditPlanner {
  using Ehdr = elf::Ehdr<E>;
  using Phdr = elf::Phdr<E>;
  using Shdr = elf::Shdr<E>;
  using Dyn = elf::Dyn<E>;

 public:
  EditPlanner(const ElfView<E>& view, const ElfInfo& info, const EditOptions& options)
      : view_(view), info_(info), options_(options) {}

  Expected<EditPlan> plan(const EditRequest& request) {
    RUNPATCH_TRY(auto table, read_dynamic(view_));
    // Only the interpreter needs no dynamic section (patchelf edits such files too).
    if ((!table || !table->has_strtab) && only_interpreter(request)) return plan_interpreter_only(request);
    if (!table) return view_.error("statically linked (no dynamic section): nothing to edit");
    if (!table->has_strtab) return view_.error("dynamic section has no string table");
    RUNPATCH_CHECK(check_segments());
    table_ = *table;
    RUNPATCH_CHECK(check_string_table_alone());
    RUNPATCH_TRY(original_, DynamicModel::load(view_, table_));
    RUNPATCH_TRY(model_, apply(request));
    RUNPATCH_CHECK(plan_version_need_files(request));
    RUNPATCH_CHECK(plan_interpreter(request));
    note_ = plan_note_change(view_, info_, model_, request);

    RUNPATCH_TRY(EditPlan result, plan_tables());
    result.warnings = note_.warnings;
    result.warnings.insert(result.warnings.end(), warnings_.begin(), warnings_.end());
    return result;
  }

 private:
  static bool only_interpreter(const EditRequest& r) {
    return r.interpreter && !r.runpath && !r.soname && r.add_needed.empty() && r.remove_needed.empty() &&
           r.replace_needed.empty() && r.resolution_cache == ResolutionCacheMode::Refresh;
  }

  // A program whose loader sees no dynamic section (PT_DYNAMIC hidden, or
  // nothing but DT_NULL): the interpreter is rewritten where it is, or moves
  // into a segment of its own.
  Expected<EditPlan> plan_interpreter_only(const EditRequest& request) {
    RUNPATCH_CHECK(check_segments());
    RUNPATCH_CHECK(plan_interpreter(request));
    EditPlan plan;
    plan.new_size = view_.bytes().size();
    if (!interp_changed_) return plan;
    if (interp_needs_room_) return plan_appended_segment(/*with_dynamic=*/false);
    plan.strategy = EditStrategy::InPlace;
    plan.layout_note = "interpreter rewritten in place";
    add_interp_write(plan, WritePhase::Commit);
    return plan;
  }

  // The editor maps new addresses through the PT_LOADs and copies segments'
  // bytes, so they must be sound (gABI: inside the file; p_filesz <= p_memsz;
  // power-of-two alignment; no two PT_LOADs overlapping in memory). The loader rejects or crashes on such files anyway; editing one
  // would produce a file whose new tables map to the wrong bytes.
  Status check_segments() const {
    const auto& phdrs = view_.phdrs();
    uint64_t header_offset = view_.ehdr().e_phoff;
    for (size_t i = 0; i < phdrs.size(); ++i) {
      const Phdr& a = phdrs[i];
      uint64_t at = header_offset + i * sizeof(Phdr);
      // Any segment's bytes may be carried into the new segment (notes, interpreter).
      if (a.p_filesz > 0 && (a.p_offset > view_.bytes().size() || a.p_filesz > view_.bytes().size() - a.p_offset))
        return view_.error(fmt::format("program header #{} (type {:#x}) extends past the end of the file", i,
                                       uint32_t(a.p_type)), at);
      if (a.p_type != elf::PT_LOAD) continue;
      if (a.p_filesz > a.p_memsz) return view_.error(fmt::format("PT_LOAD #{}: file size is larger than memory size", i), at);
      // Alignment decides where a new segment goes: a corrupt one would pad the file without bound.
      if (a.p_align > 1 && ((a.p_align & (a.p_align - 1)) != 0 || a.p_align > kMaxLoadAlign))
        return view_.error(fmt::format("PT_LOAD #{}: alignment {:#x} is not a power of two up to 64 MiB", i,
                                       uint64_t(a.p_align)), at);
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
    for (const auto& e : model.entries)
      if (e.text && e.text->find('\0') != std::string::npos)
        return view_.error("a new string contains a NUL byte");
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
        warnings_.push_back(fmt::format("{} still has symbol-version needs (.gnu.version_r): ld.so aborts at start-up "
                                        "unless another object loads it",
                                        file.library));
    }
    return {};
  }

  // The vn_file fields switch after the dynamic section does: until then the old name is right.
  void add_version_need_writes(EditPlan& plan) const {
    for (const auto& update : verneed_updates_) {
      if (update.written_in_copy) continue;
      typename E::Word value;
      value = static_cast<uint32_t>(update.new_value);
      plan.writes.push_back({WritePhase::Commit, update.field_offset, bytes_of(std::span<const typename E::Word>(&value, 1)),
                             "version need file"});
    }
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

  // Dynamic section, interpreter and resolution-cache note: in place where
  // they fit, otherwise in segments appended to the file.
  Expected<EditPlan> plan_tables() {
    EditPlan plan;
    plan.new_size = view_.bytes().size();
    bool tables_change = model_.any_changed(original_) || interp_changed_ || !verneed_updates_.empty();
    if (!tables_change && note_.action == NoteChange::Action::None) return plan;
    if (interp_needs_room_) return plan_appended_segment(/*with_dynamic=*/true);
    if (tables_change) {
      RUNPATCH_TRY(auto in_place, plan_in_place());
      if (!in_place) return plan_appended_segment(/*with_dynamic=*/true);
      plan = std::move(*in_place);
    }
    if (note_.action == NoteChange::Action::None) return plan;
    if (auto writes = note_writes_in_place()) {
      plan.strategy = EditStrategy::InPlace;
      join_note(plan.layout_note, note_.action == NoteChange::Action::Remove ? "resolution cache removed"
                                                                             : "resolution cache rewritten in place");
      plan.writes.insert(plan.writes.end(), writes->begin(), writes->end());
      return plan;
    }
    RUNPATCH_TRY(EditPlan appended, plan_appended_segment(/*with_dynamic=*/false));
    join_note(appended.layout_note, plan.layout_note);
    appended.writes.insert(appended.writes.begin(), plan.writes.begin(), plan.writes.end());
    return appended;
  }

  static void join_note(std::string& into, const std::string& more) {
    if (!more.empty()) into += (into.empty() ? "" : "; ") + more;
  }

  // ---- Resolution-cache note in place ---------------------------------------

  static std::vector<uint8_t> phdr_bytes(const Phdr& ph) { return bytes_of(std::span<const Phdr>(&ph, 1)); }
  uint64_t phdr_offset(size_t index) const { return uint64_t(view_.ehdr().e_phoff) + index * sizeof(Phdr); }

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
        writes.push_back({WritePhase::Cleanup, old.offset, std::vector<uint8_t>(segment.p_filesz, 0), "old resolution cache"});
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
    detail::StringRefCollector<E> refs(view_, table_);
    auto symbols = refs.symbol_and_version_refs();
    if (!symbols) return std::optional<StringUse>();  // cannot prove bytes free: append instead
    StringUse use{*symbols, *symbols};
    for (const auto& e : original_.entries)
      if (e.text) use.now.push_back({e.value, e.value + e.text->size() + 1});
    for (const auto& e : model_.entries)
      if (e.text && !e.changed) use.survives.push_back({e.value, e.value + e.text->size() + 1});
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

    if (!model_.any_changed(original_) && verneed_updates_.empty()) {
      plan.layout_note = "interpreter rewritten in place";
    } else if (StringSpace unused(table_.strtab_size, use->now); place_strings(placed, unused, strtab)) {
      // (a) New strings into bytes nothing references now; the dynamic table write commits.
      plan.layout_note = "new strings in unused bytes of the string table";
      add_string_writes(plan, WritePhase::Prepare, original_strtab, strtab);
      add_dynamic_write(plan, placed, WritePhase::Commit);
    } else if (auto single = single_string_rewrite(); single && verneed_updates_.empty()) {
      // (b) One string rewritten over its own bytes (and free bytes after it): that write commits.
      placed = model_;
      strtab = original_strtab;
      auto& entry = placed.entries[*single];
      uint64_t at = original_.entries[*single].value;
      StringSpace reusable(table_.strtab_size, use->survives);
      if (!reusable.claim(at, entry.text->size() + 1)) return std::optional<EditPlan>();
      std::memcpy(strtab.data() + at, entry.text->c_str(), entry.text->size() + 1);
      entry.value = at;
      plan.layout_note = "string rewritten over its own bytes";
      add_string_writes(plan, WritePhase::Commit, original_strtab, strtab);
    } else {
      return std::optional<EditPlan>();
    }
    if (interp_changed_) add_interp_write(plan, WritePhase::Commit);
    add_version_need_writes(plan);
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
    return true;
  }

  // One write covering every byte that differs (they are few and close together).
  void add_string_writes(EditPlan& plan, WritePhase phase, const std::vector<uint8_t>& before,
                         const std::vector<uint8_t>& after) const {
    size_t first = before.size(), last = 0;
    for (size_t i = 0; i < before.size(); ++i)
      if (before[i] != after[i]) first = std::min(first, i), last = i + 1;
    if (first >= last) return;
    plan.writes.push_back({phase, table_.strtab_offset + first,
                           std::vector<uint8_t>(after.begin() + first, after.begin() + last), "dynamic strings"});
  }

  void add_dynamic_write(EditPlan& plan, const DynamicModel& model, WritePhase phase) const {
    size_t count = std::max(model.entries.size(), original_.entries.size()) + 1;
    std::vector<uint8_t> bytes = serialize_dynamic(model, count);
    plan.writes.push_back({phase, table_.offset, std::move(bytes), "dynamic section"});
  }

  void add_interp_write(EditPlan& plan, WritePhase phase) const {
    std::vector<uint8_t> bytes(uint64_t(interp_phdr_->p_filesz), 0);
    std::memcpy(bytes.data(), new_interp_.data(), new_interp_.size());
    plan.writes.push_back({phase, uint64_t(interp_phdr_->p_offset), std::move(bytes), "interpreter"});
  }

  // After the commit, zero the old strings no one references any more.
  void add_cleanup(EditPlan& plan, const DynamicModel& placed, const StringUse& use,
                   const std::vector<uint8_t>& strtab) const {
    std::vector<ByteRange> live = use.survives;
    for (const auto& e : placed.entries)
      if (e.text) live.push_back({e.value, e.value + e.text->size() + 1});
    std::vector<uint8_t> cleaned = strtab;
    for (const auto& e : original_.entries) {
      if (!e.text) continue;
      for (uint64_t b = e.value; b < e.value + e.text->size() + 1; ++b) {
        bool referenced = std::any_of(live.begin(), live.end(), [&](const ByteRange& r) { return b >= r.begin && b < r.end; });
        if (!referenced) cleaned[b] = 0;
      }
    }
    add_string_writes(plan, WritePhase::Cleanup, strtab, cleaned);
  }

  std::vector<uint8_t> serialize_dynamic(const DynamicModel& model, size_t slots) const {
    std::vector<uint8_t> bytes(slots * sizeof(Dyn), 0);
    for (size_t i = 0; i < model.entries.size(); ++i) {
      auto* d = struct_at<Dyn>(bytes, i * sizeof(Dyn));
      d->d_tag = model.entries[i].tag;
      d->d_val = model.entries[i].value;
    }
    return bytes;
  }

  std::vector<uint8_t> copy_range(uint64_t off, uint64_t size) const {
    auto b = view_.bytes().subspan(off, size);
    return {b.begin(), b.end()};
  }

  // ---- Appended segment ---------------------------------------------------

  static constexpr uint64_t kMinPage = 0x1000;
  static constexpr uint64_t kSpareDynamicSlots = 4;
  static constexpr uint64_t kMinStringSlack = 256;
  static constexpr uint64_t kMaxLoadAlign = uint64_t(64) << 20;
  static constexpr uint64_t kMaxHole = uint64_t(1) << 30;

  uint64_t page_size() const {
    if (options_.page_size) return *options_.page_size;
    uint64_t page = kMinPage;
    for (const auto& ph : view_.phdrs())
      if (ph.p_type == elf::PT_LOAD) page = std::max<uint64_t>(page, ph.p_align);
    return page;
  }

  // The page binutils (strip, objcopy) lays segments out by for this machine
  // (its ELF_MAXPAGESIZE): a moved program header table must sit sizeof(Ehdr)
  // past a boundary of it, not of the largest p_align (2 MiB for many CUDA
  // libraries), so the file grows by less than one such page.
  uint64_t binutils_page() const {
    switch (uint16_t(view_.ehdr().e_machine)) {
      case elf::EM_AARCH64: case elf::EM_PPC64: case elf::EM_PPC: case elf::EM_MIPS: case elf::EM_LOONGARCH:
        return 0x10000;
      case elf::EM_SPARCV9:
        return 0x100000;
      default:
        return kMinPage;
    }
  }

  // The resolution-cache segment of an earlier edit: the last PT_LOAD,
  // read-only, holding the note alone in its PT_NOTE.
  std::optional<size_t> earlier_note_segment() const {
    if (!note_.existing || !note_.existing->alone) return std::nullopt;
    auto phdrs = view_.phdrs();
    std::optional<size_t> last;
    size_t loads = 0;
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_LOAD) last = i, ++loads;
    if (!last || loads < 2) return std::nullopt;
    const Phdr& ph = phdrs[*last];
    if (ph.p_flags != elf::PF_R || !covers(ph, note_.existing->offset, note_.existing->size)) return std::nullopt;
    return last;
  }

  // A segment an earlier runpatch edit appended: the last PT_LOAD (before a
  // resolution-cache segment), holding the dynamic strings and section, and
  // starting with them or the program headers.
  std::optional<size_t> earlier_runpatch_segment(std::optional<size_t> note_segment) const {
    auto phdrs = view_.phdrs();
    std::optional<size_t> last;
    size_t loads = 0;
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_LOAD && i != note_segment) last = i, ++loads;
    if (!last || loads < 2) return std::nullopt;
    const Phdr& ph = phdrs[*last];
    uint64_t begin = ph.p_offset, end = begin + uint64_t(ph.p_filesz);
    bool starts_like_ours = begin == table_.strtab_offset || begin == uint64_t(view_.ehdr().e_phoff);
    if (!starts_like_ours || table_.strtab_offset < begin || table_.strtab_offset >= end || table_.offset < begin ||
        table_.offset >= end)
      return std::nullopt;
    return last;
  }

  bool covers(const Phdr& segment, uint64_t off, uint64_t size) const {
    return off >= segment.p_offset && off + size <= uint64_t(segment.p_offset) + uint64_t(segment.p_filesz);
  }

  // The PT_NOTE of a resolution-cache note this edit replaces or drops (it is not carried along).
  static bool is_replaced_note(const Phdr& ph, std::optional<uint64_t> replaced_note) {
    return replaced_note && ph.p_type == elf::PT_NOTE && ph.p_offset == *replaced_note;
  }

  // with_dynamic: a read-write segment takes the dynamic strings and section
  // (and whatever has to move with them); a resolution-cache note then gets a
  // read-only segment of its own after it. Without it, one read-only segment
  // takes the note (and the program headers or notes that make room for it).
  Expected<EditPlan> plan_appended_segment(bool with_dynamic) {
    const Ehdr& eh = view_.ehdr();
    std::vector<Phdr> phdrs(view_.phdrs().begin(), view_.phdrs().end());
    uint64_t page = page_size();
    uint64_t old_size = view_.bytes().size();
    uint64_t phoff = eh.e_phoff;
    uint64_t phdr_table_size = phdrs.size() * sizeof(Phdr);

    // The resolution-cache note: what to place, and the old note it replaces.
    std::optional<size_t> note_segment = earlier_note_segment();
    std::vector<uint8_t> note_bytes = note_.bytes;
    if (with_dynamic && note_segment && note_.action == NoteChange::Action::None) {
      // Unchanged, but its segment must stay last: it moves along.
      auto old = view_.bytes().subspan(note_.existing->offset, note_.existing->size);
      note_bytes.assign(old.begin(), old.end());
    }
    bool place_note = !note_bytes.empty();
    bool replace_existing = note_.existing && (note_.action != NoteChange::Action::None || place_note);
    const bool existing_alone = replace_existing && note_.existing->alone;
    std::optional<uint64_t> replaced_note;
    if (existing_alone) replaced_note = note_.existing->offset;

    // Entries that this edit frees: they become PT_NULL, reused below.
    std::string note;
    std::optional<Phdr> earlier_segment, earlier_note;
    if (std::optional<size_t> earlier = with_dynamic ? earlier_runpatch_segment(note_segment) : std::nullopt) {
      earlier_segment = phdrs[*earlier];
      phdrs[*earlier].p_type = elf::PT_NULL;
      note = "replaced the segment of an earlier edit";
    }
    if (note_segment && replace_existing) {
      earlier_note = phdrs[*note_segment];
      phdrs[*note_segment].p_type = elf::PT_NULL;
    }
    if (existing_alone) phdrs[note_.existing->segment].p_type = elf::PT_NULL;

    // Room for the new entries (docs/editing.md lists the ways in order).
    bool note_load = place_note && with_dynamic;
    size_t wanted = 1 + (note_load ? 1 : 0) + (place_note ? 1 : 0);
    bool move_phdrs = false;
    bool grow_in_place = false;  // the table gains entries where it is
    bool evacuated_interp = false;
    std::vector<CarriedRange> carried;  // notes that move into the new segment unchanged
    bool table_in_earlier = (earlier_segment && covers(*earlier_segment, phoff, phdr_table_size)) ||
                            (earlier_note && covers(*earlier_note, phoff, phdr_table_size));
    if (table_in_earlier) {
      move_phdrs = true;
    } else {
      size_t reused = 0;
      std::string slot_note;
      while (reused < wanted) {
        auto slot = find_slot(phdrs, slot_note);
        if (!slot) break;
        phdrs.erase(phdrs.begin() + *slot);
        ++reused;
      }
      if (reused > 0 && note.empty()) note = slot_note;
      if (reused < wanted) {
        if (evacuate_after_table(phoff + phdr_table_size, wanted - reused, replaced_note, carried, evacuated_interp,
                                 with_dynamic)) {
          grow_in_place = true;
          join_note(note, "moved what followed the program headers (interpreter, notes, dynamic tables) into the new segment");
        } else {
          move_phdrs = true;
          join_note(note, "moved the program header table into the new segment");
        }
      }
    }
    // Whatever lived in an earlier runpatch segment must move again.
    bool interp_in_earlier = false;
    for (const auto& segment : {earlier_segment, earlier_note}) {
      if (!segment) continue;
      for (const auto& ph : view_.phdrs()) {
        if (!covers(*segment, ph.p_offset, ph.p_filesz) || is_replaced_note(ph, replaced_note)) continue;
        if (ph.p_type == elf::PT_INTERP) interp_in_earlier = true;
        if (ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY) carry(carried, ph);
      }
      for (const auto& t : movable_dynamic_tables())
        if (covers(*segment, t.off, t.size) &&
            std::none_of(carried.begin(), carried.end(), [&](const CarriedRange& c) { return c.off == t.off; }))
          carried.push_back(t);
    }
    bool move_interp = interp_needs_room_ || interp_in_earlier || evacuated_interp;
    std::string interp_text = interp_changed_ ? new_interp_ : info_.interpreter.value_or("");

    // The new PT_LOADs go after the last PT_LOAD (loaders size the mapping from
    // first to last); the new PT_NOTE after the last PT_NOTE.
    size_t load_at = 0;
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_LOAD) load_at = i + 1;
    phdrs.insert(phdrs.begin() + load_at, note_load ? 2 : 1, Phdr{});
    std::optional<size_t> note_at;
    if (place_note) {
      size_t at = phdrs.size();
      for (size_t i = 0; i < phdrs.size(); ++i)
        if (phdrs[i].p_type == elf::PT_NOTE) at = i + 1;
      phdrs.insert(phdrs.begin() + at, Phdr{});
      note_at = at;
    }
    if (phdrs.size() >= elf::PN_XNUM) return view_.error("too many program headers to add one");

    // New string table: the old one copied whole (every offset stays valid), then new strings, then slack.
    DynamicModel placed = model_;
    std::vector<uint8_t> strtab;
    if (with_dynamic) {
      strtab = copy_range(table_.strtab_offset, table_.strtab_size);
      std::map<std::string, uint64_t> offsets;
      uint64_t added = 0;
      auto add_string = [&](const std::string& s) {
        if (offsets.count(s)) return;
        offsets[s] = strtab.size();
        strtab.insert(strtab.end(), s.begin(), s.end());
        strtab.push_back(0);
        added += s.size() + 1;
      };
      // Runpath strings last, so that later edits of them can grow into the slack in place.
      for (const auto& e : placed.entries)
        if (e.changed && e.text && !DynamicModel::is_runpath_entry(e)) add_string(*e.text);
      for (const auto& update : verneed_updates_) add_string(update.text);
      for (const auto& e : placed.entries)
        if (e.changed && e.text && DynamicModel::is_runpath_entry(e)) add_string(*e.text);
      strtab.resize(strtab.size() + std::max(kMinStringSlack, added), 0);
      for (auto& e : placed.entries)
        if (e.changed && e.text) e.value = offsets[*e.text];
      for (auto& update : verneed_updates_) update.new_value = offsets[update.text];
    }

    // Segment layout: program headers (first, where objcopy/strip expect them in
    // a segment that holds them), strings, dynamic section, interpreter, notes.
    uint64_t phdr_rel = 0;
    uint64_t cursor = move_phdrs ? phdrs.size() * sizeof(Phdr) : 0;
    uint64_t strtab_rel = 0, dyn_rel = 0, dyn_slots = 0;
    if (with_dynamic) {
      strtab_rel = move_phdrs ? align_up(cursor, 16) : 0;
      dyn_rel = align_up(strtab_rel + strtab.size(), 16);
      dyn_slots = placed.entries.size() + 1 + kSpareDynamicSlots;
      cursor = dyn_rel + dyn_slots * sizeof(Dyn);
    }
    uint64_t interp_rel = cursor;
    uint64_t seg_size = interp_rel + (move_interp ? interp_text.size() + 1 : 0);
    for (auto& c : carried) {
      c.rel = align_up(seg_size, c.align);
      seg_size = c.rel + c.size;
    }
    uint64_t note_rel = 0;
    if (place_note && !note_load) {
      note_rel = align_up(seg_size, 4);
      seg_size = note_rel + note_bytes.size();
    }

    // Placement: vaddr ≡ offset (mod page), above every segment, and never below its
    // offset (qemu-user). Executables whose program headers move keep the first
    // PT_LOAD's vaddr-offset delta, as older kernels derive AT_PHDR from it.
    uint64_t max_end = 0;
    const Phdr* first_load = nullptr;
    for (const auto& ph : view_.phdrs()) {
      bool given_up = (earlier_segment && ph.p_offset == earlier_segment->p_offset) ||
                      (earlier_note && ph.p_offset == earlier_note->p_offset);
      if (ph.p_type == elf::PT_LOAD && !given_up) {
        max_end = std::max<uint64_t>(max_end, uint64_t(ph.p_vaddr) + uint64_t(ph.p_memsz));
        if (!first_load) first_load = &ph;
      }
    }
    uint64_t base = align_up(max_end, page);
    uint64_t seg_off = align_up(old_size, 16);
    if (move_phdrs) {
      // binutils (strip, objcopy) assumes a program header table that is not in
      // the first segment sits sizeof(Ehdr) past a page boundary, and relays the
      // segment out wrongly otherwise. The padding before it is left as a hole.
      uint64_t tool_page = std::min(page, binutils_page());
      seg_off = align_down(old_size, tool_page) + sizeof(Ehdr);
      if (seg_off < old_size) seg_off += tool_page;
    }
    auto delta_for = [&](uint64_t off) { return base > align_down(off, page) ? base - align_down(off, page) : 0; };
    uint64_t delta = delta_for(seg_off);
    bool needs_congruence = move_phdrs && (view_.find_phdr(elf::PT_PHDR) || info_.is_executable());
    if (needs_congruence && first_load) {
      uint64_t delta0 = uint64_t(first_load->p_vaddr) - uint64_t(first_load->p_offset);
      if (delta0 % page != 0 || uint64_t(first_load->p_vaddr) < uint64_t(first_load->p_offset))
        return view_.error("cannot move the program headers: first PT_LOAD is not page-congruent");
      if (delta > delta0) seg_off += delta - delta0;  // a hole, so that offset + delta0 clears the image
      delta = delta0;
    }
    uint64_t seg_vaddr = seg_off + delta;
    // The hole stays sparse, but copies and archives expand it: bound it (a corrupt address would be unbounded).
    if (seg_off - old_size > kMaxHole)
      return view_.error(fmt::format("a new segment would need a {} MiB hole before it (address space ends at {:#x})",
                                     (seg_off - old_size) >> 20, max_end));
    if (seg_vaddr + seg_size < seg_vaddr) return view_.error("no address space left above the last segment");

    // The note's own segment follows in the file without a gap and one page
    // higher in memory: its first file page may be the read-write segment's
    // last, mapped twice, but no page of memory is both.
    uint64_t note_off = seg_off + note_rel, note_vaddr = seg_vaddr + note_rel;
    if (note_load) {
      note_off = align_up(seg_off + seg_size, 8);
      note_vaddr = note_off + delta + page;
      if (note_vaddr + note_bytes.size() < note_vaddr) return view_.error("no address space left above the last segment");
    }

    // The loader may write DT_DEBUG and relocate the dynamic table; notes and headers are only read.
    describe(phdrs[load_at], elf::PT_LOAD, with_dynamic ? elf::PF_R | elf::PF_W : elf::PF_R, seg_off, seg_vaddr,
             seg_size, page);
    if (note_load) describe(phdrs[load_at + 1], elf::PT_LOAD, elf::PF_R, note_off, note_vaddr, note_bytes.size(), page);
    if (note_at) describe(phdrs[*note_at], elf::PT_NOTE, elf::PF_R, note_off, note_vaddr, note_bytes.size(), 4);

    for (auto& e : placed.entries) {
      if (!with_dynamic) break;
      for (const auto& c : carried)
        if (c.dynamic_tag != 0 && e.tag == c.dynamic_tag) e.value = seg_vaddr + c.rel;
      if (e.tag == elf::DT_STRTAB) e.value = seg_vaddr + strtab_rel;
      if (e.tag == elf::DT_STRSZ) e.value = strtab.size();
      if (e.tag == elf::DT_MIPS_RLD_MAP_REL) {
        // Relative to its own entry's address, which moves with the table.
        uint64_t index = &e - placed.entries.data();
        uint64_t old_addr = dynamic_vaddr() + index * sizeof(Dyn);
        e.value = e.value + old_addr - (seg_vaddr + dyn_rel + index * sizeof(Dyn));
      }
    }

    for (size_t i = 0; i < phdrs.size(); ++i) {
      Phdr& ph = phdrs[i];
      if (i == load_at || i == note_at) continue;
      if (ph.p_type == elf::PT_DYNAMIC && with_dynamic) {
        ph.p_offset = seg_off + dyn_rel;
        ph.p_vaddr = seg_vaddr + dyn_rel;
        ph.p_paddr = seg_vaddr + dyn_rel;
        ph.p_filesz = dyn_slots * sizeof(Dyn);
        ph.p_memsz = dyn_slots * sizeof(Dyn);
      } else if (ph.p_type == elf::PT_INTERP && move_interp) {
        ph.p_offset = seg_off + interp_rel;
        ph.p_vaddr = seg_vaddr + interp_rel;
        ph.p_paddr = seg_vaddr + interp_rel;
        ph.p_filesz = interp_text.size() + 1;
        ph.p_memsz = interp_text.size() + 1;
      } else if (ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY) {
        for (const auto& c : carried)
          if (ph.p_offset == c.off && ph.p_filesz == c.size) {
            ph.p_offset = seg_off + c.rel;
            ph.p_vaddr = seg_vaddr + c.rel;
            ph.p_paddr = seg_vaddr + c.rel;
          }
      } else if (ph.p_type == elf::PT_PHDR && grow_in_place) {
        ph.p_filesz = phdrs.size() * sizeof(Phdr);
        ph.p_memsz = phdrs.size() * sizeof(Phdr);
      } else if (ph.p_type == elf::PT_PHDR && move_phdrs) {
        ph.p_offset = seg_off + phdr_rel;
        ph.p_vaddr = seg_vaddr + phdr_rel;
        ph.p_paddr = seg_vaddr + phdr_rel;
        ph.p_filesz = phdrs.size() * sizeof(Phdr);
        ph.p_memsz = phdrs.size() * sizeof(Phdr);
      }
    }

    // The appended bytes: the segments, then a copy of the section headers. The
    // padding before the segment is not written: past the old end it reads as
    // zeros anyway, and a file system keeps it sparse.
    std::vector<uint8_t> tail(seg_size, 0);
    if (with_dynamic) {
      std::memcpy(tail.data() + strtab_rel, strtab.data(), strtab.size());
      auto dyn_bytes = serialize_dynamic(placed, dyn_slots);
      std::memcpy(tail.data() + dyn_rel, dyn_bytes.data(), dyn_bytes.size());
    }
    if (move_interp) std::memcpy(tail.data() + interp_rel, interp_text.c_str(), interp_text.size() + 1);
    if (move_phdrs) std::memcpy(tail.data() + phdr_rel, phdrs.data(), phdrs.size() * sizeof(Phdr));
    for (const auto& c : carried) std::memcpy(tail.data() + c.rel, view_.bytes().data() + c.off, c.size);
    // A version-need table that moved takes its new library names in the copy.
    for (auto& update : verneed_updates_)
      for (const auto& c : carried)
        if (update.field_offset >= c.off && update.field_offset + 4 <= c.off + c.size) {
          auto* field = struct_at<typename E::Word>(tail, c.rel + (update.field_offset - c.off));
          *field = static_cast<uint32_t>(update.new_value);
          update.written_in_copy = true;
        }
    if (place_note) {
      tail.resize(note_off + note_bytes.size() - seg_off, 0);
      std::memcpy(tail.data() + (note_off - seg_off), note_bytes.data(), note_bytes.size());
    }
    EditPlan plan;
    if (replace_existing && !existing_alone) {
      // A note sharing its segment stays where it is, as a note no loader reads.
      auto header = neutralized_note_header(view_, *note_.existing);
      plan.writes.push_back({WritePhase::Prepare, note_.existing->offset, header, "old resolution cache"});
      for (const auto& c : carried)
        if (note_.existing->offset >= c.off && note_.existing->offset + header.size() <= c.off + c.size)
          std::memcpy(tail.data() + c.rel + (note_.existing->offset - c.off), header.data(), header.size());
    }

    std::vector<uint8_t> header = copy_range(0, sizeof(Ehdr));
    std::vector<MovedSection> moved;
    auto* new_eh = struct_at<Ehdr>(header, 0);
    if (!view_.shdrs().empty()) {
      std::vector<Shdr> shdrs(view_.shdrs().begin(), view_.shdrs().end());
      if (with_dynamic)
        moved = update_sections(shdrs, seg_off, seg_vaddr, strtab_rel, dyn_rel, dyn_slots, strtab.size(), move_interp,
                                interp_rel, interp_text.size() + 1, carried);
      else
        moved = update_sections(shdrs, seg_off, seg_vaddr, 0, 0, 0, 0, move_interp, interp_rel,
                                interp_text.size() + 1, carried, /*dynamic_moves=*/false);
      if (replace_existing) RUNPATCH_CHECK(update_note_section(shdrs, *new_eh, tail, seg_off, place_note, note_off,
                                                               note_vaddr, note_bytes.size()));
      else if (place_note) RUNPATCH_CHECK(add_note_section(shdrs, *new_eh, tail, seg_off, note_off, note_vaddr,
                                                           note_bytes.size()));
      uint64_t shoff = align_up(seg_off + tail.size(), 8);
      tail.resize(shoff - seg_off, 0);
      auto sh_bytes = bytes_of(std::span<const Shdr>(shdrs));
      tail.insert(tail.end(), sh_bytes.begin(), sh_bytes.end());
      new_eh->e_shoff = shoff;
    }
    if (view_.ehdr().e_phnum != elf::PN_XNUM) new_eh->e_phnum = static_cast<uint16_t>(phdrs.size());
    else return view_.error("extended program header numbering (PN_XNUM) cannot grow");

    plan.strategy = EditStrategy::Appended;
    plan.layout_note = note;
    if (place_note) join_note(plan.layout_note, note_load ? "resolution cache in a read-only segment of its own"
                                                          : "resolution cache in a read-only segment");
    plan.new_size = seg_off + tail.size();
    plan.writes.push_back({WritePhase::Prepare, seg_off, std::move(tail), "appended segment"});
    if (move_phdrs) {
      new_eh->e_phoff = seg_off + phdr_rel;
      plan.writes.push_back({WritePhase::Commit, 0, std::move(header), "ELF header"});
    } else {
      auto table = bytes_of(std::span<const Phdr>(phdrs));
      if (phoff == sizeof(Ehdr)) {
        // Header and program headers are adjacent: one write switches the file.
        header.insert(header.end(), table.begin(), table.end());
        plan.writes.push_back({WritePhase::Commit, 0, std::move(header), "ELF and program headers"});
      } else {
        plan.writes.push_back({WritePhase::Commit, phoff, std::move(table), "program headers"});
        plan.writes.push_back({WritePhase::Commit, 0, std::move(header), "ELF header"});
      }
    }
    // A new interpreter that fits where the old one is, while the segment is appended for other reasons.
    if (interp_changed_ && !move_interp) add_interp_write(plan, WritePhase::Commit);
    add_version_need_writes(plan);
    add_symbol_updates(plan, moved, with_dynamic ? seg_vaddr + dyn_rel : dynamic_vaddr());
    return plan;
  }

  static void describe(Phdr& ph, uint32_t type, uint32_t flags, uint64_t offset, uint64_t vaddr, uint64_t size,
                       uint64_t align) {
    ph.p_type = type;
    ph.p_flags = flags;
    ph.p_offset = offset;
    ph.p_vaddr = vaddr;
    ph.p_paddr = vaddr;
    ph.p_filesz = size;
    ph.p_memsz = size;
    ph.p_align = align;
  }

  // The old note's section header follows the new note, or retires with it.
  Status update_note_section(std::vector<Shdr>& shdrs, Ehdr& eh, std::vector<uint8_t>& tail, uint64_t seg_off,
                             bool place_note, uint64_t note_off, uint64_t note_vaddr, uint64_t note_size) const {
    bool alone = note_.existing->alone;
    if (note_.existing_section) {
      Shdr& sh = shdrs[*note_.existing_section];
      if (place_note && alone) {
        sh.sh_offset = note_off;
        sh.sh_addr = note_vaddr;
        sh.sh_size = note_size;
        return {};
      }
      sh.sh_name = 0;
      if (alone) sh = Shdr{};  // SHT_NULL: every field zero (gABI)
    }
    if (place_note) return add_note_section(shdrs, eh, tail, seg_off, note_off, note_vaddr, note_size);
    return {};
  }

  // A new .note.nixos.ldcache section header; its name goes into a copy of
  // the section name table at the end of the file when the table lacks it.
  Status add_note_section(std::vector<Shdr>& shdrs, Ehdr& eh, std::vector<uint8_t>& tail, uint64_t seg_off,
                          uint64_t note_off, uint64_t note_vaddr, uint64_t note_size) const {
    uint32_t names = view_.shstrndx();
    bool extended_count = view_.ehdr().e_shnum == 0;
    if (names == 0 || names >= shdrs.size() || shdrs.size() + 1 >= elf::SHN_LORESERVE) return {};  // the segment suffices
    Shdr& table = shdrs[names];
    if (!view_.in_file(table.sh_offset, table.sh_size)) return {};
    auto old_names = view_.bytes().subspan(table.sh_offset, table.sh_size);
    std::optional<uint64_t> name = find_string_in_table(old_names, kResolutionCacheSection);
    if (!name) {
      name = old_names.size();
      table.sh_offset = seg_off + tail.size();
      tail.insert(tail.end(), old_names.begin(), old_names.end());
      tail.insert(tail.end(), kResolutionCacheSection.begin(), kResolutionCacheSection.end());
      tail.push_back(0);
      table.sh_size = tail.size() - (uint64_t(table.sh_offset) - seg_off);
    }
    Shdr sh{};
    sh.sh_name = uint32_t(*name);
    sh.sh_type = elf::SHT_NOTE;
    sh.sh_flags = elf::SHF_ALLOC;
    sh.sh_addr = note_vaddr;
    sh.sh_offset = note_off;
    sh.sh_size = note_size;
    sh.sh_addralign = 4;
    shdrs.push_back(sh);
    if (extended_count) shdrs[0].sh_size = shdrs.size();
    else eh.e_shnum = static_cast<uint16_t>(shdrs.size());
    return {};
  }

  struct MovedSection {
    size_t index;
    uint64_t old_addr, old_size, new_addr;
  };

  // Symbols defined in a moved section (section symbols, _DYNAMIC) follow it, so
  // that debuggers and eu-elflint agree with the program headers. Only tools read these.
  void add_symbol_updates(EditPlan& plan, const std::vector<MovedSection>& moved, uint64_t new_dynamic) const {
    using Sym = elf::Sym<E>;
    uint64_t old_dynamic = dynamic_vaddr();
    if (moved.empty() && new_dynamic == old_dynamic) return;  // no symbol can change: spare the walk
    auto shdrs = view_.shdrs();
    for (const auto& sh : shdrs) {
      if ((sh.sh_type != elf::SHT_SYMTAB && sh.sh_type != elf::SHT_DYNSYM) || sh.sh_entsize != sizeof(Sym) ||
          sh.sh_link >= shdrs.size())
        continue;
      const auto& strtab = shdrs[sh.sh_link];
      auto symbols = view_.template table_at<Sym>(sh.sh_offset, uint64_t(sh.sh_size) / sizeof(Sym), "symbol table");
      if (!symbols || !view_.in_file(strtab.sh_offset, strtab.sh_size)) continue;
      for (size_t i = 0; i < symbols->size(); ++i) {
        const Sym& sym = (*symbols)[i];
        std::optional<uint64_t> value;
        for (const auto& m : moved)
          if (sym.st_shndx == m.index && sym.st_value >= m.old_addr && sym.st_value <= m.old_addr + m.old_size)
            value = uint64_t(sym.st_value) - m.old_addr + m.new_addr;
        if (!value && sym.st_value == old_dynamic) {
          auto name = view_.string_at(strtab.sh_offset, strtab.sh_size, sym.st_name, "symbol");
          if (name && *name == "_DYNAMIC") value = new_dynamic;
        }
        if (!value) continue;
        Sym updated = sym;
        updated.st_value = *value;
        plan.writes.push_back({WritePhase::Cleanup, uint64_t(sh.sh_offset) + i * sizeof(Sym),
                               bytes_of(std::span<const Sym>(&updated, 1)), "symbol value"});
      }
    }
  }

  uint64_t dynamic_vaddr() const {
    const Phdr* ph = view_.find_phdr(elf::PT_DYNAMIC);
    return ph ? uint64_t(ph->p_vaddr) : 0;
  }

  struct CarriedRange {
    uint64_t off, size, align;
    uint64_t rel = 0;          // place in the new segment
    uint64_t dynamic_tag = 0;  // a table the dynamic section points at (DT_GNU_HASH ...); 0 for notes
  };

  // Tables the loader finds only through the dynamic section: a copy in the
  // new segment and a new address in its entry move them. Their sizes come from
  // the section headers (none: not movable).
  static constexpr uint64_t kMovableTableTags[] = {detail::DT_GNU_HASH, detail::DT_HASH, detail::DT_SYMTAB,
                                                   0x6ffffff0 /*DT_VERSYM*/, detail::DT_VERNEED, detail::DT_VERDEF};

  std::vector<CarriedRange> movable_dynamic_tables() const {
    std::vector<CarriedRange> tables;
    for (uint64_t tag : kMovableTableTags) {
      auto vaddr = table_.find(tag);
      if (!vaddr) continue;
      for (const auto& sh : view_.shdrs())
        if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && sh.sh_addr == *vaddr && sh.sh_size > 0 &&
            view_.in_file(sh.sh_offset, sh.sh_size)) {
          uint64_t align = std::clamp<uint64_t>(sh.sh_addralign, 1, 16);
          tables.push_back({uint64_t(sh.sh_offset), uint64_t(sh.sh_size), align, 0, tag});
          break;
        }
    }
    return tables;
  }

  static void carry(std::vector<CarriedRange>& carried, const Phdr& ph) {
    for (const auto& c : carried)
      if (c.off == ph.p_offset && c.size == ph.p_filesz) return;  // PT_NOTE and PT_GNU_PROPERTY often coincide
    // Notes are 4- or 8-aligned (gABI); any other value is treated as 4 rather than trusted.
    carried.push_back({uint64_t(ph.p_offset), uint64_t(ph.p_filesz), ph.p_align == 8 ? uint64_t(8) : uint64_t(4)});
  }

  // Frees one program header's worth of bytes right after the table, when only
  // the interpreter string and notes live there: they move into the new
  // segment (PT_INTERP, PT_NOTE and their sections follow), and the table
  // grows where it is, inside the first PT_LOAD, as binutils expects it.
  bool evacuate_after_table(uint64_t table_end, size_t entries, std::optional<uint64_t> replaced_note,
                            std::vector<CarriedRange>& carried, bool& interp_moves, bool with_dynamic) const {
    uint64_t need_end = table_end + entries * sizeof(Phdr);
    const Phdr* first_load = nullptr;
    for (const auto& ph : view_.phdrs())
      if (ph.p_type == elf::PT_LOAD) {
        first_load = &ph;
        break;
      }
    if (!first_load || !covers(*first_load, table_end, need_end - table_end)) return false;
    auto movable = [](const Phdr& ph) {
      return ph.p_filesz > 0 && (ph.p_type == elf::PT_INTERP || ph.p_type == elf::PT_NOTE || ph.p_type == elf::PT_GNU_PROPERTY);
    };
    // The dynamic strings move anyway when the dynamic section does; the tables it points at can follow.
    std::vector<CarriedRange> tables;
    if (with_dynamic) {
      tables = movable_dynamic_tables();
      tables.push_back({table_.strtab_offset, table_.strtab_size, 1, 0, elf::DT_STRTAB});
    }
    std::vector<const Phdr*> chosen;
    std::vector<const CarriedRange*> chosen_tables;
    uint64_t cover = table_end;
    while (cover < need_end) {
      const Phdr* next = nullptr;
      for (const auto& ph : view_.phdrs())
        if (movable(ph) && ph.p_offset >= cover && (!next || ph.p_offset < next->p_offset)) next = &ph;
      const CarriedRange* next_table = nullptr;
      for (const auto& t : tables)
        if (t.off >= cover && (!next_table || t.off < next_table->off)) next_table = &t;
      uint64_t next_at = std::min(next ? uint64_t(next->p_offset) : UINT64_MAX, next_table ? next_table->off : UINT64_MAX);
      if (next_at == UINT64_MAX || next_at > align_up(cover, 16)) return false;  // unknown bytes in between
      if (next && uint64_t(next->p_offset) == next_at) {
        for (const auto& ph : view_.phdrs())
          if (movable(ph) && ph.p_offset == next->p_offset) chosen.push_back(&ph);
        cover = std::max<uint64_t>(cover, uint64_t(next->p_offset) + uint64_t(next->p_filesz));
      } else {
        chosen_tables.push_back(next_table);
        cover = std::max<uint64_t>(cover, next_table->off + next_table->size);
      }
    }
    auto moved_range = [&](uint64_t off, uint64_t size) {
      auto inside = [&](uint64_t begin, uint64_t length) { return off >= begin && off + size <= begin + length; };
      return std::any_of(chosen.begin(), chosen.end(), [&](const Phdr* ph) { return inside(ph->p_offset, ph->p_filesz); }) ||
             std::any_of(chosen_tables.begin(), chosen_tables.end(),
                         [&](const CarriedRange* t) { return inside(t->off, t->size); });
    };
    // Nothing else may live in the freed bytes.
    for (const auto& sh : view_.shdrs()) {
      uint64_t off = sh.sh_offset, size = sh.sh_size;
      if (!(sh.sh_flags & elf::SHF_ALLOC) || sh.sh_type == elf::SHT_NOBITS || size == 0) continue;
      if (off + size <= table_end || off >= cover) continue;
      if (!moved_range(off, size)) return false;
    }
    for (const auto& ph : view_.phdrs()) {
      uint64_t off = ph.p_offset, size = ph.p_filesz;
      if (ph.p_type == elf::PT_LOAD || ph.p_type == elf::PT_PHDR || size == 0) continue;
      if (off + size <= table_end || off >= cover) continue;
      if (!moved_range(off, size)) return false;
    }
    for (const Phdr* ph : chosen) {
      if (ph->p_type == elf::PT_INTERP) interp_moves = true;
      else if (!is_replaced_note(*ph, replaced_note)) carry(carried, *ph);
    }
    for (const CarriedRange* t : chosen_tables)
      if (t->dynamic_tag != elf::DT_STRTAB) carried.push_back(*t);  // the strings are placed anyway
    return true;
  }

  // A program header entry that can become the new PT_LOAD without loss.
  std::optional<size_t> find_slot(const std::vector<Phdr>& phdrs, std::string& note) const {
    for (size_t i = 0; i < phdrs.size(); ++i)
      if (phdrs[i].p_type == elf::PT_NULL) {
        note = "reused a PT_NULL program header";
        return i;
      }
    // x86-64 and aarch64 linkers describe .note.gnu.property twice: PT_NOTE and PT_GNU_PROPERTY.
    const Phdr* property = view_.find_phdr(elf::PT_GNU_PROPERTY);
    if (property)
      for (size_t i = 0; i < phdrs.size(); ++i)
        if (phdrs[i].p_type == elf::PT_NOTE && phdrs[i].p_offset == property->p_offset &&
            phdrs[i].p_filesz == property->p_filesz) {
          note = "reused the PT_NOTE that duplicates PT_GNU_PROPERTY";
          return i;
        }
    return std::nullopt;
  }

  std::vector<MovedSection> update_sections(std::vector<Shdr>& shdrs, uint64_t seg_off, uint64_t seg_vaddr,
                                            uint64_t strtab_rel, uint64_t dyn_rel, uint64_t dyn_slots, uint64_t strsz,
                                            bool move_interp, uint64_t interp_rel, uint64_t interp_size,
                                            const std::vector<CarriedRange>& carried, bool dynamic_moves = true) const {
    const Phdr* interp = view_.find_phdr(elf::PT_INTERP);
    std::vector<MovedSection> moved;
    auto move = [&](size_t index, uint64_t rel, uint64_t size) {
      Shdr& sh = shdrs[index];
      moved.push_back({index, uint64_t(sh.sh_addr), uint64_t(sh.sh_size), seg_vaddr + rel});
      sh.sh_offset = seg_off + rel;
      sh.sh_addr = seg_vaddr + rel;
      sh.sh_size = size;
    };
    for (size_t i = 0; i < shdrs.size(); ++i) {
      const Shdr& sh = shdrs[i];
      if (dynamic_moves && sh.sh_type == elf::SHT_DYNAMIC && sh.sh_offset == table_.offset)
        move(i, dyn_rel, dyn_slots * sizeof(Dyn));
      else if (dynamic_moves && sh.sh_type == elf::SHT_STRTAB && (sh.sh_flags & elf::SHF_ALLOC) &&
               sh.sh_offset == table_.strtab_offset)
        move(i, strtab_rel, strsz);
      else if (move_interp && interp && sh.sh_type == elf::SHT_PROGBITS && sh.sh_offset == interp->p_offset &&
               (sh.sh_flags & elf::SHF_ALLOC))
        move(i, interp_rel, interp_size);
      else if ((sh.sh_flags & elf::SHF_ALLOC) && sh.sh_type != elf::SHT_NOBITS && sh.sh_size > 0)
        for (const auto& c : carried)
          if (sh.sh_offset >= c.off && uint64_t(sh.sh_offset) + uint64_t(sh.sh_size) <= c.off + c.size) {
            move(i, c.rel + (uint64_t(sh.sh_offset) - c.off), sh.sh_size);
            break;
          }
    }
    return moved;
  }

  const ElfView<E>& view_;
  const ElfInfo& info_;
  const EditOptions& options_;
  DynamicTable<E> table_;
  DynamicModel original_;
  DynamicModel model_;
  NoteChange note_;
  struct VersionNeedUpdate {
    uint64_t field_offset;  // of vn_file
    std::string text;       // the library it must name
    uint64_t new_value;     // string offset, once placed
    bool written_in_copy = false;  // its table moved into the new segment
  };
  std::vector<VersionNeedUpdate> verneed_updates_;
  std::vector<std::string> warnings_;
  const Phdr* interp_phdr_ = nullptr;
  bool interp_changed_ = false;
  bool interp_needs_room_ = false;
  std::string new_interp_;
};

}  // namespace runpatch
