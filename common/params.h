// Params: the one typed registry of TRIRACE_* environment parameters.
//
// Every tunable of every TriRace component is a row in the table in
// params.cc: name, type, default, accepted values or range, a one-line
// description and the component that reads it. `trirace env` prints the
// table. Nothing in the project calls getenv() for a TRIRACE_* variable
// directly; it asks this registry.
//
// Values are read from the environment once, on first use, and cached for
// the life of the process. A value that does not parse, is out of range or is
// not one of the accepted choices is replaced by the default, and one WARN
// names the variable, the value given and what is accepted. Where each
// value came from (default or environment) is tracked.
//
// Usage:
//   int64_t nsocks = trirace::ParamInt(trirace::ParamId::kNetNSocks);
//   if (trirace::ParamChoice<ShimMode>() == ShimMode::kSchedule) ...
//
// Adding a parameter: one row in common/param_list.inc (the id, the enum
// entry and the table row all come from it); an enum parameter also gets a
// block in common/param_choices.inc, which gives it a C++ enum type.
//
// Thread safety: Get() and every accessor are thread-safe and lock-free
// after the first call. ReloadForTesting() is for tests only and must not
// race with readers.
#ifndef TRIRACE_COMMON_PARAMS_H_
#define TRIRACE_COMMON_PARAMS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace trirace {

// One id per row of common/param_list.inc, in that order.
enum class ParamId : int {
#define TRIRACE_PARAM(id, ...) id,
#include "common/param_list.inc"
#undef TRIRACE_PARAM
  kCount,  // not a parameter
};

// The enum types of the enum parameters (common/param_choices.inc), their
// choice texts k<Type>Texts, and ParamEnumOf<Type>::kId, the parameter each
// belongs to.
template <typename E>
struct ParamEnumOf;
#define TRIRACE_PARAM_ENUM(Type, param) enum class Type : int {
#define TRIRACE_PARAM_CHOICE(enumerator, text) enumerator,
#define TRIRACE_PARAM_ENUM_END() };
#include "common/param_choices.inc"
#undef TRIRACE_PARAM_ENUM
#undef TRIRACE_PARAM_CHOICE
#undef TRIRACE_PARAM_ENUM_END
#define TRIRACE_PARAM_ENUM(Type, param) inline constexpr absl::string_view k##Type##Texts[] = {
#define TRIRACE_PARAM_CHOICE(enumerator, text) text,
#define TRIRACE_PARAM_ENUM_END() };
#include "common/param_choices.inc"
#undef TRIRACE_PARAM_ENUM
#undef TRIRACE_PARAM_CHOICE
#undef TRIRACE_PARAM_ENUM_END
#define TRIRACE_PARAM_ENUM(Type, param) \
  template <>                          \
  struct ParamEnumOf<Type> {           \
    static constexpr ParamId kId = ParamId::param; \
  };
#define TRIRACE_PARAM_CHOICE(enumerator, text)
#define TRIRACE_PARAM_ENUM_END()
#include "common/param_choices.inc"
#undef TRIRACE_PARAM_ENUM
#undef TRIRACE_PARAM_CHOICE
#undef TRIRACE_PARAM_ENUM_END

enum class ParamType { kBool, kInt, kDouble, kString, kEnum };
enum class ParamSource { kDefault, kEnvironment };

absl::string_view ParamTypeName(ParamType type);
absl::string_view ParamSourceName(ParamSource source);

// One row of the registry. All strings are static literals.
struct ParamSpec {
  ParamId id;
  absl::string_view name;
  ParamType type;
  absl::string_view default_text;  // parsed like an environment value
  absl::string_view description;
  absl::string_view component;     // which part of TriRace reads it
  int64_t min_int = INT64_MIN;    // kInt: inclusive range
  int64_t max_int = INT64_MAX;
  double min_double = -1e300;     // kDouble: inclusive range
  double max_double = 1e300;
  std::span<const absl::string_view> choices = {};  // kEnum: accepted (case-insensitive)

  // Human-readable "what is accepted", used in warnings and `trirace env`.
  std::string Accepted() const;
};

// A parsed value. Only the member that matches the spec's type is meaningful;
// `text` always holds the canonical text form (enum choices in table case).
struct ParamValue {
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string text;
  int choice = -1;  // kEnum: index into ParamSpec::choices
  ParamSource source = ParamSource::kDefault;
};

class Params {
 public:
  // The process-wide registry, read from the environment on first call.
  // The first call also emits the WARNs for bad values (once per process).
  static const Params& Get();
  // Get() without emitting the warnings: for the logger, which reads its own
  // configuration from here and must not log while it configures itself.
  static const Params& GetQuiet();

  // The registry rows, in ParamId order.
  static std::span<const ParamSpec> Specs();
  static const ParamSpec& Spec(ParamId id);
  // nullptr if `name` is not a registered parameter.
  static const ParamSpec* Find(absl::string_view name);

  // Parses `text` as a value of `spec` (no defaulting); the error message
  // names the variable, the value and what is accepted.
  static absl::StatusOr<ParamValue> Parse(const ParamSpec& spec, absl::string_view text);

  // Re-reads the environment (and re-emits warnings). Tests only.
  static void ReloadForTesting();

  const ParamValue& Value(ParamId id) const { return values_[static_cast<int>(id)]; }
  // The warnings produced while loading, one per bad value.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Params();
  std::vector<ParamValue> values_;
  std::vector<std::string> warnings_;
};

// Typed accessors. Asking for the wrong type is a programming error and
// aborts in debug builds.
bool ParamBool(ParamId id);
int64_t ParamInt(ParamId id);
double ParamDouble(ParamId id);
const std::string& ParamString(ParamId id);
const std::string& ParamEnum(ParamId id);  // canonical choice text
ParamSource ParamSourceOf(ParamId id);
// The index of an enum parameter's choice (its position in the choices).
int ParamChoiceIndex(ParamId id);

// An enum parameter as its C++ type: ParamChoice<ShimMode>() reads
// TRIRACE_MODE. Use sites switch on the enum; they never compare texts.
template <typename E>
E ParamChoice() {
  return static_cast<E>(ParamChoiceIndex(ParamEnumOf<E>::kId));
}

// Settings derived from several parameters, read the same way by every
// component that needs them.

// Whether the net plugin's class priority is on: TRIRACE_NET_CLASS_PRIORITY
// =on, or auto with TRIRACE_MODE=schedule and TRIRACE_POLICY=trirace where
// this host's queues honour the marks (HostMarksFinding(), common/qdisc.h:
// every device the TCP transport uses has a priority qdisc, or no queue).
// The plugin sets socket priorities by it; the trirace policy relies on it
// ([R10] in scheduler/trirace_policy.h).
bool NetClassPriorityEnabled();
// The same rule for a host whose qdiscs were judged as `marks` (trirace
// doctor --qdiscs judges another node's).
struct MarksFinding;
bool NetClassPriorityEnabledFor(const MarksFinding& marks);

// Whether rule [R14] (front stage first) is on: TRIRACE_FRONT_STAGE_FIRST
// =on in schedule mode, or auto there with TRIRACE_POLICY=trirace. With
// class priority on the wire (NetClassPriorityEnabled()) it acts through
// the plugin's marks, without it through the trirace policy's gating, so
// it is off without class priority under another policy.
bool FrontStageFirstEnabled();

}  // namespace trirace

#endif  // TRIRACE_COMMON_PARAMS_H_
