#include "sim/run/mode.h"

namespace trirace::sim {

std::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kOff: return "off";
    case Mode::kFifo: return "fifo";
    case Mode::kPriority: return "priority";
    case Mode::kWire: return "wire";
    case Mode::kGate: return "gate";
    case Mode::kTrirace: return "trirace";
    case Mode::kIdeal: return "ideal";
  }
  return "?";
}

std::vector<Mode> AllModes() {
  return {Mode::kOff, Mode::kFifo, Mode::kPriority, Mode::kWire, Mode::kGate, Mode::kTrirace, Mode::kIdeal};
}

std::optional<Mode> ModeFromName(std::string_view name) {
  for (Mode m : AllModes()) {
    if (ModeName(m) == name) return m;
  }
  return std::nullopt;
}

ModeSettings SettingsOf(Mode m, Qos qos) {
  ModeSettings s;
  switch (m) {
    case Mode::kOff: break;
    case Mode::kFifo:
      s.gated = true;
      s.policy = PolicyKind::kFifo;
      break;
    case Mode::kPriority:
      s.gated = true;
      s.policy = PolicyKind::kPriority;
      break;
    case Mode::kWire: s.class_marks = true; break;
    case Mode::kGate:
      s.gated = true;
      s.policy = PolicyKind::kTrirace;
      break;
    case Mode::kTrirace:
      s.gated = true;
      s.policy = PolicyKind::kTrirace;
      switch (ParamChoice<ClassPrioritySetting>()) {
        case ClassPrioritySetting::kOn: s.class_marks = true; break;
        case ClassPrioritySetting::kOff: s.class_marks = false; break;
        // As NetClassPriorityEnabled() judges the hosts' qdiscs.
        case ClassPrioritySetting::kAuto: s.class_marks = qos != Qos::kNone; break;
      }
      break;
    case Mode::kIdeal:
      s.class_marks = true;
      s.every_link_honours = true;
      s.front_stage_marks = true;
      return s;
  }
  if (s.gated) {
    // As FrontStageFirstEnabled() decides in schedule mode.
    bool front = false;
    switch (ParamChoice<FrontStageFirstSetting>()) {
      case FrontStageFirstSetting::kOn: front = s.class_marks || s.policy == PolicyKind::kTrirace; break;
      case FrontStageFirstSetting::kOff: front = false; break;
      case FrontStageFirstSetting::kAuto: front = s.policy == PolicyKind::kTrirace; break;
    }
    s.front_stage_marks = front && s.class_marks;
    s.front_stage_gauge = front && !s.class_marks;
  }
  return s;
}

}  // namespace trirace::sim
