// Wrapper mode: TRIRACE_NET_INNER=<name or path> loads another NCCL net
// plugin and forwards every call to it, while the core (net_core.h) counts
// the bytes per device exactly as for the TCP transport. This is how
// InfiniBand/EFA users keep their transport (nccl-rdma-sharp-plugins,
// aws-ofi-nccl) and still feed the scheduler.
//
// Loading is the shared loader's (plugin/loader/net_plugin_loader.h): the
// name as given (a path works), then libnccl-net-<name>.so; the newest table
// it exports, adapted to the v11 calls. The inner plugin's init runs per
// TriRace context (so per communicator; the loader initialises an older
// inner plugin once). Loading TriRace itself as its own inner plugin is
// refused.
//
// Thread safety: as the inner plugin (NCCL's contract).
#ifndef TRIRACE_PLUGIN_TRANSPORT_WRAP_WRAP_TRANSPORT_H_
#define TRIRACE_PLUGIN_TRANSPORT_WRAP_WRAP_TRANSPORT_H_

#include <memory>
#include <string>

#include "plugin/core/transport.h"

namespace trirace::net {

// A transport that forwards to the plugin `inner` (loaded at Init).
std::unique_ptr<Transport> MakeWrapTransport(const std::string& inner);

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_TRANSPORT_WRAP_WRAP_TRANSPORT_H_
