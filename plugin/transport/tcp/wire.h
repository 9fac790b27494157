// On-the-wire formats of the TCP transport (all little-endian host order:
// both ends run the same build on the same kind of host).
//
//  * ConnectHandle: what listen() writes into NCCL's 128-byte handle and
//    connect() reads. It carries a magic, the wire version, the listener's
//    address, the job token and a checksum, so a garbage handle is rejected
//    before any connection is attempted. `stage` is connect()'s own progress
//    pointer (NCCL calls connect again with the same handle until done); it
//    is not covered by the checksum.
//  * Hello: the first bytes on every socket of a new comm. The listener
//    closes (and logs) any connection whose hello has the wrong magic,
//    version or token.
//  * FrameHeader: one per message, on the control socket, in posting order.
//    `nparts` 0 means the payload follows inline on the control socket (or
//    is embedded in the header when it is at most kEmbeddedBytes);
//    otherwise the payload is split into `nparts` contiguous parts carried
//    by data sockets 1..nparts (see PartRange).
//  * RejectFrame: sent back by a receiver on the control socket when a
//    message is larger than the posted receive, so both sides fail.
#ifndef TRIRACE_PLUGIN_TRANSPORT_TCP_WIRE_H_
#define TRIRACE_PLUGIN_TRANSPORT_TCP_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/hash.h"
#include "plugin/abi/net_abi.h"
#include "plugin/transport/tcp/socket.h"

namespace trirace::net::tcp {

inline constexpr uint32_t kHandleMagic = 0x4e485254;  // "TRHN"
inline constexpr uint32_t kHelloMagic = 0x4c485254;   // "TRHL"
inline constexpr uint32_t kFrameMagic = 0x534d5254;   // "TRMS"
inline constexpr uint32_t kRejectMagic = 0x4a525254;  // "TRRJ"
inline constexpr uint16_t kWireVersion = 1;
inline constexpr int kMaxDataSockets = 16;

struct ConnectHandle {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  uint64_t token;
  uint64_t listener_id;
  SockAddr addr;
  uint32_t checksum;  // FNV-1a over the bytes above
  uint64_t stage;     // connect() progress (a live ConnectState*), 0 at first
};
static_assert(std::is_trivially_copyable_v<ConnectHandle>);
static_assert(sizeof(ConnectHandle) <= NCCL_NET_HANDLE_MAXSIZE,
              "the connection handle must fit NCCL_NET_HANDLE_MAXSIZE");

struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t socket_index;  // 0 = control, 1..nsocks = data
  uint16_t nsocks;        // data sockets of this comm
  uint16_t reserved;
  uint32_t checksum;      // FNV-1a over the other fields (checksum = 0)
  uint64_t token;
  uint64_t listener_id;
  uint64_t conn_id;       // random, the same on every socket of one comm
};
static_assert(sizeof(Hello) == 40);

// Payloads of up to kEmbeddedBytes travel inside their header, so a tiny
// message costs the receiver one read.
inline constexpr uint32_t kEmbeddedBytes = 40;

struct FrameHeader {
  uint32_t magic;
  int32_t tag;
  uint64_t size;
  uint32_t nparts;
  uint32_t reserved;
  char embedded[kEmbeddedBytes];  // the payload when size <= kEmbeddedBytes
};
static_assert(sizeof(FrameHeader) == 64);

struct RejectFrame {
  uint32_t magic;
  int32_t tag;
  uint64_t message_size;
  uint64_t posted_size;
};
static_assert(sizeof(RejectFrame) == 24);

inline uint32_t HandleChecksum(const ConnectHandle& h) {
  return Fnv1a32(&h, offsetof(ConnectHandle, checksum));
}

inline uint32_t HelloChecksum(Hello h) {
  h.checksum = 0;
  return Fnv1a32(&h, sizeof(h));
}

// Part `k` of `nparts` of a message of `size` bytes: [*offset, *offset+*len).
inline void PartRange(uint64_t size, uint32_t nparts, uint32_t k, uint64_t* offset,
                      uint64_t* len) {
  uint64_t begin = size * k / nparts;
  uint64_t end = size * (k + 1) / nparts;
  *offset = begin;
  *len = end - begin;
}

}  // namespace trirace::net::tcp

#endif  // TRIRACE_PLUGIN_TRANSPORT_TCP_WIRE_H_
