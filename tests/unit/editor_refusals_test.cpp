// Every refusal of the editor's planner, one case each, on every class and
// byte order: the edit fails with that code and message naming the file, and the file
// is left byte for byte as it was, with nothing beside it.
#include <gtest/gtest.h>

#include <functional>

#include "elf_image.hpp"
#include "fixtures.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

using Flavour = test::ElfFlavour;

using test::PhdrField;
using test::set_phdr;
constexpr PhdrField kType = test::kPhdrType, kVaddr = test::kPhdrVaddr, kFilesz = test::kPhdrFilesz,
                    kMemsz = test::kPhdrMemsz, kAlign = test::kPhdrAlign;

struct Refusal {
  std::string name;
  test::SpecShape shape;  // the file before corruption
  test::ImageReshape corrupt;
  std::function<void(EditRequest&)> ask;
  ErrorCode code;
  std::string message;      // a part of the error's text (the code decides; the text must still say it)
  ErrorCode code32 = code;  // where ELFCLASS32 is refused for another reason
  std::string message32 = message;
  std::function<test::ImageDesc(const Flavour&)> image;  // the file as data, instead of shape and corrupt
};

void set_tag(std::vector<uint8_t>& b, const test::SyntheticLayout& l, const Flavour& f, uint64_t index, uint64_t tag) {
  test::set_dynamic_tag(b, l, f, index, tag);
}

void no_change(std::vector<uint8_t>&, const test::SyntheticLayout&, const Flavour&) {}
void set_runpath(EditRequest& r) { r.runpath = set_runpath_update("/run/opengl-driver/lib"); }
// Too long for the existing tables: the edit appends a segment, whose header the table must take.
void set_long_runpath(EditRequest& r) {
  r.runpath = set_runpath_update("/run/opengl-driver/lib:" + std::string(300, 'x'));
}

// e_phnum = PN_XNUM, the real count in section header 0's sh_info (the gABI's extended numbering).
void extended_numbering(std::vector<uint8_t>& b, const test::SyntheticLayout& l, const Flavour& f) {
  test::set_ehdr(b, f, test::kEhdrPhnum, elf::PN_XNUM);
  test::set_shdr(b, l, f, 0, test::kShdrInfo, l.phnum);
}

// 65,534 program headers (the most e_phnum holds below PN_XNUM) at the end of
// the file, none of a type a new PT_LOAD may take: one more would need PN_XNUM.
void fill_program_header_table(std::vector<uint8_t>& b, const test::SyntheticLayout& l, const Flavour& f) {
  uint64_t count = elf::PN_XNUM - 1, at = (b.size() + 7) & ~uint64_t(7);
  b.resize(at + count * l.phentsize, 0);
  std::copy(b.begin() + l.phoff, b.begin() + l.phoff + l.phnum * l.phentsize, b.begin() + at);
  test::SyntheticLayout moved = l;
  moved.phoff = at;
  for (uint64_t i = l.phnum; i < count; ++i) set_phdr(b, moved, f, i, kType, 0x6fffffff);
  test::set_ehdr(b, f, test::kEhdrPhoff, at);
  test::set_ehdr(b, f, test::kEhdrPhnum, count);
}

// Moves the first PT_LOAD's addresses (and DT_STRTAB's with them) by delta.
void shift_first_load(std::vector<uint8_t>& b, const test::SyntheticLayout& l, const Flavour& f, uint64_t delta) {
  set_phdr(b, l, f, 0, kVaddr, delta);
  test::set_dynamic_value(b, l, f, l.strtab_tag_index, l.dynstr_offset + delta);
}

// The library of the spec with its one PT_LOAD split in two that both map
// the dynamic strings: no linker lays that out.
Refusal overlapping_loads() {
  Refusal r{
      "loads-overlap", nullptr, nullptr, set_runpath, ErrorCode::Malformed, "PT_LOAD #0 and #1 overlap in memory"};
  r.image = [](const Flavour& f) {
    test::SyntheticSpec spec{.is64 = f.is64, .big_endian = f.big, .needed = {"libfoo.so.1"}};
    test::ImageDesc d = test::describe_synthetic_elf(spec);
    std::erase_if(d.segments, [](const test::SegmentDesc& s) { return s.type == elf::PT_LOAD; });
    d.segments.insert(d.segments.begin(), {{elf::PT_LOAD, elf::PF_R, 0x1000, test::kFileStart, ".dynstr"},
                                           {elf::PT_LOAD, elf::PF_R | elf::PF_W, 0x1000, ".dynstr", ".dynamic"}});
    return d;
  };
  return r;
}

std::vector<Refusal> refusals() {
  // A program whose program header table must move (code follows it, and
  // without section headers no byte can be proven free), so the new segment
  // keeps the first PT_LOAD's address - offset for kernels before 5.18.
  auto table_must_move = [](test::SyntheticSpec& s) {
    s.type = elf::ET_EXEC;
    s.needed = {"libfoo.so.1"};
    s.with_section_headers = false;
    s.code_after_headers = true;
  };
  auto library = [](test::SyntheticSpec& s) { s.needed = {"libfoo.so.1"}; };
  auto no_strings = [](test::SyntheticSpec&) {};  // no entry names a string
  auto with_interp = [](test::SyntheticSpec& s) {
    s.needed = {"libfoo.so.1"};
    s.interpreter = "/lib64/ld-linux-x86-64.so.2";
  };
  return {
      {"static-runpath", [](auto& s) { s.with_dynamic = false; }, no_change, set_runpath, ErrorCode::NothingToEdit,
       "statically linked (no dynamic section): nothing to edit"},
      {"static-nodeflib", [](auto& s) { s.with_dynamic = false; }, no_change,
       [](EditRequest& r) { r.headers.no_default_lib = true; }, ErrorCode::NothingToEdit,
       "has no dynamic section (statically linked, or separate debug information)"},
      {"no-string-table", no_strings,
       [](auto& b, const auto& l, const auto& f) {
         set_tag(b, l, f, l.strtab_tag_index, elf::DT_DEBUG);
         set_tag(b, l, f, l.strtab_tag_index + 1, elf::DT_DEBUG);
       },
       set_runpath, ErrorCode::NothingToEdit, "dynamic section has no string table"},
      {"no-interpreter", library, no_change, [](EditRequest& r) { r.interpreter = "/lib/ld.so"; },
       ErrorCode::NothingToEdit, "file has no interpreter (PT_INTERP) to replace"},
      {"nul-in-string", library, no_change,
       [](EditRequest& r) { r.runpath = set_runpath_update(std::string("/a\0b", 4)); }, ErrorCode::InvalidRequest,
       "a new string contains a NUL byte"},
      {"load-filesz-over-memsz", library,
       [](auto& b, const auto& l, const auto& f) { set_phdr(b, l, f, 0, kMemsz, 16); }, set_runpath,
       ErrorCode::Malformed, "PT_LOAD #0: file size is larger than memory size"},
      {"load-align-not-power-of-two", library,
       [](auto& b, const auto& l, const auto& f) { set_phdr(b, l, f, 0, kAlign, 0x3000); }, set_runpath,
       ErrorCode::Malformed, "PT_LOAD #0: alignment 0x3000 is not a power of two up to 64 MiB"},
      {"load-past-end", library,
       [](auto& b, const auto& l, const auto& f) {
         set_phdr(b, l, f, 0, kFilesz, b.size() + 4096);
         set_phdr(b, l, f, 0, kMemsz, b.size() + 4096);
       },
       set_runpath, ErrorCode::Malformed, "extends past the end of the file"},
      overlapping_loads(),
      {"strings-over-dynamic", no_strings,
       [](auto& b, const auto& l, const auto& f) {
         // DT_STRTAB and DT_STRSZ (the entry after it): the table now lies over the dynamic section.
         test::set_dynamic_value(b, l, f, l.strtab_tag_index, l.dynamic_offset);
         test::set_dynamic_value(b, l, f, l.strtab_tag_index + 1, l.dynamic_entsize);
       },
       set_runpath, ErrorCode::Malformed, "the dynamic string table overlaps the dynamic section"},
      // A segment reaching the top of the address space: the new one would wrap to address 0.
      {"no-address-space", library,
       [](auto& b, const auto& l, const auto& f) {
         set_phdr(b, l, f, 0, kMemsz, f.is64 ? ~uint64_t(0) - 8 : 0xfffffff8u);
       },
       set_runpath, ErrorCode::NoAddressSpace, "no address space left above the last segment"},
      // vaddr + memsz past 2^64; a 32-bit file's sum cannot wrap, but leaves no room above it.
      // (The interpreter's header, retyped: the tables stay in the load that holds them.)
      {"load-wraps-around", with_interp,
       [](auto& b, const auto& l, const auto& f) {
         set_phdr(b, l, f, 0, kType, elf::PT_LOAD);
         set_phdr(b, l, f, 0, kVaddr, f.is64 ? ~uint64_t(0) - 0xfff : 0xfffff000u);
         set_phdr(b, l, f, 0, kMemsz, 0x2000);
       },
       set_runpath, ErrorCode::Malformed, "PT_LOAD #0: address range wraps around", ErrorCode::NoAddressSpace,
       "no address space left above the last segment"},
      {"extended-numbering-grows", library, extended_numbering, set_long_runpath, ErrorCode::TooManyProgramHeaders,
       "extended program header numbering (PN_XNUM) cannot grow"},
      {"too-many-program-headers", library, fill_program_header_table, set_long_runpath,
       ErrorCode::TooManyProgramHeaders, "too many program headers to add one"},
      {"first-load-not-page-congruent", table_must_move,
       [](auto& b, const auto& l, const auto& f) { shift_first_load(b, l, f, 0x10); }, set_long_runpath,
       ErrorCode::ProgramHeadersCannotMove, "cannot move the program headers: first PT_LOAD is not page-congruent"},
      // Memory up to 2 GiB (a big .bss): a moved table at an address above it, at
      // the first PT_LOAD's distance from its offset, would leave a 2 GiB hole in the file.
      {"hole-bound", table_must_move,
       [](auto& b, const auto& l, const auto& f) { set_phdr(b, l, f, 0, kMemsz, 0x80000000u); }, set_long_runpath,
       ErrorCode::HoleTooLarge, "a new segment would need a 2047 MiB hole before it"},
  };
}

class EditorRefusals : public ::testing::TestWithParam<Flavour> {};

TEST_P(EditorRefusals, EachRefusalNamesTheFileAndLeavesItUntouched) {
  const Flavour f = GetParam();
  for (const auto& refusal : refusals()) {
    SCOPED_TRACE(refusal.name);
    const std::string scratch = "editor_refusals/" + refusal.name + test::flavour_name(f);
    auto built = refusal.image ? test::write_image_case(scratch, refusal.image(f))
                               : test::write_synthetic_case(scratch, f, refusal.shape, refusal.corrupt);
    const fs::path& file = built.path;
    fs::path dir = file.parent_path();
    EditRequest request;
    refusal.ask(request);
    for (bool in_place : {false, true}) {
      EditOptions options;
      options.in_place = in_place;
      auto outcome = edit_elf_file(file, request, options);
      ASSERT_FALSE(outcome) << "edited: " << outcome->layout_description;
      EXPECT_EQ(error_code_name(outcome.error().code), error_code_name(f.is64 ? refusal.code : refusal.code32));
      const std::string& message = f.is64 ? refusal.message : refusal.message32;
      EXPECT_NE(outcome.error().message().find(message), std::string::npos) << outcome.error().message();
      EXPECT_NE(outcome.error().message().find(file.string()), std::string::npos) << outcome.error().message();
      EXPECT_EQ(test::read_file(file), built.bytes) << "the file changed";
      size_t entries = 0;
      for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
      EXPECT_EQ(entries, 1u) << "debris beside the file";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTargets, EditorRefusals, ::testing::ValuesIn(test::every_elf_flavour()),
                         test::FlavourTestName());

}  // namespace
}  // namespace runpatch
