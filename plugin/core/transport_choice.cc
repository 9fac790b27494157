// The transport of libnccl-net-trirace.so: wrapper mode when
// TRIRACE_NET_INNER names a plugin, else TCP.
#include "plugin/core/transport_choice.h"

#include <string>

#include "common/params.h"
#include "plugin/transport/tcp/tcp_transport.h"
#include "plugin/transport/wrap/wrap_transport.h"

namespace trirace::net {

TransportChoice ChooseTransport() {
  TransportChoice choice;
  const std::string& inner = ParamString(ParamId::kNetInner);
  if (!inner.empty()) {
    choice.transport = MakeWrapTransport(inner);
  } else {
    choice.transport = std::make_unique<tcp::TcpTransport>();
  }
  choice.publish_occupancy = ParamBool(ParamId::kNetOccupancy);
  return choice;
}

}  // namespace trirace::net
