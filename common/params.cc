#include "common/params.h"

#include <atomic>
#include <cassert>
#include <cstdlib>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "common/param_table.h"
#include "common/qdisc.h"

namespace trirace {
namespace {

std::atomic<const Params*> g_params{nullptr};
std::atomic<bool> g_warned{false};
ABSL_CONST_INIT absl::Mutex g_load_mutex(absl::kConstInit);

absl::Status Invalid(const ParamSpec& spec, absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(spec.name, "=\"", text, "\" is not valid: expected ",
                                                 spec.Accepted()));
}

absl::StatusOr<bool> ParseBool(absl::string_view text) {
  const std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  return absl::InvalidArgumentError("not a boolean");
}

}  // namespace

absl::string_view ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kBool: return "bool";
    case ParamType::kInt: return "int";
    case ParamType::kDouble: return "double";
    case ParamType::kString: return "string";
    case ParamType::kEnum: return "enum";
  }
  return "?";
}

absl::string_view ParamSourceName(ParamSource source) {
  return source == ParamSource::kEnvironment ? "environment" : "default";
}

std::string ParamSpec::Accepted() const {
  switch (type) {
    case ParamType::kBool:
      return "a boolean (1/0, true/false, yes/no, on/off)";
    case ParamType::kInt:
      if (min_int == INT64_MIN && max_int == INT64_MAX) return "an integer";
      if (max_int == INT64_MAX) return absl::StrCat("an integer >= ", min_int);
      return absl::StrCat("an integer in [", min_int, ", ", max_int, "]");
    case ParamType::kDouble:
      return absl::StrCat("a number in [", min_double, ", ", max_double, "]");
    case ParamType::kString:
      return "any text";
    case ParamType::kEnum:
      return absl::StrCat("one of ", absl::StrJoin(choices, ", "));
  }
  return "?";
}

absl::StatusOr<ParamValue> Params::Parse(const ParamSpec& spec, absl::string_view text) {
  ParamValue v;
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  switch (spec.type) {
    case ParamType::kBool: {
      auto b = ParseBool(trimmed);
      if (!b.ok()) return Invalid(spec, text);
      v.b = *b;
      v.text.assign(1, v.b ? '1' : '0');
      break;
    }
    case ParamType::kInt:
      if (!absl::SimpleAtoi(trimmed, &v.i) || v.i < spec.min_int || v.i > spec.max_int) {
        return Invalid(spec, text);
      }
      v.text = absl::StrCat(v.i);
      break;
    case ParamType::kDouble:
      if (!absl::SimpleAtod(trimmed, &v.d) || !(v.d >= spec.min_double && v.d <= spec.max_double)) {
        return Invalid(spec, text);
      }
      v.text = absl::StrCat(v.d);
      break;
    case ParamType::kString:
      v.text = std::string(text);
      break;
    case ParamType::kEnum:
      for (size_t i = 0; i < spec.choices.size(); ++i) {
        if (absl::EqualsIgnoreCase(trimmed, spec.choices[i])) {
          v.choice = static_cast<int>(i);
          v.text = std::string(spec.choices[i]);
        }
      }
      if (v.choice < 0) return Invalid(spec, text);
      break;
  }
  return v;
}

Params::Params() {
  for (const ParamSpec& spec : Specs()) {
    auto def = Parse(spec, spec.default_text);
    // A default that does not parse is a bug in the table (a unit test checks).
    ParamValue value = def.ok() ? *std::move(def) : ParamValue{};
    if (const char* env = std::getenv(std::string(spec.name).c_str()); env != nullptr) {
      auto parsed = Parse(spec, env);
      if (parsed.ok()) {
        value = *std::move(parsed);
        value.source = ParamSource::kEnvironment;
      } else {
        warnings_.push_back(absl::StrCat(parsed.status().message(), "; using the default \"",
                                         spec.default_text, "\""));
      }
    }
    values_.push_back(std::move(value));
  }
}

const Params& Params::GetQuiet() {
  const Params* p = g_params.load(std::memory_order_acquire);
  if (p == nullptr) {
    absl::MutexLock lock(&g_load_mutex);
    p = g_params.load(std::memory_order_relaxed);
    if (p == nullptr) {
      p = new Params();  // lives for the process: readers hold references
      g_params.store(p, std::memory_order_release);
    }
  }
  return *p;
}

const Params& Params::Get() {
  const Params& p = GetQuiet();
  // Outside the lock: logging reads params itself.
  if (!p.warnings_.empty() && !g_warned.load(std::memory_order_relaxed) && !g_warned.exchange(true)) {
    for (const std::string& w : p.warnings_) TRIRACE_WARN(INIT, "%s", w);
  }
  return p;
}

void Params::ReloadForTesting() {
  {
    absl::MutexLock lock(&g_load_mutex);
    // The old instance stays alive, and reachable (so leak checkers do not
    // report it): a test may still hold a reference.
    static auto* retired = new std::vector<const Params*>();
    retired->push_back(g_params.exchange(new Params(), std::memory_order_acq_rel));
    g_warned.store(false);
  }
  log::ReconfigureForTesting();
  Get();
}

std::span<const ParamSpec> Params::Specs() { return ParamTable(); }

const ParamSpec& Params::Spec(ParamId id) { return Specs()[static_cast<size_t>(id)]; }

const ParamSpec* Params::Find(absl::string_view name) {
  for (const ParamSpec& spec : Specs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

namespace {
const ParamValue& Checked(ParamId id, ParamType type) {
  assert(Params::Spec(id).type == type && "param accessed with the wrong type");
  (void)type;
  return Params::Get().Value(id);
}
}  // namespace

bool ParamBool(ParamId id) { return Checked(id, ParamType::kBool).b; }
int64_t ParamInt(ParamId id) { return Checked(id, ParamType::kInt).i; }
double ParamDouble(ParamId id) { return Checked(id, ParamType::kDouble).d; }
const std::string& ParamString(ParamId id) { return Checked(id, ParamType::kString).text; }
const std::string& ParamEnum(ParamId id) { return Checked(id, ParamType::kEnum).text; }
int ParamChoiceIndex(ParamId id) { return Checked(id, ParamType::kEnum).choice; }
ParamSource ParamSourceOf(ParamId id) { return Params::Get().Value(id).source; }

bool NetClassPriorityEnabled() { return NetClassPriorityEnabledFor(HostMarksFinding()); }

bool NetClassPriorityEnabledFor(const MarksFinding& marks) {
  switch (ParamChoice<ClassPrioritySetting>()) {
    case ClassPrioritySetting::kOn: return true;
    case ClassPrioritySetting::kOff: return false;
    case ClassPrioritySetting::kAuto: break;
  }
  // Marks only where the host's queues act on them (common/qdisc.h).
  return ParamChoice<ShimMode>() == ShimMode::kSchedule && ParamChoice<PolicyKind>() == PolicyKind::kTrirace &&
         marks.honoured;
}

bool FrontStageFirstEnabled() {
  // Marks need class priority; gating without it needs the trirace policy.
  const bool trirace = ParamChoice<PolicyKind>() == PolicyKind::kTrirace;
  if (ParamChoice<ShimMode>() != ShimMode::kSchedule || (!NetClassPriorityEnabled() && !trirace)) return false;
  switch (ParamChoice<FrontStageFirstSetting>()) {
    case FrontStageFirstSetting::kOn: return true;
    case FrontStageFirstSetting::kOff: return false;
    case FrontStageFirstSetting::kAuto: break;
  }
  return trirace;
}

}  // namespace trirace
