// DynamicModel: the dynamic section as the editor changes it. Loading reads
// every entry of an in-memory image (each class and byte order); each edit
// is checked as the exact list of (tag, text, changed) it leaves.
#include "editing/dynamic_model.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "reading/dynamic_table.hpp"
#include "reading/elf_dispatch.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

using elf::DT_FLAGS_1;
using elf::DT_NEEDED;
using elf::DT_RPATH;
using elf::DT_RUNPATH;
using elf::DT_SONAME;

// What a test states about one entry; value only for entries without text.
struct Entry {
  uint64_t tag;
  std::optional<std::string> text;
  bool changed;
  uint64_t value = 0;
  bool operator==(const Entry&) const = default;
};

void PrintTo(const Entry& e, std::ostream* os) {
  *os << "{tag 0x" << std::hex << e.tag << std::dec << ", " << (e.text ? '"' + *e.text + '"' : "no text")
      << (e.changed ? ", changed" : "") << ", value " << e.value << "}";
}

std::vector<Entry> entries_of(const DynamicModel& model) {
  std::vector<Entry> out;
  for (const auto& e : model.entries) out.push_back({e.tag, e.text, e.changed, e.text ? 0 : e.value});
  return out;
}

// As load() leaves a file's entries: text as in the file, nothing changed (DT_STRTAB/DT_STRSZ omitted).
DynamicModel model_of(const std::vector<std::pair<uint64_t, std::string>>& string_entries) {
  DynamicModel model;
  uint64_t offset = 1;
  for (const auto& [tag, text] : string_entries) {
    model.entries.push_back({tag, offset, text, false});
    offset += text.size() + 1;
  }
  return model;
}

Expected<DynamicModel> load_image(const std::vector<uint8_t>& bytes) {
  return visit_elf(bytes, "synthetic.so", [](const auto& view) -> Expected<DynamicModel> {
    RUNPATCH_TRY(auto table, read_dynamic(view));
    if (!table) return make_error(ErrorCode::NothingToEdit, "synthetic.so", "no dynamic section");
    return DynamicModel::load(view, *table);
  });
}

class DynamicModelLoad : public ::testing::TestWithParam<test::ElfFlavour> {
 protected:
  test::SyntheticSpec spec() const {
    test::SyntheticSpec s;
    s.is64 = GetParam().is64;
    s.big_endian = GetParam().big;
    s.needed = {"libfoo.so.1", "libbar.so.2"};
    s.soname = "libme.so";
    s.runpath = "/opt/lib";
    s.flags_1 = elf::DF_1_NOW | elf::DF_1_PIE;
    s.spare_dynamic_slots = 2;
    return s;
  }
};

TEST_P(DynamicModelLoad, EveryEntryWithItsTextAndNothingChanged) {
  auto image = test::build_synthetic_elf(spec());
  auto model = load_image(image.bytes);
  ASSERT_TRUE(model) << model.error().message();
  // The builder's string table: "\0libfoo.so.1\0libbar.so.2\0libme.so\0/opt/lib\0"; DT_NULLs are not entries.
  ASSERT_EQ(model->entries.size(), 7u);
  const std::vector<std::pair<uint64_t, std::string>> strings = {
      {DT_NEEDED, "libfoo.so.1"}, {DT_NEEDED, "libbar.so.2"}, {DT_SONAME, "libme.so"}, {DT_RUNPATH, "/opt/lib"}};
  const std::vector<uint64_t> offsets = {1, 13, 25, 34};
  for (size_t i = 0; i < strings.size(); ++i) {
    EXPECT_EQ(model->entries[i].tag, strings[i].first) << i;
    EXPECT_EQ(model->entries[i].text, strings[i].second) << i;
    EXPECT_EQ(model->entries[i].value, offsets[i]) << i;
    EXPECT_FALSE(model->entries[i].changed) << i;
  }
  EXPECT_EQ(entries_of(*model)[4], (Entry{DT_FLAGS_1, std::nullopt, false, elf::DF_1_NOW | elf::DF_1_PIE}));
  EXPECT_EQ(entries_of(*model)[5], (Entry{elf::DT_STRTAB, std::nullopt, false, image.layout.dynstr_offset}));
  EXPECT_EQ(entries_of(*model)[6], (Entry{elf::DT_STRSZ, std::nullopt, false, image.layout.dynstr_size}));
  EXPECT_FALSE(model->any_changed(*model));
}

TEST_P(DynamicModelLoad, StringOffsetPastTheTableIsAnError) {
  auto image = test::build_synthetic_elf(spec());
  const auto& L = image.layout;
  uint64_t width = L.dynamic_entsize / 2;  // d_tag, then d_val of the same width
  test::poke(image.bytes, L.dynamic_offset + width, static_cast<int>(width), GetParam().big, L.dynstr_size + 5);
  auto model = load_image(image.bytes);
  ASSERT_FALSE(model);
  EXPECT_NE(model.error().what.find("dynamic entry string index"), std::string::npos) << model.error().message();
  EXPECT_NE(model.error().what.find("outside the string table"), std::string::npos) << model.error().message();
  EXPECT_EQ(model.error().code, ErrorCode::Malformed) << model.error().message();
  EXPECT_EQ(model.error().file, "synthetic.so");
}

INSTANTIATE_TEST_SUITE_P(AllTargets, DynamicModelLoad, ::testing::ValuesIn(test::every_elf_flavour()),
                         test::FlavourTestName());

TEST(DynamicModel, AnyChangedSeesMarksTagsValuesAndCount) {
  const DynamicModel original = model_of({{DT_NEEDED, "liba.so"}, {DT_RUNPATH, "/x"}});
  DynamicModel same = original;
  EXPECT_FALSE(same.any_changed(original));
  DynamicModel marked = original;
  marked.entries[0].changed = true;
  EXPECT_TRUE(marked.any_changed(original));
  DynamicModel retagged = original;
  retagged.entries[1].tag = DT_RPATH;
  EXPECT_TRUE(retagged.any_changed(original));
  DynamicModel revalued = original;
  revalued.entries[1].value += 1;
  EXPECT_TRUE(revalued.any_changed(original));
  DynamicModel shorter = original;
  shorter.entries.pop_back();
  EXPECT_TRUE(shorter.any_changed(original));
}

TEST(DynamicModel, SetRunpathAddsOneWhenThereIsNone) {
  DynamicModel m = model_of({{DT_NEEDED, "liba.so"}});
  m.set_runpath("/new", DT_RUNPATH);
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_NEEDED, "liba.so", false}, {DT_RUNPATH, "/new", true}}));
}

TEST(DynamicModel, SetRunpathToTheSameTextAndTagChangesNothing) {
  const DynamicModel original = model_of({{DT_NEEDED, "liba.so"}, {DT_RUNPATH, "/same"}});
  DynamicModel m = original;
  m.set_runpath("/same", DT_RUNPATH);
  EXPECT_FALSE(m.any_changed(original));
}

TEST(DynamicModel, SetRunpathReplacesTextInItsPlace) {
  DynamicModel m = model_of({{DT_RUNPATH, "/old"}, {DT_NEEDED, "liba.so"}});
  m.set_runpath("/new", DT_RUNPATH);
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_RUNPATH, "/new", true}, {DT_NEEDED, "liba.so", false}}));
}

TEST(DynamicModel, SetRunpathSwitchesTheTagBothWays) {
  // The same text: only the tag switches, the string stays (no new string to place; one entry write).
  const DynamicModel with_runpath = model_of({{DT_NEEDED, "liba.so"}, {DT_RUNPATH, "/p"}});
  DynamicModel to_rpath = with_runpath;
  to_rpath.set_runpath("/p", DT_RPATH);
  EXPECT_EQ(entries_of(to_rpath), (std::vector<Entry>{{DT_NEEDED, "liba.so", false}, {DT_RPATH, "/p", false}}));
  EXPECT_TRUE(to_rpath.any_changed(with_runpath));
  EXPECT_TRUE(to_rpath.any_changed_tag(with_runpath));
  DynamicModel to_runpath = model_of({{DT_RPATH, "/p"}});
  to_runpath.set_runpath("/q", DT_RUNPATH);
  EXPECT_EQ(entries_of(to_runpath), (std::vector<Entry>{{DT_RUNPATH, "/q", true}}));
}

TEST(DynamicModel, SetRunpathKeepsOnlyTheFirstRunpathTag) {
  // An RPATH and a RUNPATH (or two of one kind): the first is rewritten, the others go.
  DynamicModel m = model_of({{DT_RPATH, "/r"}, {DT_NEEDED, "liba.so"}, {DT_RUNPATH, "/u"}, {DT_RPATH, "/r2"}});
  m.set_runpath("/r", DT_RPATH);
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_RPATH, "/r", false}, {DT_NEEDED, "liba.so", false}}));
}

TEST(DynamicModel, RemoveRunpathDropsEveryRunpathTag) {
  DynamicModel m = model_of({{DT_RPATH, "/r"}, {DT_NEEDED, "liba.so"}, {DT_RUNPATH, "/u"}});
  m.remove_runpath();
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_NEEDED, "liba.so", false}}));
  m.remove_runpath();
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_NEEDED, "liba.so", false}}));
}

TEST(DynamicModel, SetSonameReplacesAddsOrLeavesAlone) {
  DynamicModel replace = model_of({{DT_SONAME, "libold.so"}, {DT_NEEDED, "liba.so"}});
  replace.set_soname("libnew.so");
  EXPECT_EQ(entries_of(replace), (std::vector<Entry>{{DT_SONAME, "libnew.so", true}, {DT_NEEDED, "liba.so", false}}));
  DynamicModel add = model_of({{DT_NEEDED, "liba.so"}});
  add.set_soname("libnew.so");
  EXPECT_EQ(entries_of(add), (std::vector<Entry>{{DT_NEEDED, "liba.so", false}, {DT_SONAME, "libnew.so", true}}));
  const DynamicModel original = model_of({{DT_SONAME, "libsame.so"}});
  DynamicModel same = original;
  same.set_soname("libsame.so");
  EXPECT_FALSE(same.any_changed(original));
}

TEST(DynamicModel, ReplaceNeededRenamesEveryMatchInPlace) {
  DynamicModel m =
      model_of({{DT_NEEDED, "liba.so"}, {DT_NEEDED, "libb.so"}, {DT_SONAME, "liba.so"}, {DT_NEEDED, "liba.so"}});
  m.replace_needed("liba.so", "libz.so");
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_NEEDED, "libz.so", true},
                                               {DT_NEEDED, "libb.so", false},
                                               {DT_SONAME, "liba.so", false},  // not a DT_NEEDED
                                               {DT_NEEDED, "libz.so", true}}));
}

TEST(DynamicModel, ReplaceNeededWithItselfOrAnAbsentNameChangesNothing) {
  const DynamicModel original = model_of({{DT_NEEDED, "liba.so"}});
  DynamicModel m = original;
  m.replace_needed("liba.so", "liba.so");
  m.replace_needed("libabsent.so", "libz.so");
  EXPECT_FALSE(m.any_changed(original));
}

TEST(DynamicModel, RemoveNeededDropsEveryMatchAndOnlyThose) {
  DynamicModel m =
      model_of({{DT_NEEDED, "liba.so"}, {DT_SONAME, "liba.so"}, {DT_NEEDED, "libb.so"}, {DT_NEEDED, "liba.so"}});
  m.remove_needed("liba.so");
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_SONAME, "liba.so", false}, {DT_NEEDED, "libb.so", false}}));
  m.remove_needed("libabsent.so");
  EXPECT_EQ(m.entries.size(), 2u);
}

TEST(DynamicModel, AddNeededPutsNewNamesFirstInTheGivenOrder) {
  DynamicModel m = model_of({{DT_NEEDED, "liba.so"}, {DT_RUNPATH, "/p"}});
  m.add_needed({"libx.so", "liby.so"});
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_NEEDED, "libx.so", true},
                                               {DT_NEEDED, "liby.so", true},
                                               {DT_NEEDED, "liba.so", false},
                                               {DT_RUNPATH, "/p", false}}));
}

TEST(DynamicModel, AddNeededSkipsPresentNamesAndRepeatsInTheRequest) {
  DynamicModel m = model_of({{DT_NEEDED, "liba.so"}, {DT_SONAME, "libs.so"}});
  // libs.so is only the soname, so it is added; liba.so is already needed; libx.so is asked for twice.
  m.add_needed({"libx.so", "liba.so", "libx.so", "libs.so"});
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_NEEDED, "libx.so", true},
                                               {DT_NEEDED, "libs.so", true},
                                               {DT_NEEDED, "liba.so", false},
                                               {DT_SONAME, "libs.so", false}}));
  const DynamicModel original = model_of({{DT_NEEDED, "liba.so"}});
  DynamicModel unchanged = original;
  unchanged.add_needed({"liba.so"});
  unchanged.add_needed({});
  EXPECT_FALSE(unchanged.any_changed(original));
}

TEST(DynamicModel, SetFlags1OrsIntoTheEntryOrAddsOne) {
  DynamicModel m = model_of({{DT_NEEDED, "liba.so"}});
  m.entries.push_back({DT_FLAGS_1, elf::DF_1_PIE, std::nullopt, false});
  const DynamicModel original = m;
  m.set_flags_1(elf::DF_1_NODEFLIB);
  EXPECT_EQ(entries_of(m).back(), (Entry{DT_FLAGS_1, std::nullopt, false, elf::DF_1_PIE | elf::DF_1_NODEFLIB}));
  EXPECT_TRUE(m.any_changed(original));  // the value differs, though no string is needed
  DynamicModel again = m;
  again.set_flags_1(elf::DF_1_PIE);
  EXPECT_FALSE(again.any_changed(m));

  DynamicModel none = model_of({{DT_NEEDED, "liba.so"}});
  none.set_flags_1(elf::DF_1_NOW);
  EXPECT_EQ(entries_of(none),
            (std::vector<Entry>{{DT_NEEDED, "liba.so", false}, {DT_FLAGS_1, std::nullopt, true, elf::DF_1_NOW}}));
}

TEST(DynamicModel, AddOnceAddsATagOnlyWhenAbsent) {
  DynamicModel m = model_of({{DT_NEEDED, "liba.so"}});
  m.add_once(elf::DT_DEBUG, 0);
  m.add_once(elf::DT_DEBUG, 7);
  EXPECT_EQ(entries_of(m), (std::vector<Entry>{{DT_NEEDED, "liba.so", false}, {elf::DT_DEBUG, std::nullopt, true, 0}}));
}

TEST(DynamicModel, IsRunpathEntryMeansRpathOrRunpath) {
  EXPECT_TRUE(DynamicModel::is_runpath_entry({DT_RUNPATH, 0, "/a", false}));
  EXPECT_TRUE(DynamicModel::is_runpath_entry({DT_RPATH, 0, "/a", false}));
  EXPECT_FALSE(DynamicModel::is_runpath_entry({DT_NEEDED, 0, "/a", false}));
  EXPECT_FALSE(DynamicModel::is_runpath_entry({DT_SONAME, 0, "/a", false}));
}

}  // namespace
}  // namespace runpatch
