// Wrapper mode: TRIRACE_NET_INNER=<name or path> loads another NCCL net
// plugin and forwards every call to it, while the core (net_core.h) counts
// the bytes per device exactly as for the TCP transport. This is how
// InfiniBand/EFA users keep their transport (nccl-rdma-sharp-plugins,
// aws-ofi-nccl) and still feed the scheduler.
//
// Lookup follows NCCL_NET_PLUGIN: the name as given (a path works), then
// libnccl-net-<name>.so; the newest table it exports among ncclNetPlugin_v11,
// _v10, _v9 and _v8 is used. The inner plugin's v11 init runs per TriRace
// context (so per communicator); older inner versions are initialised once.
// Loading TriRace itself as its own inner plugin is refused.
//
// Thread safety: as the inner plugin (NCCL's contract).
#ifndef TRIRACE_PLUGIN_WRAP_H_
#define TRIRACE_PLUGIN_WRAP_H_

#include <memory>
#include <string>

#include "plugin/core/transport.h"

namespace trirace::net {

// A transport that forwards to the plugin `inner` (loaded at Init).
std::unique_ptr<Transport> MakeWrapTransport(const std::string& inner);

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_WRAP_H_
