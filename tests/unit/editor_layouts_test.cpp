// Every way the editor finds room (docs/editing.md §3), one case each, on
// files without symbols, on every class and byte order: the edit
// takes exactly the layout steps the rules name, and the file then says what
// was asked (read back by the reader and by readelf), keeps its program
// header table mapped and described by PT_PHDR, and — x86-64 files on an
// x86-64 host — is loaded by the real loader, which searches the edited
// runpath. The resolution-cache steps resolve nothing: the runpath names a
// directory no host has, which the note records as searched at run time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <iostream>

#include "editing/edit_testing.hpp"
#include "elf_image.hpp"
#include "fixtures.hpp"
#include "loader_listing.hpp"
#include "readelf_oracle.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "synthetic_elf.hpp"
#include "tools_under_test.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

using Flavour = test::ElfFlavour;

struct LayoutCase {
  std::string name;
  test::SpecShape shape;
  test::ImageReshape reshape;
  std::function<void(EditRequest&)> ask;
  bool in_place = false;
  std::vector<LayoutStep> layout;                        // exactly these steps, in order
  std::optional<std::string> runpath_after;              // what the file's runpath then says
  std::function<void(EditRequest&)> earlier;             // an edit made first (null: none)
  std::optional<bool> note_after;                        // whether the file then has a resolution-cache note
  std::function<test::ImageDesc(const Flavour&)> image;  // the file as data, instead of shape and reshape
  bool binds_greet = false;     // the file defines `greet`: the loader must find it through the edited file's tables
  bool hard_linked = false;     // the file has a second name
  bool open_elsewhere = false;  // another open file refers to it during the edit (a process has it mapped)
};

const std::string kOriginalRunpath =
    "/an/original/runpath/long/enough/to/span/the/bytes/after/the/table/" + std::string(60, 'o');
const std::string kLongRunpath = "/run/opengl-driver/lib:" + std::string(300, 'x');

void keep(std::vector<uint8_t>&, const test::SyntheticLayout&, const Flavour&) {}
void long_runpath(EditRequest& r) { r.runpath = set_runpath_update(kLongRunpath); }
// An earlier edit that appended a segment.
void longer_runpath(EditRequest& r) { r.runpath = set_runpath_update(kLongRunpath + ":/first"); }
void write_note(EditRequest& r) { r.resolution_cache = ResolutionCacheMode::Write; }
void remove_note(EditRequest& r) { r.resolution_cache = ResolutionCacheMode::Remove; }
// The original runpath with its last byte changed: as long, so the refreshed note is too.
void same_length_runpath(EditRequest& r) {
  std::string changed = kOriginalRunpath;
  changed.back() = 'p';
  r.runpath = set_runpath_update(changed);
}

// A library whose dynamic strings follow the program header table.
void library(test::SyntheticSpec& s) {
  s.needed = {"libfoo.so.1"};
  s.runpath = kOriginalRunpath;
}

// A file as GNU ld and lld lay one out: PT_PHDR first; the headers, then
// what the shape asks for of the interpreter and a build-id note, then the
// dynamic strings in a read-only PT_LOAD; the dynamic section in a read-write
// PT_LOAD a page above; PT_GNU_STACK.
struct LinkerShape {
  bool interpreter = false, build_id = false, section_headers = true;
  bool symbols = false;   // .hash and .dynsym (defining `greet`) after the note, before the strings
  bool gnu_hash = false;  // with symbols: .gnu.hash (DT_GNU_HASH, what linkers emit today) instead of .hash
  std::string runpath = kOriginalRunpath;
};

// The symbol tables the loader finds through DT_HASH and DT_SYMTAB, and those entries.
void add_symbol_tables(const Flavour& f, bool gnu_hash, test::ImageDesc& d, std::vector<test::DynamicEntry>& entries) {
  using namespace elf;
  const uint64_t word = f.is64 ? 8 : 4;
  const std::string hash = gnu_hash ? ".gnu.hash" : ".hash";
  d.sections.push_back({.name = hash,
                        .type = gnu_hash ? SHT_GNU_HASH : SHT_HASH,
                        .flags = SHF_ALLOC,
                        .addralign = gnu_hash ? word : 4,
                        .link = ".dynsym"});
  d.sections.push_back({.name = ".dynsym",
                        .type = SHT_DYNSYM,
                        .flags = SHF_ALLOC,
                        .addralign = word,
                        .symbols = {{.name = "greet", .value = 0x1234, .size = 8, .shndx = 0xfff1}},  // SHN_ABS
                        .link = ".dynstr"});
  entries.push_back(test::dynamic_address(gnu_hash ? DT_GNU_HASH : DT_HASH, hash));
  entries.push_back(test::dynamic_address(DT_SYMTAB, ".dynsym"));
  entries.push_back(test::dynamic_value(DT_SYMENT, test::dynamic_symbol_size(f)));
}

test::ImageDesc linker_shaped(const Flavour& f, const LinkerShape& shape) {
  using namespace elf;
  const uint64_t word = f.is64 ? 8 : 4;
  const std::string interpreter = "/lib64/ld-linux-x86-64.so.2";
  test::ImageDesc d{.flavour = f, .machine = test::flavour_machine(f), .section_headers = shape.section_headers};
  d.segments.push_back({PT_PHDR, PF_R, word, test::kProgramHeaders});
  if (shape.interpreter) {
    d.sections.push_back({.name = ".interp", .flags = SHF_ALLOC, .bytes = {interpreter.begin(), interpreter.end()}});
    d.sections.back().bytes.push_back(0);
    d.segments.push_back({PT_INTERP, PF_R, 1, ".interp"});
  }
  if (shape.build_id) {
    auto note = test::note_bytes(f, 3, "GNU", std::vector<uint8_t>(20, 0xab));  // NT_GNU_BUILD_ID
    d.sections.push_back(
        {.name = ".note.gnu.build-id", .type = SHT_NOTE, .flags = SHF_ALLOC, .addralign = 4, .bytes = note});
    d.segments.push_back({PT_NOTE, PF_R, 4, ".note.gnu.build-id"});
  }
  std::vector<test::DynamicEntry> entries = {test::dynamic_string(DT_NEEDED, "libfoo.so.1"),
                                             test::dynamic_string(DT_RUNPATH, shape.runpath)};
  if (shape.symbols) add_symbol_tables(f, shape.gnu_hash, d, entries);
  entries.push_back(test::dynamic_address(DT_STRTAB, ".dynstr"));
  entries.push_back(test::dynamic_size(DT_STRSZ, ".dynstr"));
  entries.push_back(test::dynamic_value(DT_NULL, 0));
  d.sections.push_back({.name = ".dynstr", .type = SHT_STRTAB, .flags = SHF_ALLOC});
  d.sections.push_back({.name = ".dynamic",
                        .type = SHT_DYNAMIC,
                        .flags = SHF_ALLOC | SHF_WRITE,
                        .addralign = word,
                        .entries = entries,
                        .link = ".dynstr",
                        .address_delta = 0x1000});
  d.segments.push_back({PT_LOAD, PF_R, 0x1000, test::kFileStart, ".dynstr"});
  d.segments.push_back({PT_LOAD, PF_R | PF_W, 0x1000, ".dynamic"});
  d.segments.push_back({PT_DYNAMIC, PF_R | PF_W, word, ".dynamic"});
  d.segments.push_back({PT_GNU_STACK, PF_R | PF_W, 16, test::kFileStart, test::kFileStart});
  return d;
}

// The cases on files as linkers lay them out (the spec's files have one
// PT_LOAD and no PT_PHDR): PT_PHDR must follow the table wherever it goes.
std::vector<LayoutCase> linker_shaped_cases() {
  auto shaped = [](LinkerShape shape) { return [shape](const Flavour& f) { return linker_shaped(f, shape); }; };
  LayoutCase evacuated{"evacuated-linker-shaped",         nullptr,     nullptr, long_runpath, false,
                       {LayoutStep::EvacuatedAfterTable}, kLongRunpath};
  evacuated.image = shaped({.interpreter = true, .build_id = true});
  LayoutCase moved{"moved-program-headers-linker-shaped", nullptr,     nullptr, long_runpath, false,
                   {LayoutStep::MovedProgramHeaders},     kLongRunpath};
  moved.image = shaped({.section_headers = false, .runpath = "/short"});
  LayoutCase in_place{"string-over-own-bytes-linker-shaped",
                      nullptr,
                      nullptr,
                      [](EditRequest& r) { r.runpath = set_runpath_update("/short"); },
                      false,
                      // Where one edit puts it (the end of the old one's bytes), through its old place.
                      {LayoutStep::StringsInUnusedBytes, LayoutStep::StringsThroughInterimPlace},
                      "/short"};
  in_place.image = shaped({.interpreter = true, .build_id = true});
  // Rule 4 in a copy: the symbol tables after the table move
  // (DT_HASH and DT_SYMTAB point at their copies); the loader binds `greet`.
  LayoutCase tables_moved{"evacuated-symbol-tables",         nullptr,     nullptr, long_runpath, false,
                          {LayoutStep::EvacuatedAfterTable}, kLongRunpath};
  tables_moved.image = shaped({.symbols = true});
  tables_moved.binds_greet = true;
  // A file with a second hard link is written where it is (both names must
  // see the edit), and where a process may have it mapped (another open file
  // refers to it) the tables stay where that process reads them: the table
  // moves (rule 5). (--in-place alone takes the copy for such a file: the
  // table then stays where strip needs it.) Nothing has it open: as in a copy.
  LayoutCase tables_stay{"symbol-tables-stay-when-hard-linked-and-mapped",
                         nullptr,
                         nullptr,
                         long_runpath,
                         true,
                         {LayoutStep::MovedProgramHeaders},
                         kLongRunpath};
  tables_stay.image = shaped({.symbols = true});
  tables_stay.binds_greet = true;
  tables_stay.hard_linked = true;
  tables_stay.open_elsewhere = true;
  LayoutCase tables_free = tables_stay;
  tables_free.name = "symbol-tables-move-when-hard-linked-and-nothing-maps-it";
  tables_free.layout = {LayoutStep::EvacuatedAfterTable};
  tables_free.open_elsewhere = false;
  // The same with .gnu.hash, which the loader searches through its bloom filter and buckets.
  LayoutCase gnu_moved = tables_moved;
  gnu_moved.name = "evacuated-gnu-hash";
  gnu_moved.image = shaped({.symbols = true, .gnu_hash = true});
  LayoutCase gnu_stay = tables_stay;
  gnu_stay.name = "gnu-hash-stays-when-hard-linked-and-mapped";
  gnu_stay.image = shaped({.symbols = true, .gnu_hash = true});
  return {evacuated, moved, in_place, tables_moved, tables_stay, tables_free, gnu_moved, gnu_stay};
}

std::vector<LayoutCase> layout_cases() {
  auto program = [](test::SyntheticSpec& s) {
    library(s);
    s.interpreter = "/lib64/ld-linux-x86-64.so.2";
  };
  // The DT_RPATH entry retagged: its string is referenced by nothing, so its bytes are free.
  auto unreferenced_string = [](test::SyntheticSpec& s) {
    s.needed = {"libfoo.so.1"};
    s.rpath = "/an/unreferenced/string";
    s.spare_dynamic_slots = 1;
  };
  auto short_strings_no_sections = [](test::SyntheticSpec& s) {
    s.needed = {"libfoo.so.1"};
    s.with_section_headers = false;
    s.code_after_headers = true;
  };
  return {
      {"interpreter-in-place",
       program,
       keep,
       [](EditRequest& r) { r.interpreter = "/lib/ld.so"; },
       false,
       {LayoutStep::InterpreterInPlace},
       kOriginalRunpath},
      {"strings-in-unused-bytes",
       unreferenced_string,
       [](auto& b, const auto& l, const auto& f) { test::set_dynamic_tag(b, l, f, 1, elf::DT_DEBUG); },
       [](EditRequest& r) { r.runpath = set_runpath_update("/x"); },
       false,
       {LayoutStep::StringsInUnusedBytes},
       "/x"},
      {"string-over-own-bytes",
       library,
       keep,
       [](EditRequest& r) { r.runpath = set_runpath_update("/short"); },
       false,
       {LayoutStep::StringsInUnusedBytes, LayoutStep::StringsThroughInterimPlace},
       "/short"},
      {"header-fields",
       library,
       keep,
       [](EditRequest& r) { r.headers.osabi = elf::ELFOSABI_GNU; },
       false,
       {LayoutStep::HeaderFieldsInPlace},
       kOriginalRunpath},
      {"reused-null-entry",
       program,
       [](auto& b, const auto& l, const auto& f) { test::set_phdr(b, l, f, 0, test::kPhdrType, elf::PT_NULL); },
       long_runpath,
       false,
       {LayoutStep::ReusedNullEntry},
       kLongRunpath},
      // PT_GNU_PROPERTY still describes the note; its PT_NOTE twin takes the new PT_LOAD.
      {"reused-duplicate-note",
       [](test::SyntheticSpec& s) {
         library(s);
         s.gnu_property_note = true;
       },
       keep,
       long_runpath,
       false,
       {LayoutStep::ReusedDuplicateNote},
       kLongRunpath},
      // The strings after the table move into the new segment (a copy may move them).
      {"evacuated-after-table", library, keep, long_runpath, false, {LayoutStep::EvacuatedAfterTable}, kLongRunpath},
      // Nothing after the table can move (code follows it; without section headers
      // no other byte can be proven free): the table moves into the new segment.
      {"moved-program-headers",
       short_strings_no_sections,
       keep,
       long_runpath,
       false,
       {LayoutStep::MovedProgramHeaders},
       kLongRunpath},
      {"replaced-earlier-segment",
       library,
       keep,
       long_runpath,
       false,
       {LayoutStep::ReplacedEarlierSegment},
       kLongRunpath,
       longer_runpath},
      // No room in place for a new note: it goes into a read-only part of an
      // appended segment. The dynamic strings follow the table, and an edit that
      // changes no string does not move them (rule 4 moves notes, the interpreter
      // and rewritten tables): the table moves (rule 5).
      {"resolution-cache-segment",
       library,
       keep,
       write_note,
       false,
       {LayoutStep::MovedProgramHeaders, LayoutStep::ResolutionCacheSegment},
       kOriginalRunpath,
       nullptr,
       true},
      {"resolution-cache-removed",
       library,
       keep,
       remove_note,
       false,
       {LayoutStep::ResolutionCacheRemoved},
       kOriginalRunpath,
       write_note,
       false},
      // After a note-only edit (its read-only segment took the moved program
      // header table and the note), an edit that also rewrites the dynamic
      // strings replaces that segment: the strings and section in a read-write
      // segment, the note in a read-only one of its own.
      {"resolution-cache-own-segment",
       library,
       keep,
       long_runpath,
       false,
       {LayoutStep::ReplacedEarlierSegment, LayoutStep::ResolutionCacheOwnSegment},
       kLongRunpath,
       write_note,
       true},
      // The refreshed note is as long as the earlier one: rewritten where it is.
      {"resolution-cache-in-place",
       library,
       keep,
       same_length_runpath,
       false,
       {LayoutStep::StringOverOwnBytes, LayoutStep::ResolutionCacheInPlace},
       kOriginalRunpath.substr(0, kOriginalRunpath.size() - 1) + "p",
       write_note,
       true},
  };
}

// The flavour's loader (x86-64 here; ppc64, i386 and ppc under qemu-user)
// maps the edited file and searches its runpath for libfoo.so.1: each entry
// is a directory of its search. A flavour without a loader here is not run
// (EditorLayoutChecks says which).
void expect_loader_searches(const fs::path& file, const Flavour& f, const std::optional<std::string>& runpath) {
  auto loader = test::loader_for(f);
  if (!loader || !runpath) return;
  auto searched = test::loader_runpath_search(*loader, file);
  ASSERT_TRUE(searched) << "the loader searched no runpath of " << file;
  for (const auto& entry : split_runpath(*runpath))
    EXPECT_NE(std::find(searched->begin(), searched->end(), entry), searched->end()) << entry;
}

// The flavour's relocation that stores a symbol's address in a word, and
// whether its tables are RELA: R_X86_64_64, R_PPC64_ADDR64, R_386_32, R_PPC_ADDR32.
std::pair<uint64_t, bool> absolute_relocation(const Flavour& f) {
  if (f.is64) return {f.big ? 38 : 1, true};
  return {1, f.big};
}

// A library beside `provider` that needs it ($ORIGIN) and has one
// relocation against `symbol` into its .data.
test::ImageDesc consumer_of(const Flavour& f, const fs::path& provider, const std::string& symbol) {
  using namespace elf;
  const uint64_t word = f.is64 ? 8 : 4;
  const auto [type, rela] = absolute_relocation(f);
  const std::string relocations = rela ? ".rela.dyn" : ".rel.dyn";
  test::ImageDesc d{.flavour = f, .machine = test::flavour_machine(f)};
  d.sections = {{.name = ".hash", .type = SHT_HASH, .flags = SHF_ALLOC, .addralign = 4, .link = ".dynsym"},
                {.name = ".dynsym",
                 .type = SHT_DYNSYM,
                 .flags = SHF_ALLOC,
                 .addralign = word,
                 .symbols = {{.name = symbol, .info = 0x10}},  // STB_GLOBAL, undefined
                 .link = ".dynstr"},
                {.name = ".dynstr", .type = SHT_STRTAB, .flags = SHF_ALLOC},
                {.name = relocations,
                 .type = rela ? SHT_RELA : SHT_REL,
                 .flags = SHF_ALLOC,
                 .addralign = word,
                 .bytes = test::relocation_table(f, rela, {{}})},
                {.name = ".dynamic",
                 .type = SHT_DYNAMIC,
                 .flags = SHF_ALLOC | SHF_WRITE,
                 .addralign = word,
                 .entries = {test::dynamic_string(DT_NEEDED, provider.filename().string()),
                             test::dynamic_string(DT_RUNPATH, "$ORIGIN"), test::dynamic_address(DT_HASH, ".hash"),
                             test::dynamic_address(DT_SYMTAB, ".dynsym"),
                             test::dynamic_value(DT_SYMENT, test::dynamic_symbol_size(f)),
                             test::dynamic_address(DT_STRTAB, ".dynstr"), test::dynamic_size(DT_STRSZ, ".dynstr"),
                             test::dynamic_address(rela ? DT_RELA : DT_REL, relocations),
                             test::dynamic_size(rela ? DT_RELASZ : DT_RELSZ, relocations),
                             test::dynamic_value(rela ? DT_RELAENT : DT_RELENT, test::relocation_entry_size(f, rela)),
                             test::dynamic_value(DT_NULL, 0)},
                 .link = ".dynstr",
                 .address_delta = 0x10000},
                {.name = ".data",
                 .flags = SHF_ALLOC | SHF_WRITE,
                 .addralign = word,
                 .bytes = std::vector<uint8_t>(word),
                 .address_delta = 0x10000}};
  d.segments = {{PT_LOAD, PF_R, 0x10000, test::kFileStart, relocations},
                {PT_LOAD, PF_R | PF_W, 0x10000, ".dynamic", ".data"},
                {PT_DYNAMIC, PF_R | PF_W, word, ".dynamic"}};
  // The relocation's place is .data's address, known once laid out (the bytes do not move it).
  uint64_t data = test::build_elf_image(d).section(".data").address;
  d.sections[3].bytes = test::relocation_table(f, rela, {{.where = data, .symbol = 1, .type = type}});
  return d;
}

// What the flavour's loader says when it relocates a consumer of `provider`
// that needs `symbol` (ldd -r: LD_TRACE_LOADED_OBJECTS, LD_WARN and
// LD_BIND_NOW; `--list` relocates nothing); the provider's libfoo.so.1 is
// an empty library found through LD_LIBRARY_PATH.
std::string binding_report(const test::FlavourLoader& loader, const Flavour& f, const fs::path& provider,
                           const std::string& symbol) {
  fs::path dir = provider.parent_path(), consumer = dir / ("consumer-" + symbol + ".so");
  test::write_file(consumer, test::build_elf_image(consumer_of(f, provider, symbol)).bytes);
  test::write_file(dir / "deps/libfoo.so.1",
                   test::build_elf_image(test::library_image(f, test::flavour_machine(f), "libfoo.so.1")).bytes);
  return test::run_loader(loader,
                          {"LD_TRACE_LOADED_OBJECTS=1", "LD_WARN=yes", "LD_BIND_NOW=yes",
                           "LD_LIBRARY_PATH=" + (dir / "deps").string()},
                          {consumer.string()})
      .output;
}

// The loader finds `symbol` through the hash and symbol tables of the edited file.
void expect_loader_binds(const fs::path& file, const Flavour& f, const std::string& symbol) {
  auto loader = test::loader_for(f);
  if (!loader) return;
  std::string report = binding_report(*loader, f, file, symbol);
  EXPECT_TRUE(test::contains(report, file.string())) << report;
  EXPECT_FALSE(test::contains(report, "undefined symbol")) << report;
}

class EditorLayouts : public ::testing::TestWithParam<Flavour> {};

TEST_P(EditorLayouts, EachWayOfFindingRoomIsTakenWhereTheRulesSay) {
  const Flavour f = GetParam();
  auto cases = layout_cases();
  for (auto& c : linker_shaped_cases()) cases.push_back(std::move(c));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string scratch = "editor_layouts/" + c.name + test::flavour_name(f);
    // Each flavour's files are of a machine with a loader here (flavour_machine).
    auto with_machine = [&](test::SyntheticSpec& s) {
      c.shape(s);
      s.machine = test::flavour_machine(f);
    };
    fs::path file = c.image ? test::write_image_case(scratch, c.image(f)).path
                            : test::write_synthetic_case(scratch, f, with_machine, c.reshape).path;
    EditRequest request;
    c.ask(request);
    // Notes resolve against an empty tree: every runpath entry is searched at run time.
    fs::path empty_root = file.parent_path() / "empty-root";
    fs::create_directories(empty_root);
    request.resolution_root = empty_root;
    EditOptions options;
    options.in_place = c.in_place;
    if (c.hard_linked) fs::create_hard_link(file, file.parent_path() / "second-name.so");
    if (c.earlier) {
      EditRequest first;
      c.earlier(first);
      first.resolution_root = empty_root;
      auto earlier = edit_elf_file(file, first, options);
      ASSERT_TRUE(earlier) << earlier.error().message();
      ASSERT_EQ(earlier->strategy, EditStrategy::Appended);
    }
    int held = c.open_elsewhere ? ::open(file.c_str(), O_RDONLY | O_CLOEXEC) : -1;
    auto outcome = edit_elf_file(file, request, options);
    if (held >= 0) ::close(held);
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_EQ(outcome->layout, c.layout) << outcome->layout_description;
    auto info = read_elf_info(file);
    ASSERT_TRUE(info) << info.error().message();
    auto oracle = test::readelf_facts(file);
    ASSERT_TRUE(oracle);
    EXPECT_EQ(info->runpath, c.runpath_after);
    EXPECT_EQ(oracle->runpath, c.runpath_after);
    if (request.interpreter) {
      EXPECT_EQ(info->interpreter, request.interpreter);
    }
    if (request.headers.osabi) {
      EXPECT_EQ(info->identity.osabi, *request.headers.osabi);
    }
    EXPECT_EQ(info->needed, std::vector<std::string>{"libfoo.so.1"});
    EXPECT_EQ(test::program_header_table_defects(test::read_file(file), f), "");
    expect_loader_searches(file, f, c.runpath_after);
    if (c.binds_greet) expect_loader_binds(file, f, "greet");
    if (c.note_after) {
      EXPECT_EQ(info->resolution_cache.has_value(), *c.note_after);
    }
    if (info->resolution_cache && c.runpath_after) {
      // True to the edited file: libfoo.so.1 searched for at run time in the runpath it has now.
      EXPECT_EQ(info->resolution_cache->defect, "");
      ResolutionCacheEntry expected{"libfoo.so.1", {}};
      for (const auto& entry : split_runpath(*c.runpath_after)) expected.locations.push_back("?" + entry);
      EXPECT_EQ(info->resolution_cache->entries, ResolutionCache{expected});
    }
  }
}

// A library whose first edit (long_runpath) must move its program header
// table into the new segment (without section headers nothing after the
// table can be proven free), and the runpath of a second edit.
struct MovedTableCase {
  const std::string final_runpath = kLongRunpath + ":/second/edit";
  EditRequest first, second;
  MovedTableCase() {
    long_runpath(first);
    second.runpath = set_runpath_update(final_runpath);
  }
  // The original file, written under editor_layouts/NAME plus the flavour's
  // name; a program (ET_EXEC at 0x400000 with an interpreter) or a library.
  static fs::path write(const Flavour& f, const std::string& name, bool program = false) {
    test::ImageDesc desc = linker_shaped(f, {.interpreter = program, .section_headers = false, .runpath = "/short"});
    if (program) {
      desc.type = elf::ET_EXEC;
      desc.base_address = 0x400000;
    }
    return test::write_image_case("editor_layouts/" + name + test::flavour_name(f), desc).path;
  }
};

// The program header table moved into an earlier edit's segment: a later
// edit replaces that segment, whose entry takes the new one, so the table is
// as long as one edit of the original makes it and a chain of edits gives
// the bytes of that one edit (it grew by an entry per edit: 2 of the GPU
// venv's auditwheel-edited wheels, bytes by hook order).
TEST_P(EditorLayouts, AChainOverAMovedTableGivesTheBytesOfOneEdit) {
  const Flavour f = GetParam();
  const MovedTableCase c;
  fs::path chain = MovedTableCase::write(f, "moved-chain"), one = MovedTableCase::write(f, "moved-one");
  const auto &first = c.first, &second = c.second;
  const std::string& final_runpath = c.final_runpath;
  auto earlier = edit_elf_file(chain, first, {});
  ASSERT_TRUE(earlier) << earlier.error().message();
  ASSERT_EQ(earlier->layout, std::vector<LayoutStep>{LayoutStep::MovedProgramHeaders});
  for (int edit = 0; edit < 2; ++edit) {  // twice: the second edit rebuilds a rebuilt segment
    auto later = edit_elf_file(chain, edit == 0 ? second : first, {});
    ASSERT_TRUE(later) << later.error().message();
    EXPECT_EQ(later->layout.front(), LayoutStep::ReplacedEarlierSegment) << later->layout_description;
  }
  ASSERT_TRUE(edit_elf_file(chain, second, {}));
  ASSERT_TRUE(edit_elf_file(one, second, {}));
  EXPECT_EQ(test::read_file(chain).size(), test::read_file(one).size());
  EXPECT_TRUE(test::read_file(chain) == test::read_file(one)) << "the chain's bytes differ from one edit's";
  EXPECT_EQ(test::program_header_table_defects(test::read_file(chain), f), "");
  expect_loader_searches(chain, f, final_runpath);
}

// The same rebuild written into the file (a build, --in-place): staged
// through an interim copy past the end that carries its own table, which
// the ELF header points at meanwhile. A power cut after any prefix of the
// writes leaves a file the reader and the loader take, with the runpath
// before or after; the whole edit gives the copy's bytes.
void expect_staged_rebuild_over_a_moved_table(const Flavour& f, bool program) {
  const MovedTableCase c;
  const std::string kind = program ? "program" : "library";
  fs::path file = MovedTableCase::write(f, "moved-staged-" + kind, program);
  fs::path copy = MovedTableCase::write(f, "moved-staged-copy-" + kind, program);
  const auto &first = c.first, &second = c.second;
  const std::string& final_runpath = c.final_runpath;
  for (const auto& path : {file, copy}) {
    auto earlier = edit_elf_file(path, first, {});
    ASSERT_TRUE(earlier) << earlier.error().message();
    ASSERT_EQ(earlier->layout, std::vector<LayoutStep>{LayoutStep::MovedProgramHeaders});
  }
  ASSERT_TRUE(edit_elf_file(copy, second, {}));
  const std::vector<uint8_t> before = test::read_file(file), intended = test::read_file(copy);
  EditOptions into_file;
  into_file.in_place = true;
  into_file.durability = Durability::Sync;
  bool completed = false, interim = false;
  for (size_t k = 0; k <= 8 && !completed; ++k) {
    SCOPED_TRACE("stopped after " + std::to_string(k) + " writes");
    test::write_file(file, before);
    EditTestHooks crash;
    crash.stop_after_writes = k;
    auto outcome = edit_elf_file_for_testing(file, second, into_file, crash);
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_EQ(outcome->written_as, WrittenAs::IntoFileStaged);
    auto info = read_elf_info(file);
    ASSERT_TRUE(info) << info.error().message();
    EXPECT_TRUE(info->runpath == kLongRunpath || info->runpath == final_runpath) << info->runpath.value_or("none");
    EXPECT_EQ(test::program_header_table_defects(test::read_file(file), f), "");
    expect_loader_searches(file, f, info->runpath);
    completed = test::read_file(file) == intended;
    interim = interim || (info->runpath == final_runpath && !completed);
  }
  EXPECT_TRUE(completed) << "the staged edit never gave the copy's bytes";
  EXPECT_TRUE(interim) << "no prefix stopped in the interim state (not staged?)";
}

// The same rebuild written into the file (a build, --in-place): staged
// through an interim copy past the end that carries its own table, which
// the ELF header points at meanwhile. A power cut after any prefix of the
// writes leaves a file the reader and the loader take, with the runpath
// before or after; the whole edit gives the copy's bytes.
TEST_P(EditorLayouts, ARebuildOverAMovedTableIsStagedInTheFileAndEveryPrefixLoads) {
  expect_staged_rebuild_over_a_moved_table(GetParam(), false);
}

// A program's too, never copied: its interim copy moves in memory with its
// table, so that the address kernels before 5.18 and qemu-user compute from
// e_phoff (program_header_table_defects checks it) is the table's in every
// prefix, and its dynamic entries point into the copy.
TEST_P(EditorLayouts, AProgramsRebuildOverAMovedTableIsStagedWithItsTableWhereTheKernelLooks) {
  if (!GetParam().is64) GTEST_SKIP() << "a 32-bit entry fits where the interpreter was: nothing moves the table";
  expect_staged_rebuild_over_a_moved_table(GetParam(), true);
}

// The checks above can fail: a PT_PHDR left behind is seen, the loader's
// search is the runpath the file has, and a symbol the file lacks is reported.
TEST(EditorLayoutChecks, SeeAStaleProgramHeaderEntryAndTheLoadersSearch) {
  for (const Flavour& f : test::every_elf_flavour()) {
    SCOPED_TRACE(test::flavour_name(f));
    test::ImageDesc desc = linker_shaped(f, {});
    auto image = test::build_elf_image(desc);
    EXPECT_EQ(test::program_header_table_defects(image.bytes, f), "");
    test::set_phdr(image.bytes, test::layout_of(image, desc), f, 0, test::kPhdrOffset, image.phoff + 8);
    EXPECT_EQ(test::program_header_table_defects(image.bytes, f), "PT_PHDR does not describe the program header table");
  }
  int loaded = 0;
  std::string unloaded;
  for (const Flavour& f : test::every_elf_flavour()) {
    auto loader = test::loader_for(f);
    if (!loader) {
      unloaded += " " + test::flavour_name(f);
      continue;
    }
    SCOPED_TRACE(test::flavour_name(f));
    ++loaded;
    auto file = test::write_image_case("editor_layouts/checks" + test::flavour_name(f),
                                       linker_shaped(f, {.runpath = "/one:/two"}));
    auto searched = test::loader_runpath_search(*loader, file.path);
    ASSERT_TRUE(searched);
    EXPECT_EQ(std::count(searched->begin(), searched->end(), "/one"), 1);
    EXPECT_EQ(std::count(searched->begin(), searched->end(), "/two"), 1);
    EXPECT_EQ(std::count(searched->begin(), searched->end(), "/three"), 0);
    // The binding check sees a symbol the file does not define, through either hash table.
    for (bool gnu_hash : {false, true}) {
      auto provider = test::write_image_case("editor_layouts/binds" + test::flavour_name(f) + (gnu_hash ? "gnu" : ""),
                                             linker_shaped(f, {.symbols = true, .gnu_hash = gnu_hash}));
      EXPECT_FALSE(test::contains(binding_report(*loader, f, provider.path, "greet"), "undefined symbol"));
      EXPECT_TRUE(test::contains(binding_report(*loader, f, provider.path, "absent"), "undefined symbol: absent"));
    }
  }
  // A flavour without a loader must not pass unseen: its layout cases are read back, not loaded.
  if (!unloaded.empty()) std::cout << "[ INFO ] no loader here for" << unloaded << ": their files are not loaded\n";
  if (loaded == 0) GTEST_SKIP() << "no loader for any flavour here";
}

INSTANTIATE_TEST_SUITE_P(AllTargets, EditorLayouts, ::testing::ValuesIn(test::every_elf_flavour()),
                         test::FlavourTestName());

}  // namespace
}  // namespace runpatch
