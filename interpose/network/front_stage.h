// Front stage first (rule [R14], TRIRACE_FRONT_STAGE_FIRST): which rank's
// DENSE traffic leaves ahead of its host's other DENSE traffic on the wire.
//
// Why: with pipeline stages of one replica on one host (Megatron-LM's
// placement with more than one stage per node), the host's uplink carries
// each stage's data-parallel all-reduce at the same class. Under class
// priority they share DENSE's band, so each gets about half the link and
// all finish late together. The next step needs the front-most stage's
// weights first (its first forward starts the pipeline; the stage behind
// it starts one forward and one hop later), so that all-reduce should go
// first: on a work-conserving link, it then ends about when it would alone
// and the others end when they would have anyway. The wire cannot know
// which stage is in front; the shim can, from the pipeline comm.
//
// How: a pipeline comm orders its ranks by stage (Megatron-LM's and
// PyTorch's pipeline groups do), and its peer exchange (peer_exchange.h)
// tells which ranks share an uplink (one host, and one NIC where both
// ranks know theirs: ranks on different rails do not compete). The rank
// with the lowest comm rank among those is the front stage there: its
// DENSE is marked like SPARSE (socket priority 0, DSCP 0), one band ahead
// of DENSE, still behind P2P. A comm counts as a pipeline when annotated
// so, or when inferred so (only send/recv so far) and spanning two or more
// hosts: an all-to-all made of grouped sends inside one host looks the
// same. Marks change no byte and no order inside NCCL, only which packet a
// priority queue sends first, so ranks may decide differently without harm.
//
// Thread safety: the process-wide answer is an atomic,
// set by the launcher and read by the net plugin's threads through
// trirace_dense_ahead().
#ifndef TRIRACE_INTERPOSE_NETWORK_FRONT_STAGE_H_
#define TRIRACE_INTERPOSE_NETWORK_FRONT_STAGE_H_

#include <span>

#include "absl/strings/string_view.h"
#include "topology/uplink_place.h"

namespace trirace::interpose {

// Where a rank stands on its uplink: topology/uplink_place.h (pure, shared
// with the simulator).
using topo::HostPlace;
using topo::HostPlaceName;
using topo::PlaceOnHost;

// The process-wide answer of trirace_dense_ahead(). The launcher notes the
// place of each pipeline comm (GatedLauncher, at the comm's first P2P op
// after its exchange); DenseAhead() is true once a comm found this rank in
// front and none found it behind (a process in several pipelines, as with
// interleaved stages, goes ahead only where it leads them all).
void NoteDenseAhead(HostPlace place);
bool DenseAhead();
// True once a pipeline comm found this rank behind another on its uplink:
// without class priority on the wire, the plugin occupancy reader then
// counts the other processes' DENSE in flight on the NIC as higher-class
// activity for the trirace policy ([R13]'s gauge), so this DENSE yields to
// the front stage's by gating instead of by marks.
bool DenseBehind();
void ResetDenseAheadForTest();

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_NETWORK_FRONT_STAGE_H_
