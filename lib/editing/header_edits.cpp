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

#include "editing/planned_image.hpp"
#include "reading/dynamic_table.hpp"
#include "reading/elf_dispatch.hpp"
#include "runpatch/reading/mapped_file.hpp"

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

struct FieldWrite {
  uint64_t offset;
  std::vector<uint8_t> bytes;
  WriteKind kind;
  std::string subject;  // a SymbolVersion write's symbol

  std::string description() const { return PlannedWrite{WritePhase::Commit, offset, {}, kind, subject}.description(); }
};

// Lays a field into the plan: inside the write that already covers those
// bytes (the ELF header of a commit, a program header table in the appended
// tail), or as a Commit write of its own.
Status put_field(EditPlan& plan, const FieldWrite& field, const std::string& path) {
  uint64_t end = field.offset + field.bytes.size();
  PlannedWrite* cover = nullptr;
  for (auto& w : plan.writes) {
    uint64_t w_end = w.offset + w.bytes.size();
    if (w.offset <= field.offset && end <= w_end) {
      cover = &w;
    } else if (w.offset < end && field.offset < w_end) {
      return make_error(ErrorCode::Unsupported, path,
                        fmt::format("the {} edit overlaps another planned write ({}) only in part", field.description(),
                                    w.description()),
                        field.offset);
    }
  }
  if (cover) {
    std::memcpy(cover->bytes.data() + (field.offset - cover->offset), field.bytes.data(), field.bytes.size());
    return {};
  }
  plan.writes.push_back({WritePhase::Commit, field.offset, field.bytes, field.kind, field.subject});
  return {};
}

// The fixed-size header fields, placed where the planned result keeps them:
// after the dynamic and layout edits are planned, the program header table
// or the version table may live in the appended tail.
template <class E>
class HeaderFieldFolder {
 public:
  using Phdr = elf::Phdr<E>;
  using Sym = elf::Sym<E>;

  HeaderFieldFolder(const ElfView<E>& result, DynamicSource dynamic_source)
      : result_(result), dynamic_source_(dynamic_source) {}

  Expected<std::vector<FieldWrite>> fields(const HeaderEditRequest& request) {
    if (request.osabi && result_.ehdr().e_ident[elf::EI_OSABI] != *request.osabi)
      fields_.push_back({elf::EI_OSABI, {*request.osabi}, WriteKind::OsAbi});
    if (request.exec_stack) RUNPATCH_CHECK(exec_stack(*request.exec_stack));
    if (!request.clear_symbol_version.empty()) RUNPATCH_CHECK(symbol_versions(request.clear_symbol_version));
    return std::move(fields_);
  }

 private:
  uint64_t phdr_offset(size_t index) const { return uint64_t(result_.ehdr().e_phoff) + index * sizeof(Phdr); }

  // PF_X of PT_GNU_STACK; without one, a PT_NULL entry becomes PT_GNU_STACK (RW, plus X when set).
  Status exec_stack(bool executable) {
    auto phdrs = result_.phdrs();
    for (size_t i = 0; i < phdrs.size(); ++i) {
      if (phdrs[i].p_type != elf::PT_GNU_STACK) continue;
      Phdr changed = phdrs[i];
      uint32_t flags = changed.p_flags;
      changed.p_flags = executable ? (flags | elf::PF_X) : (flags & ~elf::PF_X);
      if (uint32_t(changed.p_flags) != flags)
        fields_.push_back({phdr_offset(i), bytes_of(changed), WriteKind::StackFlags});
      return {};
    }
    for (size_t i = 0; i < phdrs.size(); ++i) {
      if (phdrs[i].p_type != elf::PT_NULL) continue;
      Phdr stack;
      std::memset(&stack, 0, sizeof stack);
      stack.p_type = elf::PT_GNU_STACK;
      stack.p_flags = elf::PF_R | elf::PF_W | (executable ? elf::PF_X : 0);
      stack.p_align = 1;
      fields_.push_back({phdr_offset(i), bytes_of(stack), WriteKind::StackEntry});
      return {};
    }
    return result_.error(ErrorCode::NothingToEdit,
                         "has no PT_GNU_STACK program header and no spare (PT_NULL) entry to turn into one; "
                         "a program header is added only to files with a dynamic section",
                         result_.ehdr().e_phoff);
  }

  Status symbol_versions(const std::vector<std::string>& names) {
    RUNPATCH_TRY(auto dynamic, read_dynamic(result_, dynamic_source_));
    if (!dynamic)
      return result_.error(ErrorCode::NothingToEdit,
                           "has no dynamic section (statically linked, or separate debug information)");
    RUNPATCH_TRY(auto tables, symbol_version_tables(result_, *dynamic));
    if (!tables)
      return result_.error(ErrorCode::NothingToEdit,
                           "has no symbol version table (.gnu.version) whose entries could be cleared");
    RUNPATCH_TRY(auto symbols,
                 result_.template table_at<Sym>(tables->symtab_offset, tables->count, "dynamic symbol table"));
    RUNPATCH_TRY(auto versions, result_.template table_at<typename E::Half>(tables->versym_offset, tables->count,
                                                                            "symbol version table"));
    std::set<std::string, std::less<>> wanted(names.begin(), names.end());
    for (size_t i = 0; i < symbols.size(); ++i) {
      RUNPATCH_TRY(std::string_view name, dynamic_string(result_, *dynamic, symbols[i].st_name, "dynamic symbol name"));
      if (!wanted.count(name) || uint16_t(versions[i]) == elf::VER_NDX_GLOBAL) continue;
      typename E::Half global;
      global = elf::VER_NDX_GLOBAL;
      fields_.push_back({tables->versym_offset + i * 2, bytes_of(global), WriteKind::SymbolVersion, std::string(name)});
    }
    return {};
  }

  const ElfView<E>& result_;
  DynamicSource dynamic_source_;
  std::vector<FieldWrite> fields_;
};

template <class E>
HeaderFacts facts_of(const ElfView<E>& view) {
  HeaderFacts facts;
  facts.osabi = view.ehdr().e_ident[elf::EI_OSABI];
  if (const auto* stack = view.find_phdr(elf::PT_GNU_STACK))
    facts.exec_stack = (uint32_t(stack->p_flags) & elf::PF_X) ? ExecStack::Executable : ExecStack::NotExecutable;
  return facts;
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

std::vector<std::string> osabi_one_word_names() {
  std::vector<std::string> names;
  for (const auto& entry : kOsAbiNames)
    for (const char* alias : entry.aliases)
      if (alias && std::string_view(alias).find(' ') == std::string_view::npos) names.emplace_back(alias);
  return names;
}

template <class E>
Status fold_header_fields(const MappedElfView<E>& view, const HeaderEditRequest& request, EditPlan& plan) {
  if (request.osabi.has_value() + request.exec_stack.has_value() + request.clear_symbol_version.size() == 0) return {};
  std::vector<FieldWrite> fields;
  {
    // The image refers to the plan's writes: read everything before adding any.
    PlannedImage image(view.bytes(), plan);
    FileReader reader = image.reader(view.path());
    RUNPATCH_TRY(auto result, ElfView<E>::parse(reader));
    RUNPATCH_TRY(fields, HeaderFieldFolder<E>(result, plan.dynamic_source).fields(request));
  }
  for (const auto& field : fields) RUNPATCH_CHECK(put_field(plan, field, view.path()));
  if (plan.strategy == EditStrategy::Unchanged && !plan.writes.empty()) {
    plan.strategy = EditStrategy::InPlace;
    plan.layout = {LayoutStep::HeaderFieldsInPlace};
  }
  return {};
}

#define RUNPATCH_INSTANTIATE(E) \
  template Status fold_header_fields(const MappedElfView<E>&, const HeaderEditRequest&, EditPlan&);
RUNPATCH_FOR_EACH_ELF_TARGET(RUNPATCH_INSTANTIATE)
#undef RUNPATCH_INSTANTIATE

Expected<HeaderFacts> header_facts(std::span<const uint8_t> bytes, const std::string& path) {
  return visit_elf(bytes, path, [](const auto& view) -> Expected<HeaderFacts> { return facts_of(view); });
}

Expected<HeaderFacts> read_header_facts(const std::filesystem::path& path) {
  RUNPATCH_TRY(MappedFile mapping, MappedFile::open(path));
  return header_facts(mapping.bytes(), path.string());
}

}  // namespace runpatch
