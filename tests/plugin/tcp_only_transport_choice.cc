// The transport of the wrapper tests' inner copy (libnccl-net-tritcp-test.so):
// TCP although TRIRACE_NET_INNER (which names this copy) is set, and no
// segment, so the wrapper's totals are the only ones published.
#include "plugin/core/transport_choice.h"
#include "plugin/transport/tcp/tcp_transport.h"

namespace trirace::net {

TransportChoice ChooseTransport() {
  TransportChoice choice;
  choice.transport = std::make_unique<tcp::TcpTransport>();
  return choice;
}

}  // namespace trirace::net
