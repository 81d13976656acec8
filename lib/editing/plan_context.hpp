// What an edit of one ELF image wants, worked out before any layout is
// chosen: the dynamic section as it is and as it must become, the
// interpreter, the resolution-cache note and the version needs to rename. Both
// ways of laying an edit out (edit_planner.cpp: in place; appended_segment.cpp:
// a new segment) read it and share the writes built from it. Private to those
// two files, which instantiate the templates for the four ELF flavours.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "editing/byte_buffer.hpp"
#include "editing/dynamic_model.hpp"
#include "editing/plan_options.hpp"
#include "editing/planned_write.hpp"
#include "editing/resolution_cache_edit.hpp"
#include "editing/string_refs.hpp"
#include "editing/symbol_rename.hpp"

namespace runpatch {

template <class E>
struct PlanContext {
  using Ehdr = elf::Ehdr<E>;
  using Phdr = elf::Phdr<E>;
  using Shdr = elf::Shdr<E>;
  using Dyn = elf::Dyn<E>;

  PlanContext(const MappedElfView<E>& view, const ElfInfo& info, const PlanOptions& options)
      : view_(view), info_(info), options_(options) {}

  static constexpr uint64_t kMinPage = 0x1000;
  static constexpr uint64_t kSpareDynamicSlots = 2;
  static constexpr uint64_t kStringSlack = 64;
  static constexpr uint64_t kMaxLoadAlign = uint64_t(64) << 20;

  struct VersionNeedUpdate {
    uint64_t field_offset;         // of vn_file
    std::string text;              // the library it must name
    uint64_t new_value;            // string offset, once placed
    bool written_in_copy = false;  // its table moved into the new segment
  };

  const MappedElfView<E>& view_;
  const ElfInfo& info_;
  const PlanOptions& options_;
  DynamicTable<E> table_;
  DynamicModel original_;  // the dynamic section as it is
  DynamicModel model_;     // as the request makes it
  NoteChange note_;
  std::vector<VersionNeedUpdate> verneed_updates_;
  SymbolRenamer<E> renamer_;                             // dynamic symbols the request renames
  std::map<std::string, uint64_t> symbol_name_offsets_;  // their new names' string offsets, once placed
  std::vector<std::string> warnings_;
  const Phdr* interp_phdr_ = nullptr;
  bool interp_changed_ = false;
  bool interp_needs_room_ = false;
  // --set/clear-execstack on a file with neither PT_GNU_STACK nor a PT_NULL
  // entry: the new program header table gets one more (PT_NULL) entry, which
  // fold_header_fields turns into PT_GNU_STACK.
  bool stack_entry_wanted_ = false;
  std::string new_interp_;

  static void append_description(std::string& into, const std::string& more) {
    if (!more.empty()) into += (into.empty() ? "" : "; ") + more;
  }

  static std::vector<uint8_t> phdr_bytes(const Phdr& ph) { return bytes_of(std::span<const Phdr>(&ph, 1)); }

  // The dynamic strings that symbols and version entries reference; nullopt
  // when the symbols cannot be enumerated (then no byte may count as free).
  std::optional<std::vector<ByteRange>> symbol_string_refs() const {
    detail::StringRefCollector<E> refs(view_, table_);
    auto ranges = refs.symbol_and_version_refs();
    if (!ranges) return std::nullopt;
    return std::move(*ranges);
  }

  // Adds the strings of the dynamic entries the request leaves as they are.
  void add_unchanged_entry_refs(std::vector<ByteRange>& into) const {
    for (const auto& e : model_.entries)
      if (e.text && !e.changed) into.push_back({e.value, e.value + e.text->size() + 1});
  }

  uint64_t phdr_offset(size_t index) const { return uint64_t(view_.ehdr().e_phoff) + index * sizeof(Phdr); }

  bool covers(const Phdr& segment, uint64_t off, uint64_t size) const {
    return off >= segment.p_offset && off + size <= uint64_t(segment.p_offset) + uint64_t(segment.p_filesz);
  }

  uint64_t dynamic_vaddr() const { return table_.vaddr; }

  uint64_t page_size() const {
    if (options_.page_size) return *options_.page_size;
    uint64_t page = kMinPage;
    for (const auto& ph : view_.phdrs())
      if (ph.p_type == elf::PT_LOAD) page = std::max<uint64_t>(page, ph.p_align);
    return page;
  }

  std::vector<uint8_t> copy_range(uint64_t off, uint64_t size) const {
    auto b = view_.bytes().subspan(off, size);
    return {b.begin(), b.end()};
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

  void add_interp_write(EditPlan& plan, WritePhase phase) const {
    std::vector<uint8_t> bytes(uint64_t(interp_phdr_->p_filesz), 0);
    std::memcpy(bytes.data(), new_interp_.data(), new_interp_.size());
    plan.writes.push_back({phase, uint64_t(interp_phdr_->p_offset), std::move(bytes), "interpreter"});
  }

  // Renamed symbols and the tables that index them, at their offsets in the
  // file; skip: ranges whose bytes the plan carries elsewhere (their copy takes the writes).
  void add_symbol_rename_writes(EditPlan& plan, const std::vector<std::pair<uint64_t, uint64_t>>& skip = {}) const {
    for (auto& w : renamer_.writes(view_, symbol_name_offsets_)) {
      bool carried = std::any_of(skip.begin(), skip.end(), [&](const auto& r) {
        return w.offset >= r.first && w.offset + w.bytes.size() <= r.first + r.second;
      });
      if (!carried) plan.writes.push_back(std::move(w));
    }
  }

  // The vn_file fields switch after the dynamic section does: until then the old name is right.
  void add_version_need_writes(EditPlan& plan) const {
    for (const auto& update : verneed_updates_) {
      if (update.written_in_copy) continue;
      typename E::Word value;
      value = static_cast<uint32_t>(update.new_value);
      plan.writes.push_back({WritePhase::Commit, update.field_offset,
                             bytes_of(std::span<const typename E::Word>(&value, 1)), "version need file"});
    }
  }
};

}  // namespace runpatch

// What a planner derived from PlanContext<E> names without this->: a class
// template does not see the members of a dependent base otherwise. One list
// for both planners (edit_planner.cpp, appended_segment.cpp).
#define RUNPATCH_USE_PLAN_CONTEXT      \
  using Ctx = PlanContext<E>;          \
  using Ctx::add_interp_write;         \
  using Ctx::add_symbol_rename_writes; \
  using Ctx::add_unchanged_entry_refs; \
  using Ctx::add_version_need_writes;  \
  using Ctx::append_description;       \
  using Ctx::copy_range;               \
  using Ctx::covers;                   \
  using Ctx::dynamic_vaddr;            \
  using Ctx::info_;                    \
  using Ctx::interp_changed_;          \
  using Ctx::interp_needs_room_;       \
  using Ctx::interp_phdr_;             \
  using Ctx::kMaxLoadAlign;            \
  using Ctx::kMinPage;                 \
  using Ctx::symbol_string_refs;       \
  using Ctx::kSpareDynamicSlots;       \
  using Ctx::kStringSlack;             \
  using Ctx::model_;                   \
  using Ctx::new_interp_;              \
  using Ctx::note_;                    \
  using Ctx::options_;                 \
  using Ctx::original_;                \
  using Ctx::page_size;                \
  using Ctx::phdr_bytes;               \
  using Ctx::phdr_offset;              \
  using Ctx::renamer_;                 \
  using Ctx::serialize_dynamic;        \
  using Ctx::stack_entry_wanted_;      \
  using Ctx::symbol_name_offsets_;     \
  using Ctx::table_;                   \
  using Ctx::verneed_updates_;         \
  using Ctx::view_;                    \
  using Ctx::warnings_;                \
  using typename Ctx::Dyn;             \
  using typename Ctx::Ehdr;            \
  using typename Ctx::Phdr;            \
  using typename Ctx::Shdr;
