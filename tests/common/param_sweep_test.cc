// Every TRIRACE_* variable of the registry with garbage, empty, huge,
// negative, non-finite and oversized values: the registry keeps the default
// with one warning that names the variable, the value and what is accepted,
// or takes a value that is in range. Never a crash, never a value out of
// range, never a silent fallback.
#include <cmath>
#include <string>
#include <vector>

#include "common/env_guard.h"
#include "common/params.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trirace {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string>& BadValues() {
  static const std::vector<std::string> values = {
      "",
      "garbage",
      "-1",
      "-9223372036854775809",
      "99999999999999999999999",
      "1e999",
      "nan",
      "-inf",
      "0x10",
      "  7  ",
      std::string("\x01\x02\xff", 3),
      std::string(4096, '9'),
  };
  return values;
}

class ParamSweepTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ParamSweepTest, ABadValueKeepsTheDefaultWithOneWarningOrIsInRange) {
  const ParamSpec& spec = Params::Specs()[std::get<0>(GetParam())];
  const std::string& value = BadValues()[std::get<1>(GetParam())];
  EnvGuard env;
  env.Set(std::string(spec.name), value).Apply();
  const Params& params = Params::Get();
  const ParamValue& got = params.Value(spec.id);
  const absl::StatusOr<ParamValue> parsed = Params::Parse(spec, value);

  if (!parsed.ok()) {
    EXPECT_EQ(got.source, ParamSource::kDefault) << spec.name;
    EXPECT_EQ(got.text, Params::Parse(spec, spec.default_text)->text) << spec.name;
    ASSERT_EQ(params.warnings().size(), 1u) << spec.name << "=" << value;
    const std::string& w = params.warnings()[0];
    EXPECT_THAT(w, HasSubstr(std::string(spec.name)));
    EXPECT_THAT(w, HasSubstr(spec.Accepted()));
    EXPECT_THAT(w, HasSubstr("using the default"));
    return;
  }
  // Taken: from the environment, in range, and no warning.
  EXPECT_EQ(got.source, ParamSource::kEnvironment) << spec.name;
  EXPECT_TRUE(params.warnings().empty()) << params.warnings()[0];
  switch (spec.type) {
    case trirace::ParamType::kInt:
      EXPECT_GE(got.i, spec.min_int) << spec.name;
      EXPECT_LE(got.i, spec.max_int) << spec.name;
      break;
    case trirace::ParamType::kDouble:
      EXPECT_TRUE(std::isfinite(got.d)) << spec.name << "=" << value;
      EXPECT_GE(got.d, spec.min_double) << spec.name;
      EXPECT_LE(got.d, spec.max_double) << spec.name;
      break;
    case trirace::ParamType::kEnum:
      EXPECT_GE(got.choice, 0) << spec.name;
      EXPECT_LT(got.choice, static_cast<int>(spec.choices.size())) << spec.name;
      break;
    case trirace::ParamType::kBool:
    case trirace::ParamType::kString:
      break;
  }
}

std::string SweepName(const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
  std::string name(Params::Specs()[std::get<0>(info.param)].name);
  return name + "_value" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(EveryVariable, ParamSweepTest,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(Params::Specs().size())),
                                            ::testing::Range(0, static_cast<int>(BadValues().size()))),
                         SweepName);

}  // namespace
}  // namespace trirace
