// PeerIdentity: what one rank tells the other ranks of a communicator about
// where it sits — its host, its GPU and the NIC its traffic leaves through —
// so that both ends of every operation can be charged to the right links
// (system_links.h), and the settings its chunk plans come from, so that
// every rank can plan with the same ones (interpose/gate/chunk_agreement.h). The
// shim exchanges one record per rank when a comm becomes usable
// (interpose/network/peer_exchange.h).
//
// The wire form is a fixed kPeerIdentityBytes record, the same on every
// architecture (little-endian numbers, NUL-padded strings):
//
//   offset  size  field
//        0     4  magic "TRPI"
//        4     2  version (3)
//        6     2  rail (int16, -1 unknown)
//        8     4  NIC rate in Mbit/s (uint32, 0 unknown)
//       12    64  host key
//       76    16  GPU PCI bus id ("" without a GPU)
//       92     4  flags (uint32): bit 0 class priority on the wire,
//                 bit 1 TRIRACE_CHUNK_FLOAT_REDUCTIONS=on
//       96    32  NIC name ("" unknown)
//      128     8  TRIRACE_CHUNK_BYTES (uint64)
//      136     4  TRIRACE_CHUNK_US (uint32)
//      140     4  TRIRACE_CHUNK_MIN_BYTES in 4 KiB granules, rounded down
//                 (uint32; the chunk rule rounds to granules anyway)
//
// Version 1 had a 20-byte bus id and no flags, version 2 (128 bytes) no
// chunk settings; a record of another version is rejected (the exchange
// then fails alike on every rank).
//
// A host key longer than 63 bytes is stored as its first 46 bytes, '#' and
// 16 hex digits of a hash of the whole key, so two long keys that share a
// prefix stay apart; the same key always encodes the same way. Longer GPU
// bus ids or NIC names are truncated (normalised bus ids are 12 bytes, 13
// with a 5-digit domain; interface names at most 15, InfiniBand device
// names usually under 16). A chunk minimum past
// its field saturates (its parameter's bound keeps it inside).
// Flag bits this version does not know are ignored.
//
// Thread safety: stateless.
#ifndef TRIRACE_TOPOLOGY_PEER_IDENTITY_H_
#define TRIRACE_TOPOLOGY_PEER_IDENTITY_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace trirace::topo {

inline constexpr size_t kPeerIdentityBytes = 144;

// The parameters a rank's chunk plans come from (scheduler/chunk_planner.h,
// docs/scheduler.md "Chunking"), as its environment set them.
struct ChunkSettings {
  uint64_t fixed_bytes = 0;       // TRIRACE_CHUNK_BYTES (0: from wire time)
  uint32_t wire_us = 0;           // TRIRACE_CHUNK_US (0: never split)
  uint64_t min_bytes = 0;         // TRIRACE_CHUNK_MIN_BYTES
  bool float_reductions = false;  // TRIRACE_CHUNK_FLOAT_REDUCTIONS=on

  friend bool operator==(const ChunkSettings&, const ChunkSettings&) = default;
};

struct PeerIdentity {
  std::string host{};     // host key (TRIRACE_HOST_ID or the host name)
  std::string gpu_pci{};  // normalised bus id, "" without a GPU
  std::string nic{};      // the NIC this rank sends through, "" unknown
  int rail = -1;
  double nic_gbps = 0;
  // The rank marks its traffic classes on the wire (class priority,
  // NetClassPriorityEnabled()): P2P and SPARSE leave ahead of DENSE packet
  // by packet, so DENSE needs no chunks to let them pass.
  bool class_priority = false;
  ChunkSettings chunk{};

  friend bool operator==(const PeerIdentity&, const PeerIdentity&) = default;
};

// Writes `id` into `out` (exactly kPeerIdentityBytes).
void EncodePeerIdentity(const PeerIdentity& id, std::span<uint8_t, kPeerIdentityBytes> out);

// The identity in `in`. InvalidArgument when the magic or version is wrong
// or a string is not NUL-terminated within its field (a record that was
// never written, or one from another TriRace version).
absl::StatusOr<PeerIdentity> DecodePeerIdentity(std::span<const uint8_t, kPeerIdentityBytes> in);

// The host key as a record holds it (see the header comment).
std::string WireHostKey(const std::string& host);

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_PEER_IDENTITY_H_
