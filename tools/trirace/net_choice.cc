#include "net_choice.h"

#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/params.h"
#include "library_paths.h"
#include "topology/discovery/sysfs.h"

namespace trirace::tools {
namespace {

// TriRace's plugin table's `name` (plugin/abi/tables.cc): what NCCL_NET must
// say for NCCL to pick the plugin when NCCL_NET is set.
constexpr absl::string_view kTriraceNetName = "TriRace";

constexpr NetChoice kChoices[] = {NetChoice::kAuto, NetChoice::kTcp, NetChoice::kWrap, NetChoice::kNative};

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// What NCCL_NET asks for.
enum class ForcedNet { kNone, kSocket, kIb, kTrirace, kOther };

ForcedNet Forced(absl::string_view nccl_net) {
  if (nccl_net.empty()) return ForcedNet::kNone;
  if (absl::EqualsIgnoreCase(nccl_net, "Socket")) return ForcedNet::kSocket;
  if (absl::EqualsIgnoreCase(nccl_net, "IB")) return ForcedNet::kIb;
  if (absl::EqualsIgnoreCase(nccl_net, kTriraceNetName)) return ForcedNet::kTrirace;
  return ForcedNet::kOther;
}

// The facts DecideNet reasons about, derived once from the inputs.
struct Facts {
  ForcedNet forced = ForcedNet::kNone;
  bool plugin_is_ours = false;      // NCCL_NET_PLUGIN names TriRace's plugin
  bool plugin_is_external = false;  // NCCL_NET_PLUGIN names another plugin
  std::string external;             // the plugin `wrap` wraps, "" if none
  std::string external_from;        // the variable it came from
  bool ib_usable = false;           // NCCL's IB transport would come up
};

Facts Derive(const NetInputs& in) {
  Facts f;
  f.forced = Forced(in.nccl_net);
  if (!in.user_plugin.empty()) {
    f.plugin_is_ours = IsTriracePlugin(in.user_plugin, in.our_plugin);
    f.plugin_is_external = !f.plugin_is_ours && !absl::EqualsIgnoreCase(in.user_plugin, "none");
  }
  if (f.plugin_is_external) {
    f.external = in.user_plugin;
    f.external_from = "NCCL_NET_PLUGIN";
  } else if (!in.user_inner.empty() && !IsTriracePlugin(in.user_inner, in.our_plugin)) {
    f.external = in.user_inner;
    f.external_from = "TRIRACE_NET_INNER";
  }
  f.ib_usable = in.active_rdma && !in.ib_disabled && f.forced != ForcedNet::kSocket;
  return f;
}

// Builds a decision: the env changes and the notes on what they replaced.
class Builder {
 public:
  Builder(const NetInputs& in, const Facts& f) : in_(in), f_(f) {}

  // NCCL_NET_PLUGIN = TriRace's plugin, TRIRACE_NET_INNER = `inner` (unset
  // when empty), NCCL_NET = TriRace's net when it names another.
  void UseOurPlugin(const std::string& inner) {
    if (!in_.user_plugin.empty() && !f_.plugin_is_ours && in_.user_plugin != inner) {
      notes_.push_back(absl::StrCat("NCCL_NET_PLUGIN=", in_.user_plugin, " replaced"));
    }
    env_.push_back({"NCCL_NET_PLUGIN", in_.our_plugin});
    if (!inner.empty()) {
      if (!in_.user_inner.empty() && in_.user_inner != inner) {
        notes_.push_back(absl::StrCat("TRIRACE_NET_INNER=", in_.user_inner, " replaced"));
      }
      env_.push_back({"TRIRACE_NET_INNER", inner});
    } else if (!in_.user_inner.empty()) {
      notes_.push_back(absl::StrCat("TRIRACE_NET_INNER=", in_.user_inner, " unset"));
      env_.push_back({"TRIRACE_NET_INNER", std::nullopt});
    }
    if (f_.forced != ForcedNet::kNone && f_.forced != ForcedNet::kTrirace) {
      notes_.push_back(absl::StrCat("NCCL_NET=", in_.nccl_net, " -> ", kTriraceNetName,
                                    " (NCCL picks nets by name)"));
      env_.push_back({"NCCL_NET", std::string(kTriraceNetName)});
    }
  }

  // TriRace's plugin not loaded: a NCCL_NET_PLUGIN naming it is unset, and
  // a NCCL_NET naming its net, which NCCL would then not find.
  void LeaveToNccl() {
    if (f_.plugin_is_ours) {
      notes_.push_back(absl::StrCat("NCCL_NET_PLUGIN=", in_.user_plugin, " unset"));
      env_.push_back({"NCCL_NET_PLUGIN", std::nullopt});
    }
    if (f_.forced == ForcedNet::kTrirace) {
      notes_.push_back(absl::StrCat("NCCL_NET=", in_.nccl_net, " unset"));
      env_.push_back({"NCCL_NET", std::nullopt});
    }
  }

  void Note(std::string note) { notes_.push_back(std::move(note)); }

  NetDecision Done(NetChoice choice, std::string why) {
    NetDecision d;
    d.choice = choice;
    d.env = std::move(env_);
    d.why = notes_.empty() ? std::move(why) : absl::StrCat(why, "; ", absl::StrJoin(notes_, "; "));
    return d;
  }

 private:
  const NetInputs& in_;
  const Facts& f_;
  std::vector<EnvChange> env_;
  std::vector<std::string> notes_;
};

constexpr absl::string_view kIbOccupancy = "link occupancy comes from the NIC port counters";
constexpr absl::string_view kSocketOccupancy = "link occupancy comes from the interface counters";

// Why NCCL will not use IB: the first reason that holds, "" when it will.
std::string NoIbBecause(const NetInputs& in, const Facts& f) {
  if (f.forced == ForcedNet::kSocket) return absl::StrCat("NCCL_NET=", in.nccl_net);
  if (in.ib_disabled) return "NCCL_IB_DISABLE=1";
  if (!in.active_rdma) return "no RDMA device with an ACTIVE port";
  return "";
}


// NCCL_NET=IB: NCCL's IB transport or nothing.
std::string IbForcedWhy(const NetInputs& in) {
  std::string why = absl::StrCat("NCCL_NET=", in.nccl_net, " forces NCCL's IB transport, which a plugin cannot wrap");
  if (!in.active_rdma) return absl::StrCat(why, "; but no RDMA device has an ACTIVE port: NCCL will find no IB net");
  if (in.ib_disabled) return absl::StrCat(why, "; but NCCL_IB_DISABLE=1 too: NCCL will find no IB net");
  return absl::StrCat(why, "; ", kIbOccupancy);
}

// What NCCL does when TriRace's plugin is not loaded, for an explicit
// `native`.
std::string NativeOutcome(const NetInputs& in, const Facts& f) {
  if (f.forced == ForcedNet::kIb) return IbForcedWhy(in);
  if (f.plugin_is_external && f.forced != ForcedNet::kSocket) {
    return absl::StrCat("NCCL uses NCCL_NET_PLUGIN=", in.user_plugin, " as set, without TriRace counting its bytes");
  }
  const std::string no_ib = NoIbBecause(in, f);
  if (!no_ib.empty()) return absl::StrCat(no_ib, ": NCCL will use its socket transport; ", kSocketOccupancy);
  return absl::StrCat("NCCL keeps its own IB transport; ", kIbOccupancy);
}

absl::Status WrapWithoutExternal(const NetInputs& in, const Facts& f) {
  std::string what;
  if (in.user_plugin.empty()) {
    what = "NCCL_NET_PLUGIN is unset";
  } else if (f.plugin_is_ours) {
    what = absl::StrCat("NCCL_NET_PLUGIN=", in.user_plugin, " is TriRace's own plugin");
  } else {
    what = absl::StrCat("NCCL_NET_PLUGIN=", in.user_plugin);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--net wrap needs another net plugin to wrap and none is set (", what,
      "): set NCCL_NET_PLUGIN (or TRIRACE_NET_INNER) to it, e.g. NCCL_NET_PLUGIN=ofi for aws-ofi-nccl"));
}

absl::Status PluginMissing(NetChoice choice) {
  return absl::NotFoundError(absl::StrCat("--net ", NetChoiceName(choice), " needs the net plugin ",
                                          kNetPluginLibrary, ", which is not built or installed"));
}

}  // namespace

absl::string_view NetChoiceName(NetChoice choice) {
  switch (choice) {
    case NetChoice::kAuto:
      return "auto";
    case NetChoice::kTcp:
      return "tcp";
    case NetChoice::kWrap:
      return "wrap";
    case NetChoice::kNative:
      return "native";
  }
  return "?";
}

std::optional<NetChoice> ParseNetChoice(absl::string_view text) {
  for (NetChoice c : kChoices) {
    if (absl::EqualsIgnoreCase(text, NetChoiceName(c))) return c;
  }
  return std::nullopt;
}

std::string NetChoicesAccepted() {
  return absl::StrCat("one of ", absl::StrJoin(kChoices, ", ", [](std::string* out, NetChoice c) {
                        absl::StrAppend(out, NetChoiceName(c));
                      }));
}

bool IsTriracePlugin(absl::string_view value, absl::string_view our_plugin) {
  if (value.empty()) return false;
  if (!our_plugin.empty() && value == our_plugin) return true;
  if (absl::EqualsIgnoreCase(value, "trirace")) return true;
  const size_t slash = value.rfind('/');
  const absl::string_view file = slash == absl::string_view::npos ? value : value.substr(slash + 1);
  return file == kNetPluginLibrary;
}

NetEnv ReadNetEnv() {
  NetEnv env;
  env.nccl_net_plugin = Getenv("NCCL_NET_PLUGIN");
  env.nccl_net = Getenv("NCCL_NET");
  env.nccl_ib_disable = Getenv("NCCL_IB_DISABLE");
  env.net_inner = ParamString(ParamId::kNetInner);
  return env;
}

NetInputs GatherNetInputs(NetChoice requested, const NetEnv& env, absl::string_view our_plugin,
                          absl::string_view sysfs_root) {
  NetInputs in;
  in.requested = requested;
  in.user_plugin = env.nccl_net_plugin;
  in.user_inner = env.net_inner;
  in.nccl_net = std::string(absl::StripAsciiWhitespace(env.nccl_net));
  int64_t disable = 0;
  in.ib_disabled = absl::SimpleAtoi(env.nccl_ib_disable, &disable) && disable != 0;
  in.active_rdma = topo::HasActiveRdmaPort(sysfs_root);
  in.our_plugin = std::string(our_plugin);
  return in;
}

absl::StatusOr<NetDecision> DecideNet(const NetInputs& in) {
  const Facts f = Derive(in);
  Builder b(in, f);
  switch (in.requested) {
    case NetChoice::kTcp: {
      if (in.our_plugin.empty()) return PluginMissing(in.requested);
      b.UseOurPlugin("");
      return b.Done(NetChoice::kTcp,
                    f.ib_usable ? "as requested: inter-node traffic goes over TCP sockets, not the ACTIVE RDMA port"
                                : "as requested");
    }
    case NetChoice::kWrap:
      if (f.external.empty()) return WrapWithoutExternal(in, f);
      if (in.our_plugin.empty()) return PluginMissing(in.requested);
      b.UseOurPlugin(f.external);
      return b.Done(NetChoice::kWrap, absl::StrCat("as requested: TriRace's plugin wraps ", f.external_from, "=",
                                                   f.external, " and counts its bytes"));
    case NetChoice::kNative:
      b.LeaveToNccl();
      return b.Done(NetChoice::kNative, absl::StrCat("as requested; ", NativeOutcome(in, f)));
    case NetChoice::kAuto:
      break;
  }
  if (in.our_plugin.empty()) {
    return NetDecision{NetChoice::kNative, {},
                       absl::StrCat("net plugin ", kNetPluginLibrary,
                                    " not found: NCCL keeps its own transport; link occupancy will come from NIC "
                                    "counters")};
  }
  if (f.forced == ForcedNet::kSocket) {
    b.UseOurPlugin("");
    return b.Done(NetChoice::kTcp, absl::StrCat("NCCL_NET=", in.nccl_net, ": NCCL would use sockets anyway"));
  }
  if (f.forced == ForcedNet::kIb) {
    b.LeaveToNccl();
    return b.Done(NetChoice::kNative, IbForcedWhy(in));
  }
  if (f.forced == ForcedNet::kOther && f.external.empty()) {
    b.LeaveToNccl();
    return b.Done(NetChoice::kNative,
                  absl::StrCat("NCCL_NET=", in.nccl_net,
                               " names a net of a plugin NCCL finds itself and no plugin to wrap is set: left to "
                               "NCCL; link occupancy comes from the NIC counters"));
  }
  if (!f.external.empty()) {
    b.UseOurPlugin(f.external);
    return b.Done(NetChoice::kWrap,
                  absl::StrCat(f.external_from, "=", f.external, ": TriRace's plugin wraps it and counts its bytes"));
  }
  if (f.ib_usable) {
    b.LeaveToNccl();
    return b.Done(NetChoice::kNative, absl::StrCat("an RDMA port is ACTIVE: NCCL keeps its own IB transport, "
                                                   "which a plugin cannot wrap; ",
                                                   kIbOccupancy));
  }
  b.UseOurPlugin("");
  return b.Done(NetChoice::kTcp, absl::StrCat(NoIbBecause(in, f), ": NCCL would use sockets anyway"));
}

std::string NetLine(const NetDecision& decision) {
  return absl::StrCat("net: ", NetChoiceName(decision.choice), " (", decision.why, ")");
}

void ApplyEnvChanges(const std::vector<EnvChange>& changes) {
  for (const EnvChange& c : changes) {
    if (c.value.has_value()) {
      setenv(c.name.c_str(), c.value->c_str(), 1);
    } else {
      unsetenv(c.name.c_str());
    }
  }
}

}  // namespace trirace::tools
