#include "interpose/comm/comm_traffic_class.h"

#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/params.h"
#include "interpose/comm/comm_state.h"
#include "interpose/comm/config_copy.h"

namespace trirace::interpose {
namespace {

constexpr int kEf = 184;   // DSCP EF (46) as a TOS byte
constexpr int kCs1 = 32;   // DSCP CS1 (8)

RoleTrafficClasses NoClasses() {
  RoleTrafficClasses c;
  c.fill(kNoTrafficClass);
  return c;
}

std::optional<int> RoleNamed(absl::string_view name) {
  const std::string dashed = absl::StrReplaceAll(name, {{"_", "-"}});
  for (int role = TRIRACE_ROLE_DATA_PARALLEL; role <= TRIRACE_ROLE_EXPERT; ++role) {
    if (dashed == RoleName(role)) return role;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<RoleTrafficClasses> ParseRoleTrafficClasses(absl::string_view text) {
  RoleTrafficClasses classes = NoClasses();
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return classes;
  if (text == "auto") {
    classes[TRIRACE_ROLE_PIPELINE] = kEf;
    classes[TRIRACE_ROLE_TENSOR] = kEf;
    classes[TRIRACE_ROLE_EXPERT] = 0;
    classes[TRIRACE_ROLE_DATA_PARALLEL] = kCs1;
    return classes;
  }
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    const std::optional<int> role = RoleNamed(absl::StripAsciiWhitespace(kv.first));
    int value = 0;
    if (!role.has_value() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(kv.second), &value) || value < 0 ||
        value > 255) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", item, "\" is not role=class (roles: data-parallel, pipeline, tensor, expert; classes 0..255)"));
    }
    classes[*role] = value;
  }
  return classes;
}

const RoleTrafficClasses& ConfiguredRoleTrafficClasses() {
  static const RoleTrafficClasses classes = [] {
    const std::string& text = ParamString(ParamId::kCommTrafficClass);
    absl::StatusOr<RoleTrafficClasses> parsed = ParseRoleTrafficClasses(text);
    if (parsed.ok()) return *parsed;
    TRIRACE_WARN(INTERPOSE, "TRIRACE_COMM_TRAFFIC_CLASS=\"%s\": %s; accepted: empty, auto, or role=class,...; "
                 "no traffic class is set", text, parsed.status().message());
    return NoClasses();
  }();
  return classes;
}

const ncclConfig_t* ConfigWithRoleTrafficClass(const ncclConfig_t* caller, int role,
                                               const RoleTrafficClasses& classes, ncclConfig_t* storage,
                                               int* traffic_class) {
  *traffic_class = kNoTrafficClass;
  if (role <= TRIRACE_ROLE_UNKNOWN || role > TRIRACE_ROLE_EXPERT) return caller;
  const int wanted = classes[role];
  if (wanted == kNoTrafficClass) return caller;
  std::optional<ncclConfig_t> copy = CopyConfig(caller);
  if (!copy.has_value() || copy->trafficClass != NCCL_CONFIG_UNDEF_INT) return caller;
  copy->trafficClass = wanted;
  *storage = *copy;
  *traffic_class = wanted;
  return storage;
}

}  // namespace trirace::interpose
