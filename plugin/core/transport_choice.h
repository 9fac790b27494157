// The transport a build of the net plugin runs over, and whether it
// publishes the occupancy segment. Each plugin build links one definition
// of ChooseTransport (trirace_add_net_plugin in plugin/CMakeLists.txt):
//  * transport_choice.cc, libnccl-net-trirace.so: the plugin that
//    TRIRACE_NET_INNER names, wrapped, else TCP; publishes when
//    TRIRACE_NET_OCCUPANCY is on;
//  * tests/plugin/tcp_only_transport_choice.cc, the wrapper tests' inner
//    copy: TCP always (TRIRACE_NET_INNER names that copy) and no segment
//    (the wrapper publishes its bytes).
// A runtime switch cannot tell the two copies apart: they share one
// process environment, and NCCL's init passes nothing else.
//
// Thread safety: called once, by NetCore::Init under its lock.
#ifndef TRIRACE_PLUGIN_CORE_TRANSPORT_CHOICE_H_
#define TRIRACE_PLUGIN_CORE_TRANSPORT_CHOICE_H_

#include <memory>

#include "plugin/core/transport.h"

namespace trirace::net {

struct TransportChoice {
  std::unique_ptr<Transport> transport;  // not yet initialised
  bool publish_occupancy = false;
};

TransportChoice ChooseTransport();

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_TRANSPORT_CHOICE_H_
