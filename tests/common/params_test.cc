#include "common/params.h"

#include <set>

#include "absl/types/span.h"
#include "common/env_guard.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trirace {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParamRegistryTest, RowsAreInIdOrderUniqueAndTheirDefaultsParse) {
  std::set<absl::string_view> names;
  int index = 0;
  for (const ParamSpec& spec : Params::Specs()) {
    EXPECT_EQ(static_cast<int>(spec.id), index++) << spec.name << " is out of ParamId order";
    EXPECT_THAT(std::string(spec.name), StartsWith("TRIRACE_"));
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name << " registered twice";
    EXPECT_FALSE(spec.description.empty()) << spec.name;
    EXPECT_FALSE(spec.component.empty()) << spec.name;
    EXPECT_TRUE(Params::Parse(spec, spec.default_text).ok()) << spec.name << " default does not parse";
  }
  EXPECT_EQ(index, static_cast<int>(ParamId::kCount));
  ASSERT_NE(Params::Find("TRIRACE_MODE"), nullptr);
  EXPECT_EQ(Params::Find("TRIRACE_MODE")->id, ParamId::kMode);
  EXPECT_EQ(Params::Find("TRIRACE_NO_SUCH_THING"), nullptr);
}

TEST(ParamRegistryTest, UnsetVariablesTakeTheDefaultWithDefaultSource) {
  EnvGuard env;
  env.Unset("TRIRACE_MODE").Unset("TRIRACE_DEBUG").Apply();
  EXPECT_EQ(ParamEnum(ParamId::kMode), "observe");
  EXPECT_EQ(ParamSourceOf(ParamId::kMode), ParamSource::kDefault);
  EXPECT_EQ(ParamEnum(ParamId::kDebug), "WARN");
}

TEST(ParamRegistryTest, GoodEnvironmentValueIsUsedAndTrackedAsEnvironment) {
  EnvGuard env;
  env.Set("TRIRACE_MODE", "SCHEDULE").Set("TRIRACE_DEBUG_FILE", "/tmp/x.%p").Apply();
  EXPECT_EQ(ParamEnum(ParamId::kMode), "schedule");  // canonical case
  EXPECT_EQ(Params::Get().Value(ParamId::kMode).choice, 2);
  EXPECT_EQ(ParamSourceOf(ParamId::kMode), ParamSource::kEnvironment);
  EXPECT_EQ(ParamString(ParamId::kDebugFile), "/tmp/x.%p");
  EXPECT_TRUE(Params::Get().warnings().empty());
}

TEST(ParamRegistryTest, UnknownEnumValueWarnsNamingVariableValueAndChoices) {
  EnvGuard env;
  env.Set("TRIRACE_POLICY", "fastest").Apply();
  EXPECT_EQ(ParamEnum(ParamId::kPolicy), "trirace");
  EXPECT_EQ(ParamSourceOf(ParamId::kPolicy), ParamSource::kDefault);
  ASSERT_EQ(Params::Get().warnings().size(), 1u);
  const std::string& w = Params::Get().warnings()[0];
  EXPECT_THAT(w, HasSubstr("TRIRACE_POLICY"));
  EXPECT_THAT(w, HasSubstr("\"fastest\""));
  EXPECT_THAT(w, HasSubstr("one of fifo, priority, trirace"));
  EXPECT_THAT(w, HasSubstr("using the default \"trirace\""));
}

TEST(ParamRegistryTest, ValuesAreCachedUntilReloaded) {
  EnvGuard env;
  env.Set("TRIRACE_MODE", "off").Apply();
  EXPECT_EQ(ParamEnum(ParamId::kMode), "off");
  setenv("TRIRACE_MODE", "schedule", 1);  // not re-read
  EXPECT_EQ(ParamEnum(ParamId::kMode), "off");
  env.Apply();
  EXPECT_EQ(ParamEnum(ParamId::kMode), "schedule");
}

// Parse() on each type, with rows made for the test.
constexpr absl::string_view kColors[] = {"red", "green"};
const ParamSpec kIntSpec{.id = ParamId::kCount, .name = "TRIRACE_T_INT", .type = ParamType::kInt,
                         .default_text = "4", .description = "d", .component = "test",
                         .min_int = 1, .max_int = 64};
const ParamSpec kBoolSpec{.id = ParamId::kCount, .name = "TRIRACE_T_BOOL", .type = ParamType::kBool,
                          .default_text = "0", .description = "d", .component = "test"};
const ParamSpec kDoubleSpec{.id = ParamId::kCount, .name = "TRIRACE_T_DBL", .type = ParamType::kDouble,
                            .default_text = "0.5", .description = "d", .component = "test",
                            .min_double = 0, .max_double = 1};
const ParamSpec kEnumSpec{.id = ParamId::kCount, .name = "TRIRACE_T_ENUM", .type = ParamType::kEnum,
                          .default_text = "red", .description = "d", .component = "test",
                          .choices = kColors};

TEST(ParamParseTest, IntAcceptsRangeAndRejectsWrongTypeAndOutOfRange) {
  auto ok = Params::Parse(kIntSpec, " 64 ");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->i, 64);
  for (const char* bad : {"abc", "4x", "", "1.5"}) {
    auto r = Params::Parse(kIntSpec, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("an integer in [1, 64]"));
  }
  for (const char* out : {"0", "65", "-3", "99999999999999999999"}) {
    auto r = Params::Parse(kIntSpec, out);
    ASSERT_FALSE(r.ok()) << out;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(std::string("TRIRACE_T_INT=\"") + out + "\""));
  }
}

TEST(ParamParseTest, BoolAcceptsTheUsualSpellings) {
  for (const char* t : {"1", "true", "YES", "on"}) EXPECT_TRUE(Params::Parse(kBoolSpec, t)->b) << t;
  for (const char* f : {"0", "False", "no", "OFF"}) EXPECT_FALSE(Params::Parse(kBoolSpec, f)->b) << f;
  auto r = Params::Parse(kBoolSpec, "maybe");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("a boolean"));
}

TEST(ParamParseTest, DoubleChecksRange) {
  EXPECT_DOUBLE_EQ(Params::Parse(kDoubleSpec, "0.25")->d, 0.25);
  EXPECT_FALSE(Params::Parse(kDoubleSpec, "1.5").ok());
  EXPECT_FALSE(Params::Parse(kDoubleSpec, "nan").ok());
  EXPECT_FALSE(Params::Parse(kDoubleSpec, "half").ok());
}

TEST(ParamParseTest, EnumIsCaseInsensitiveAndCanonicalises) {
  auto r = Params::Parse(kEnumSpec, "GREEN");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "green");
  EXPECT_EQ(r->choice, 1);
  auto bad = Params::Parse(kEnumSpec, "blue");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("one of red, green"));
}

// Each enum type reads the parameter whose row names its choices, and its
// enumerators stand at the positions of their texts.
template <typename E>
void ExpectEnumMatchesItsParam(absl::Span<const absl::string_view> texts) {
  const ParamSpec& spec = Params::Spec(ParamEnumOf<E>::kId);
  EXPECT_EQ(spec.type, ParamType::kEnum) << spec.name;
  EXPECT_EQ(spec.choices.data(), texts.data()) << spec.name << " names another choice list";
  EXPECT_EQ(spec.choices.size(), texts.size()) << spec.name;
}

TEST(ParamEnumTest, EveryEnumTypeBelongsToTheParamThatListsItsChoices) {
  ExpectEnumMatchesItsParam<LogLevel>(kLogLevelTexts);
  ExpectEnumMatchesItsParam<ShimMode>(kShimModeTexts);
  ExpectEnumMatchesItsParam<PolicyKind>(kPolicyKindTexts);
  ExpectEnumMatchesItsParam<ClassPrioritySetting>(kClassPrioritySettingTexts);
  ExpectEnumMatchesItsParam<OccupancySource>(kOccupancySourceTexts);
  EXPECT_EQ(kShimModeTexts[static_cast<int>(ShimMode::kSchedule)], "schedule");
  EXPECT_EQ(kLogLevelTexts[static_cast<int>(LogLevel::kTRACE)], "TRACE");
}

TEST(ParamEnumTest, ParamChoiceReadsTheTypedValue) {
  EnvGuard env;
  env.Set("TRIRACE_MODE", "Schedule").Set("TRIRACE_POLICY", "fifo").Apply();
  EXPECT_EQ(ParamChoice<ShimMode>(), ShimMode::kSchedule);
  EXPECT_EQ(ParamChoice<PolicyKind>(), PolicyKind::kFifo);
}

}  // namespace
}  // namespace trirace
