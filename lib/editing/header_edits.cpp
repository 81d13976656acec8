#include "editing/header_edits.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <set>
#include <utility>

#include "editing/file_io.hpp"
#include "editing/replacement.hpp"
#include "reading/dynamic_table.hpp"
#include "reading/elf_dispatch.hpp"
#include "reading/file_checks.hpp"
#include "runpatch/mapped_file.hpp"

namespace runpatch {

namespace {

// patchelf's names for EI_OSABI values, and the other spellings it accepts.
struct OsAbiName {
  uint8_t value;
  const char* name;
  std::array<const char*, 3> aliases;  // lower case; null-terminated list
};
constexpr std::array<OsAbiName, 12> kOsAbiNames = {{
    {elf::ELFOSABI_SYSV, "System V", {"system v", "system-v", "sysv"}},
    {elf::ELFOSABI_HPUX, "HP-UX", {"hp-ux"}},
    {elf::ELFOSABI_NETBSD, "NetBSD", {"netbsd"}},
    {elf::ELFOSABI_GNU, "Linux", {"linux", "gnu"}},
    {elf::ELFOSABI_HURD, "GNU Hurd", {"gnu hurd", "gnu-hurd", "hurd"}},
    {elf::ELFOSABI_SOLARIS, "Solaris", {"solaris"}},
    {elf::ELFOSABI_AIX, "AIX", {"aix"}},
    {elf::ELFOSABI_IRIX, "IRIX", {"irix"}},
    {elf::ELFOSABI_FREEBSD, "FreeBSD", {"freebsd"}},
    {elf::ELFOSABI_TRU64, "Tru64", {"tru64"}},
    {elf::ELFOSABI_OPENBSD, "OpenBSD", {"openbsd"}},
    {elf::ELFOSABI_OPENVMS, "OpenVMS", {"openvms"}},
}};

template <class T>
std::vector<uint8_t> bytes_of(const T& value) {
  std::vector<uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

template <class E>
class HeaderPlanner {
 public:
  using Phdr = elf::Phdr<E>;
  using Dyn = elf::Dyn<E>;
  using Sym = elf::Sym<E>;

  explicit HeaderPlanner(const ElfView<E>& view) : view_(view) {}

  Expected<EditPlan> plan(const HeaderEditRequest& request) {
    if (request.osabi && view_.ehdr().e_ident[elf::EI_OSABI] != *request.osabi)
      add(elf::EI_OSABI, {*request.osabi}, "EI_OSABI");
    if (request.exec_stack) RUNPATCH_CHECK(plan_exec_stack(*request.exec_stack));
    if (request.no_default_lib || request.add_debug_tag || !request.clear_symbol_version.empty()) {
      RUNPATCH_TRY(auto dynamic, read_dynamic(view_));
      if (!dynamic) return view_.error("has no dynamic section (statically linked, or separate debug information)");
      dynamic_ = *dynamic;
      next_spare_ = dynamic_.used;
      if (request.no_default_lib) RUNPATCH_CHECK(plan_flags_1());
      if (request.add_debug_tag && !dynamic_.find(elf::DT_DEBUG))
        RUNPATCH_CHECK(add_entry(elf::DT_DEBUG, 0, "DT_DEBUG"));
      if (!request.clear_symbol_version.empty()) RUNPATCH_CHECK(plan_symbol_versions(request.clear_symbol_version));
    }
    plan_.strategy = plan_.writes.empty() ? EditStrategy::Unchanged : EditStrategy::InPlace;
    plan_.layout_note = "fixed-size fields rewritten in place";
    plan_.new_size = view_.size();
    return std::move(plan_);
  }

 private:
  void add(uint64_t offset, std::vector<uint8_t> bytes, std::string what) {
    plan_.writes.push_back({WritePhase::Commit, offset, std::move(bytes), std::move(what)});
  }

  uint64_t phdr_offset(size_t index) const { return uint64_t(view_.ehdr().e_phoff) + index * sizeof(Phdr); }

  // PF_X of PT_GNU_STACK; without one, a PT_NULL entry becomes PT_GNU_STACK (RW, plus X when set).
  Status plan_exec_stack(bool executable) {
    auto phdrs = view_.phdrs();
    for (size_t i = 0; i < phdrs.size(); ++i) {
      if (phdrs[i].p_type != elf::PT_GNU_STACK) continue;
      Phdr changed = phdrs[i];
      uint32_t flags = changed.p_flags;
      changed.p_flags = executable ? (flags | elf::PF_X) : (flags & ~elf::PF_X);
      if (uint32_t(changed.p_flags) != flags) add(phdr_offset(i), bytes_of(changed), "PT_GNU_STACK flags");
      return {};
    }
    for (size_t i = 0; i < phdrs.size(); ++i) {
      if (phdrs[i].p_type != elf::PT_NULL) continue;
      Phdr stack;
      std::memset(&stack, 0, sizeof stack);
      stack.p_type = elf::PT_GNU_STACK;
      stack.p_flags = elf::PF_R | elf::PF_W | (executable ? elf::PF_X : 0);
      stack.p_align = 1;
      add(phdr_offset(i), bytes_of(stack), "PT_GNU_STACK (in a PT_NULL entry)");
      return {};
    }
    return view_.error("has no PT_GNU_STACK program header and no spare (PT_NULL) entry to turn into one; "
                       "adding a program header for the execstack edit is not supported yet",
                       view_.ehdr().e_phoff);
  }

  Status plan_flags_1() {
    auto entries = dynamic_.entries();
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].d_tag != elf::DT_FLAGS_1) continue;
      uint64_t flags = entries[i].d_val;
      if (flags & elf::DF_1_NODEFLIB) return {};
      Dyn changed = entries[i];
      changed.d_val = flags | elf::DF_1_NODEFLIB;
      add(dynamic_.offset + i * sizeof(Dyn), bytes_of(changed), "DT_FLAGS_1");
      return {};
    }
    return add_entry(elf::DT_FLAGS_1, elf::DF_1_NODEFLIB, "DT_FLAGS_1");
  }

  // A new entry takes the terminator's slot when the slot after it is a DT_NULL
  // that can terminate the table instead; the table never grows.
  Status add_entry(uint64_t tag, uint64_t value, const char* what) {
    size_t slot = next_spare_;
    if (slot + 1 >= dynamic_.slots.size() || dynamic_.slots[slot + 1].d_tag != elf::DT_NULL)
      return view_.error(fmt::format("has no spare DT_NULL slot in its dynamic section for a new {} entry; "
                                     "adding a dynamic entry with this edit is not supported yet",
                                     what),
                         dynamic_.offset);
    Dyn entry;
    entry.d_tag = tag;
    entry.d_val = value;
    add(dynamic_.offset + slot * sizeof(Dyn), bytes_of(entry), what);
    ++next_spare_;
    return {};
  }

  struct SymbolTables {
    uint64_t symtab_offset = 0, versym_offset = 0, count = 0;
  };

  // .dynsym and .gnu.version from the section headers, or else from DT_SYMTAB,
  // DT_VERSYM and DT_HASH's chain count.
  Expected<std::optional<SymbolTables>> symbol_tables() const {
    SymbolTables t;
    std::optional<uint64_t> versym_count;
    for (const auto& sh : view_.shdrs()) {
      if (sh.sh_type == elf::SHT_DYNSYM) t.symtab_offset = sh.sh_offset, t.count = uint64_t(sh.sh_size) / sizeof(Sym);
      if (sh.sh_type == elf::SHT_GNU_VERSYM) t.versym_offset = sh.sh_offset, versym_count = uint64_t(sh.sh_size) / 2;
    }
    if (!view_.shdrs().empty()) {
      if (!versym_count) return std::optional<SymbolTables>();
      if (*versym_count != t.count) return view_.error("versym size mismatch");
      return std::optional<SymbolTables>(t);
    }
    auto versym = dynamic_.find(elf::DT_VERSYM);
    auto symtab = dynamic_.find(elf::DT_SYMTAB);
    auto hash = dynamic_.find(elf::DT_HASH);
    if (!versym) return std::optional<SymbolTables>();
    if (!symtab || !hash)
      return view_.error("has no section headers and no DT_HASH: the dynamic symbols cannot be counted");
    RUNPATCH_TRY(uint64_t hash_offset, view_.offset_of_vaddr(*hash, 8, "DT_HASH table"));
    RUNPATCH_TRY(auto words, view_.template table_at<typename E::Word>(hash_offset, 2, "DT_HASH table"));
    t.count = words[1];
    auto symtab_bytes = checked_mul(t.count, sizeof(Sym));
    if (!symtab_bytes) return view_.error("DT_HASH symbol count overflows");
    RUNPATCH_TRY(t.symtab_offset, view_.offset_of_vaddr(*symtab, *symtab_bytes, "dynamic symbol table"));
    RUNPATCH_TRY(t.versym_offset, view_.offset_of_vaddr(*versym, t.count * 2, "symbol version table"));
    return std::optional<SymbolTables>(t);
  }

  Status plan_symbol_versions(const std::vector<std::string>& names) {
    RUNPATCH_TRY(auto tables, symbol_tables());
    if (!tables) return view_.error("has no symbol version table (.gnu.version) whose entries could be cleared");
    RUNPATCH_TRY(auto symbols, view_.template table_at<Sym>(tables->symtab_offset, tables->count, "dynamic symbol table"));
    RUNPATCH_TRY(auto versions, view_.template table_at<typename E::Half>(tables->versym_offset, tables->count,
                                                                          "symbol version table"));
    std::set<std::string, std::less<>> wanted(names.begin(), names.end());
    for (size_t i = 0; i < symbols.size(); ++i) {
      RUNPATCH_TRY(std::string_view name, dynamic_string(view_, dynamic_, symbols[i].st_name, "dynamic symbol name"));
      if (!wanted.count(name) || uint16_t(versions[i]) == elf::VER_NDX_GLOBAL) continue;
      typename E::Half global;
      global = elf::VER_NDX_GLOBAL;
      add(tables->versym_offset + i * 2, bytes_of(global), fmt::format("version of {}", name));
    }
    return {};
  }

  const ElfView<E>& view_;
  DynamicTable<E> dynamic_;
  size_t next_spare_ = 0;
  EditPlan plan_;
};

template <class E>
HeaderFacts facts_of(const ElfView<E>& view) {
  HeaderFacts facts;
  facts.osabi = view.ehdr().e_ident[elf::EI_OSABI];
  if (const auto* stack = view.find_phdr(elf::PT_GNU_STACK))
    facts.exec_stack = (uint32_t(stack->p_flags) & elf::PF_X) ? ExecStack::Executable : ExecStack::NotExecutable;
  return facts;
}

Expected<EditPlan> plan_for_fd(int fd, const std::string& path, const HeaderEditRequest& request) {
  RUNPATCH_TRY(MappedFile mapping, MappedFile::map(fd, path));
  return plan_header_edits(mapping.bytes(), path, request);
}

HeaderEditOutcome outcome_of(const EditPlan& plan) {
  HeaderEditOutcome outcome;
  outcome.changed = !plan.writes.empty();
  for (const auto& w : plan.writes) outcome.writes.push_back({w.offset, w.bytes.size(), w.what});
  return outcome;
}

// Edits the file under its own name: atomically by a copy renamed over it, or
// in place for --in-place and for files with several hard links.
Expected<HeaderEditOutcome> edit_where_it_lies(const std::string& name, const HeaderEditRequest& request,
                                               const EditOptions& options) {
  RUNPATCH_TRY(UniqueFd locked, open_for_edit(name, /*writable=*/options.in_place && !options.dry_run));
  struct stat st {};
  if (::fstat(locked.get(), &st) != 0) return make_error(name, errno_text("cannot stat"));
  RUNPATCH_TRY(EditPlan plan, plan_for_fd(locked.get(), name, request));
  if (plan.writes.empty() || options.dry_run) return outcome_of(plan);
  remove_stale_copy(name);
  // Every hard link must see the edit, and a copy must not change the owner.
  if (!options.atomic_copy && (options.in_place || st.st_nlink > 1 || !copy_can_keep_owner(st))) {
    UniqueFd writable(options.in_place ? locked.release() : ::open(name.c_str(), O_RDWR | O_CLOEXEC));
    if (writable.get() < 0) return make_error(name, errno_text("cannot open for writing"));
    RUNPATCH_CHECK(apply_plan(writable.get(), name, plan, uint64_t(st.st_size), options.stop_after_writes));
    return outcome_of(plan);
  }
  RUNPATCH_CHECK(replace_by_copy(name, name, plan, DestLock::Held));
  return outcome_of(plan);
}

}  // namespace

std::string patchelf_osabi_name(uint8_t osabi) {
  for (const auto& entry : kOsAbiNames)
    if (entry.value == osabi) return entry.name;
  return fmt::format("0x{:02X}", osabi);
}

std::optional<uint8_t> osabi_from_name(std::string_view name) {
  auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!name.empty() && blank(name.front())) name.remove_prefix(1);
  while (!name.empty() && blank(name.back())) name.remove_suffix(1);
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& entry : kOsAbiNames)
    for (const char* alias : entry.aliases)
      if (alias && lower == alias) return entry.value;
  return std::nullopt;
}

Expected<EditPlan> plan_header_edits(std::span<const uint8_t> bytes, const std::string& path,
                                     const HeaderEditRequest& request) {
  return visit_elf(bytes, path, [&](const auto& view) -> Expected<EditPlan> {
    using View = std::decay_t<decltype(view)>;
    return HeaderPlanner<typename View::Target>(view).plan(request);
  });
}

Expected<HeaderFacts> header_facts(std::span<const uint8_t> bytes, const std::string& path) {
  return visit_elf(bytes, path, [](const auto& view) -> Expected<HeaderFacts> { return facts_of(view); });
}

Expected<HeaderFacts> read_header_facts(const std::filesystem::path& path) {
  RUNPATCH_TRY(MappedFile mapping, MappedFile::open(path));
  return header_facts(mapping.bytes(), path.string());
}

Expected<HeaderEditOutcome> edit_elf_headers(const std::filesystem::path& path, const HeaderEditRequest& request,
                                             const EditOptions& options) {
  std::string name = path.string();
  std::error_code ec;
  bool same_file = !options.output ||
                   (std::filesystem::exists(*options.output, ec) && std::filesystem::equivalent(path, *options.output, ec));
  if (same_file) {
    // A symlink is followed: its target is edited, never the link itself.
    if (std::filesystem::is_symlink(path, ec)) {
      auto target = std::filesystem::canonical(path, ec);
      if (!ec) name = target.string();
    }
    return edit_where_it_lies(name, request, options);
  }
  UniqueFd source(::open(name.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting));
  if (source.get() < 0) return make_error(name, errno_text("cannot open"));
  RUNPATCH_TRY(EditPlan plan, plan_for_fd(source.get(), name, request));
  // patchelf writes --output even when nothing changes.
  if (!options.dry_run) RUNPATCH_CHECK(replace_by_copy(name, options.output->string(), plan, DestLock::NotHeld));
  return outcome_of(plan);
}

}  // namespace runpatch
