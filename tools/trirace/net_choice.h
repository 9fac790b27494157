// The network transport `trirace run` leaves NCCL with: which net plugin
// NCCL loads, and why, from what the user set and what this machine has.
//
// NCCL moves inter-node bytes through the first net it can initialise: an
// external plugin (NCCL_NET_PLUGIN, default libnccl-net.so), then its own IB
// transport (InfiniBand / RoCE verbs), then its own sockets; NCCL_NET forces
// one by name. TriRace's plugin (libnccl-net-trirace.so, net name
// "TriRace") carries bytes over TCP, or wraps another plugin
// (TRIRACE_NET_INNER) and counts its bytes. NCCL's own IB transport is not
// exported by libnccl and cannot be wrapped, so pointing NCCL_NET_PLUGIN at
// TriRace's plugin on an RDMA cluster would move every inter-node byte onto
// TCP. The choices:
//
//   tcp     NCCL_NET_PLUGIN = TriRace's plugin, TRIRACE_NET_INNER unset:
//           TriRace's TCP transport carries the bytes and counts them.
//   wrap    NCCL_NET_PLUGIN = TriRace's plugin, TRIRACE_NET_INNER = the
//           user's external plugin: that plugin carries the bytes, TriRace
//           counts them.
//   native  TriRace's plugin is not loaded: NCCL picks its transport as it
//           would without TriRace (its IB transport where an RDMA port is
//           up); link occupancy comes from the NIC's port counters.
//
// `auto` (the default), first rule that holds:
//   0. TriRace's plugin is not built or installed -> native, with no change
//      to the environment (the reason says the plugin was not found)
//   1. NCCL_NET=Socket                      -> tcp  (NCCL would use sockets)
//   2. NCCL_NET=IB                          -> native (IB forced)
//   3. NCCL_NET names another net and no external plugin is set -> native
//      (a plugin NCCL finds itself, e.g. a default libnccl-net.so, provides it)
//   4. an external plugin is set            -> wrap
//   5. an ACTIVE RDMA port, NCCL_IB_DISABLE unset or 0 -> native
//   6. otherwise                            -> tcp  (NCCL would use sockets)
// An explicit choice overrides these: `wrap` without an external plugin is a
// usage error (InvalidArgument), `tcp` or `wrap` without TriRace's plugin a
// failure (NotFound); `native` is always possible (on a machine without an
// active RDMA port the reason says NCCL will use its socket transport).
//
// "External plugin": NCCL_NET_PLUGIN when it is set, is not "none" and does
// not name TriRace's plugin ("trirace", a path or name whose file name is
// libnccl-net-trirace.so, or the path found); else TRIRACE_NET_INNER when it
// is set and not TriRace's. The one found is what `wrap` wraps.
//
// Whenever NCCL_NET_PLUGIN points at TriRace's plugin (tcp, wrap) and
// NCCL_NET names another net, NCCL_NET becomes "TriRace": NCCL selects nets
// by name and would otherwise pass TriRace's plugin by. `tcp` unsets
// TRIRACE_NET_INNER. `native` unsets a NCCL_NET_PLUGIN that names TriRace's
// plugin (keeping any other value: "none", or an external plugin, which NCCL
// then uses unwrapped) and a NCCL_NET of "TriRace". The reason names every
// value that was replaced or unset.
//
// Example (`trirace run`):
//   NetInputs in = GatherNetInputs(NetChoice::kAuto, ReadNetEnv(), plugin,
//                                  ParamString(ParamId::kSysfsRoot));
//   absl::StatusOr<NetDecision> d = DecideNet(in);
//   if (d.ok()) { std::fprintf(stderr, "trirace run: %s\n", NetLine(*d).c_str());
//                 ApplyEnvChanges(d->env); }
//
// Thread safety: DecideNet and the name functions are pure. ReadNetEnv and
// ApplyEnvChanges read / change the process environment and must not race
// with other users of it.
#ifndef TRIRACE_TOOLS_TRIRACE_NET_CHOICE_H_
#define TRIRACE_TOOLS_TRIRACE_NET_CHOICE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trirace::tools {

enum class NetChoice { kAuto, kTcp, kWrap, kNative };

// "auto", "tcp", "wrap", "native".
absl::string_view NetChoiceName(NetChoice choice);
// The choice named `text` (case-insensitive), or nullopt.
std::optional<NetChoice> ParseNetChoice(absl::string_view text);
// "one of auto, tcp, wrap, native": what --net accepts.
std::string NetChoicesAccepted();

// The variables that decide, as the user set them ("" when unset).
struct NetEnv {
  std::string nccl_net_plugin;  // NCCL_NET_PLUGIN
  std::string nccl_net;         // NCCL_NET
  std::string nccl_ib_disable;  // NCCL_IB_DISABLE
  std::string net_inner;        // TRIRACE_NET_INNER
};

// This process's: the NCCL_* variables from the environment,
// TRIRACE_NET_INNER through the params registry.
NetEnv ReadNetEnv();

// What DecideNet decides on.
struct NetInputs {
  NetChoice requested = NetChoice::kAuto;
  std::string user_plugin;   // NCCL_NET_PLUGIN as set, "" when unset
  std::string user_inner;    // TRIRACE_NET_INNER as set, "" when unset
  std::string nccl_net;      // NCCL_NET as set, "" when unset
  bool ib_disabled = false;  // NCCL_IB_DISABLE is a non-zero integer
  bool active_rdma = false;  // an RDMA device with an ACTIVE port
  std::string our_plugin;    // the path of TriRace's plugin, "" when not found
};

// The inputs from `env` and the sysfs tree at `sysfs_root`
// (topo::HasActiveRdmaPort). `our_plugin`: the path of TriRace's plugin, ""
// when it is not built or installed.
NetInputs GatherNetInputs(NetChoice requested, const NetEnv& env, absl::string_view our_plugin,
                          absl::string_view sysfs_root);

// One change to the environment: set `name` to `value`, or unset it.
struct EnvChange {
  std::string name;
  std::optional<std::string> value;  // nullopt: unset

  bool operator==(const EnvChange&) const = default;
};

struct NetDecision {
  NetChoice choice = NetChoice::kTcp;  // never kAuto
  std::vector<EnvChange> env;         // to apply before exec, in order
  std::string why;                    // one line, no trailing newline
};

// The decision for `in` (rules above). Errors: InvalidArgument for `wrap`
// without an external plugin (the message names what is missing and how to
// set it), NotFound for `tcp` / `wrap` without TriRace's plugin; both
// messages start with "--net <choice>".
absl::StatusOr<NetDecision> DecideNet(const NetInputs& in);

// "net: <choice> (<why>)".
std::string NetLine(const NetDecision& decision);

// Applies `changes` to this process's environment, in order.
void ApplyEnvChanges(const std::vector<EnvChange>& changes);

// Whether `value` (an NCCL_NET_PLUGIN or TRIRACE_NET_INNER value) names
// TriRace's own plugin: "trirace" (any case), a name or path whose file name
// is libnccl-net-trirace.so, or `our_plugin` itself.
bool IsTriracePlugin(absl::string_view value, absl::string_view our_plugin);

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_NET_CHOICE_H_
