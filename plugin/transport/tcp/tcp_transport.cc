#include "plugin/transport/tcp/tcp_transport.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/logging.h"
#include "common/params.h"
#include "common/status.h"
#include "plugin/transport/tcp/wire.h"

namespace trirace::net::tcp {
namespace {

constexpr int kMaxComms = 65536;
constexpr size_t kMaxNetSize = size_t{1} << 30;
constexpr size_t kMaxCollSize = size_t{512} << 20;

uint64_t RandomU64() {
  uint64_t v = 0;
  while (v == 0) {
    if (getrandom(&v, sizeof(v), 0) != sizeof(v)) v = static_cast<uint64_t>(MonotonicNs()) * 0x9e3779b97f4a7c15ull;
  }
  return v;
}

// Per-communicator settings the TCP transport keeps (v11 init config).
struct TcpContext {
  CommConfig config;
};

int TrafficClassOf(void* inner_ctx) {
  return inner_ctx ? static_cast<TcpContext*>(inner_ctx)->config.traffic_class
                   : NCCL_NET_TRAFFIC_CLASS_UNDEF;
}

}  // namespace

std::optional<uint64_t> TokenFromText(absl::string_view text) {
  if (text.empty()) return std::nullopt;
  const uint64_t h = Fnv1a64Text(std::string_view(text.data(), text.size()));
  return h == 0 ? 1 : h;
}

struct TcpTransport::ConnectState {
  struct Sock {
    UniqueFd fd;
    bool connected = false;
    size_t hello_sent = 0;
    Hello hello{};
  };
  std::vector<Sock> socks;
  SockAddr peer;
  int64_t start_ns = 0;
};

struct TcpTransport::ListenComm {
  struct Pending {
    UniqueFd fd;
    Hello hello{};
    size_t got = 0;
    int64_t since_ns = 0;
    SockAddr from{};
  };
  struct Group {
    std::vector<UniqueFd> socks;
    int have = 0;
    int64_t since_ns = 0;
  };
  UniqueFd fd;
  SockAddr addr;
  uint64_t listener_id = 0;
  uint64_t token = 0;
  int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
  std::vector<Pending> pending;
  std::map<uint64_t, Group> groups;
};

TcpTransport::TcpTransport() = default;
TcpTransport::~TcpTransport() = default;

absl::Status TcpTransport::Init(const InitArgs&) {
  job_token_ = TokenFromText(ParamString(ParamId::kNetToken));
  std::string spec_text = InterfaceSpecText();
  auto found = DiscoverInterfaces(InterfaceSpec::Parse(spec_text));
  if (!found.ok()) return found.status();
  interfaces_ = std::move(*found);
  if (interfaces_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no usable network interface (TRIRACE_NET_IFNAME/NCCL_SOCKET_IFNAME='", spec_text, "')"));
  }
  for (size_t i = 0; i < interfaces_.size(); ++i) {
    TRIRACE_INFO(NET, "TCP device %d: %s %s, %d Mbps%s", static_cast<int>(i), interfaces_[i].name,
                 interfaces_[i].addr.ToString(), interfaces_[i].speed_mbps,
                 interfaces_[i].loopback ? " (loopback)" : "");
  }
  return absl::OkStatus();
}

int TcpTransport::NumDevices() const {
  return static_cast<int>(interfaces_.size() + vdevices_.size());
}

const Interface& TcpTransport::DeviceInterface(int dev) const {
  if (dev < static_cast<int>(interfaces_.size())) return interfaces_[dev];
  return interfaces_[vdevices_[dev - interfaces_.size()].front()];
}

absl::StatusOr<DeviceProps> TcpTransport::Properties(int dev) const {
  const Interface& itf = DeviceInterface(dev);
  DeviceProps p;
  p.name = itf.name;
  p.pci_path = itf.pci_path;
  p.guid = static_cast<uint64_t>(dev);
  p.ptr_support = NCCL_PTR_HOST;
  p.reg_is_global = 1;
  p.speed_mbps = itf.speed_mbps;
  p.latency_us = 0;
  p.max_comms = kMaxComms;
  p.max_recvs = kMaxRecvs;
  p.max_p2p_bytes = kMaxNetSize;
  p.max_coll_bytes = kMaxCollSize;
  p.max_multi_request_size = 1;
  if (dev < static_cast<int>(interfaces_.size())) {
    p.vprops.ndevs = 1;
    p.vprops.devs[0] = dev;
  } else {
    const std::vector<int>& members = vdevices_[dev - interfaces_.size()];
    p.vprops.ndevs = static_cast<int>(members.size());
    for (size_t i = 0; i < members.size(); ++i) p.vprops.devs[i] = members[i];
  }
  return p;
}

absl::Status TcpTransport::MakeVDevice(int* dev, const ncclNetVDeviceProps_v11_t& props) {
  // A virtual NIC carries its traffic over its first member's interface.
  if (props.ndevs < 1 || props.ndevs > NCCL_NET_MAX_DEVS_PER_NIC) {
    return absl::InvalidArgumentError(absl::StrCat("makeVDevice: ndevs=", props.ndevs,
                                                   " (accepted: 1..", NCCL_NET_MAX_DEVS_PER_NIC, ")"));
  }
  std::vector<int> members;
  for (int i = 0; i < props.ndevs; ++i) {
    if (props.devs[i] < 0 || props.devs[i] >= static_cast<int>(interfaces_.size())) {
      return absl::InvalidArgumentError(absl::StrCat("makeVDevice: devs[", i, "]=", props.devs[i],
                                                     " is not a physical device (0..",
                                                     interfaces_.size() - 1, ")"));
    }
    members.push_back(props.devs[i]);
  }
  vdevices_.push_back(std::move(members));
  *dev = NumDevices() - 1;
  return absl::OkStatus();
}

absl::Status TcpTransport::InitContext(uint64_t, const CommConfig& config, void** inner_ctx) {
  *inner_ctx = new TcpContext{config};
  return absl::OkStatus();
}

absl::Status TcpTransport::FinalizeContext(void* inner_ctx) {
  delete static_cast<TcpContext*>(inner_ctx);
  return absl::OkStatus();
}

absl::Status TcpTransport::SetNetAttr(void*, const ncclNetAttr_v11_t&) { return absl::OkStatus(); }

CommOptions TcpTransport::Options() const {
  CommOptions o;
  o.nthreads = static_cast<int>(ParamInt(ParamId::kNetNThreads));
  o.stripe_min_bytes = static_cast<uint64_t>(ParamInt(ParamId::kNetStripeMinBytes));
  o.timeout_ms = static_cast<int>(ParamInt(ParamId::kNetTimeoutMs));
  o.rto_min_us = static_cast<int>(ParamInt(ParamId::kNetRtoMinUs));
  return o;
}

absl::Status TcpTransport::Listen(void* inner_ctx, int dev, void* handle, void** listen_comm) {
  auto comm = std::make_unique<ListenComm>();
  auto fd = ListenOn(DeviceInterface(dev).addr, &comm->addr);
  if (!fd.ok()) return fd.status();
  comm->fd = std::move(*fd);
  comm->listener_id = RandomU64();
  comm->token = job_token_ ? *job_token_ : RandomU64();
  comm->traffic_class = TrafficClassOf(inner_ctx);
  ConnectHandle h{};
  h.magic = kHandleMagic;
  h.version = kWireVersion;
  h.token = comm->token;
  h.listener_id = comm->listener_id;
  h.addr = comm->addr;
  h.checksum = HandleChecksum(h);
  std::memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  std::memcpy(handle, &h, sizeof(h));
  TRIRACE_TRACE(NET, "listening on %s (device %d)", comm->addr.ToString(), dev);
  *listen_comm = comm.release();
  return absl::OkStatus();
}

absl::Status TcpTransport::Connect(void* inner_ctx, int dev, const CommConfig& config, void* handle,
                                   void** send_comm, ncclNetDeviceHandle_v11_t**) {
  *send_comm = nullptr;
  ConnectHandle h;
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic || h.version != kWireVersion || h.checksum != HandleChecksum(h)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "connect: the handle is not a TriRace TCP handle of wire version ", kWireVersion,
        " (magic 0x", absl::Hex(h.magic), ", version ", h.version, ", checksum mismatch: ",
        h.checksum != HandleChecksum(h), ")"));
  }
  int family = h.addr.u.sa.sa_family;
  if ((family != AF_INET && family != AF_INET6) || h.addr.port() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("connect: handle address ", h.addr.ToString(),
                                                   " is not an IPv4/IPv6 listener address"));
  }
  if (job_token_ && h.token != *job_token_) {
    return absl::InvalidArgumentError(
        "connect: the handle carries another job's token (TRIRACE_NET_TOKEN differs)");
  }
  int traffic_class = config.traffic_class != NCCL_NET_TRAFFIC_CLASS_UNDEF
                          ? config.traffic_class
                          : TrafficClassOf(inner_ctx);
  CommOptions options = Options();
  SocketOptions sock_options{traffic_class, options.timeout_ms, options.rto_min_us};

  absl::ReleasableMutexLock lock(&mu_);
  ConnectState* state = nullptr;
  if (h.stage == 0) {
    auto fresh = std::make_unique<ConnectState>();
    fresh->peer = h.addr;
    fresh->start_ns = MonotonicNs();
    int nsocks = static_cast<int>(ParamInt(ParamId::kNetNSocks));
    if (nsocks == 0) {
      const Interface& itf = DeviceInterface(dev);
      nsocks = AutoDataSockets(itf.speed_mbps, itf.loopback || h.addr.IsLoopback());
    }
    uint64_t conn_id = RandomU64();
    for (int i = 0; i <= nsocks; ++i) {
      auto fd = NewTcpSocket(h.addr);
      if (!fd.ok()) return fd.status();
      TRIRACE_RETURN_IF_ERROR(ConfigureDataSocket(fd->get(), sock_options));
      if (::connect(fd->get(), &h.addr.u.sa, h.addr.length()) != 0 && errno != EINPROGRESS) {
        return RemoteError(absl::StrCat("connect to ", h.addr.ToString(), ": ", strerror(errno)));
      }
      ConnectState::Sock s;
      s.fd = std::move(*fd);
      s.hello = Hello{kHelloMagic, kWireVersion, static_cast<uint16_t>(i),
                      static_cast<uint16_t>(nsocks), 0, 0, h.token, h.listener_id, conn_id};
      s.hello.checksum = HelloChecksum(s.hello);
      fresh->socks.push_back(std::move(s));
    }
    state = fresh.get();
    h.stage = reinterpret_cast<uint64_t>(state);
    connecting_[h.stage] = std::move(fresh);
    std::memcpy(static_cast<char*>(handle) + offsetof(ConnectHandle, stage), &h.stage,
                sizeof(h.stage));
  } else {
    auto it = connecting_.find(h.stage);
    if (it == connecting_.end()) {
      return absl::InvalidArgumentError("connect: the handle's connection stage is stale");
    }
    state = it->second.get();
  }

  auto finish = [&](absl::Status st) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    connecting_.erase(h.stage);
    uint64_t zero = 0;
    std::memcpy(static_cast<char*>(handle) + offsetof(ConnectHandle, stage), &zero, sizeof(zero));
    return st;
  };
  bool all_done = true;
  for (ConnectState::Sock& s : state->socks) {
    if (!s.connected) {
      pollfd p{s.fd.get(), POLLOUT, 0};
      if (::poll(&p, 1, 0) <= 0) {
        all_done = false;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(s.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        return finish(RemoteError(absl::StrCat("connect to ", state->peer.ToString(), ": ", strerror(err))));
      }
      s.connected = true;
    }
    while (s.hello_sent < sizeof(Hello)) {
      ssize_t r = ::send(s.fd.get(), reinterpret_cast<char*>(&s.hello) + s.hello_sent,
                         sizeof(Hello) - s.hello_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r > 0) {
        s.hello_sent += static_cast<size_t>(r);
      } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        break;
      } else {
        return finish(RemoteError(absl::StrCat("connect to ", state->peer.ToString(),
                                               ": sending the hello: ", strerror(errno))));
      }
    }
    if (s.hello_sent < sizeof(Hello)) all_done = false;
  }
  if (!all_done) {
    if (MonotonicNs() - state->start_ns > int64_t{options.timeout_ms} * 1000000) {
      return finish(RemoteError(absl::StrCat("connect to ", state->peer.ToString(), ": not connected after ",
                                             options.timeout_ms, " ms (TRIRACE_NET_TIMEOUT_MS)")));
    }
    return absl::OkStatus();
  }
  std::vector<UniqueFd> socks;
  for (ConnectState::Sock& s : state->socks) socks.push_back(std::move(s.fd));
  (void)finish(absl::OkStatus());
  lock.Release();
  *send_comm = new TcpSendComm(std::move(socks), options);
  return absl::OkStatus();
}

absl::Status TcpTransport::Accept(void* listen_comm, void** recv_comm,
                                  ncclNetDeviceHandle_v11_t**) {
  *recv_comm = nullptr;
  auto* lc = static_cast<ListenComm*>(listen_comm);
  CommOptions options = Options();
  int64_t now = MonotonicNs();
  int64_t timeout_ns = int64_t{options.timeout_ms} * 1000000;
  while (true) {
    ListenComm::Pending p;
    socklen_t len = sizeof(p.from.u);
    int fd = ::accept4(lc->fd.get(), &p.from.u.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) break;
      return SystemError("accept", errno);
    }
    p.fd.reset(fd);
    p.since_ns = now;
    lc->pending.push_back(std::move(p));
  }
  for (size_t i = 0; i < lc->pending.size();) {
    ListenComm::Pending& p = lc->pending[i];
    bool drop = false;
    ssize_t r = ::recv(p.fd.get(), reinterpret_cast<char*>(&p.hello) + p.got,
                       sizeof(Hello) - p.got, MSG_DONTWAIT);
    if (r > 0) {
      p.got += static_cast<size_t>(r);
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      TRIRACE_INFO(NET, "connection from %s closed before its hello", p.from.ToString());
      drop = true;
    } else if (now - p.since_ns > timeout_ns) {
      TRIRACE_WARN(NET, "connection from %s sent no hello within %d ms: closed",
                   p.from.ToString(), options.timeout_ms);
      drop = true;
    }
    if (!drop && p.got == sizeof(Hello)) {
      const Hello& h = p.hello;
      drop = true;
      if (h.magic != kHelloMagic || h.checksum != HelloChecksum(h)) {
        TRIRACE_WARN(NET, "rejected connection from %s: not a TriRace hello (magic 0x%x)",
                     p.from.ToString(), h.magic);
      } else if (h.version != kWireVersion) {
        TRIRACE_WARN(NET, "rejected connection from %s: wire version %d, expected %d",
                     p.from.ToString(), h.version, kWireVersion);
      } else if (h.token != lc->token || h.listener_id != lc->listener_id) {
        TRIRACE_WARN(NET, "rejected connection from %s: wrong job token or listener id",
                     p.from.ToString());
      } else if (h.nsocks < 1 || h.nsocks > kMaxDataSockets || h.socket_index > h.nsocks) {
        TRIRACE_WARN(NET, "rejected connection from %s: socket %d of %d (accepted: 1..%d sockets)",
                     p.from.ToString(), h.socket_index, h.nsocks, kMaxDataSockets);
      } else {
        ListenComm::Group& g = lc->groups[h.conn_id];
        if (g.socks.empty()) {
          g.socks.resize(h.nsocks + 1);
          g.since_ns = now;
        }
        if (g.socks.size() != static_cast<size_t>(h.nsocks) + 1 || g.socks[h.socket_index].valid()) {
          TRIRACE_WARN(NET, "rejected connection from %s: inconsistent socket %d of %d",
                       p.from.ToString(), h.socket_index, h.nsocks);
        } else {
          SocketOptions so{lc->traffic_class, options.timeout_ms, options.rto_min_us};
          absl::Status st = ConfigureDataSocket(p.fd.get(), so);
          if (!st.ok()) return st;
          g.socks[h.socket_index] = std::move(p.fd);
          g.have++;
        }
      }
    }
    if (drop) {
      lc->pending.erase(lc->pending.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  for (auto it = lc->groups.begin(); it != lc->groups.end();) {
    ListenComm::Group& g = it->second;
    if (g.have == static_cast<int>(g.socks.size())) {
      *recv_comm = new TcpRecvComm(std::move(g.socks), options);
      lc->groups.erase(it);
      return absl::OkStatus();
    }
    if (now - g.since_ns > timeout_ns) {
      TRIRACE_WARN(NET, "dropping a connection with %d of %d sockets after %d ms", g.have,
                   static_cast<int>(g.socks.size()), options.timeout_ms);
      it = lc->groups.erase(it);
    } else {
      ++it;
    }
  }
  return absl::OkStatus();
}

absl::Status TcpTransport::RegMr(void*, void*, size_t, int type, void** mhandle) {
  if (type != NCCL_PTR_HOST) {
    return absl::InvalidArgumentError(absl::StrCat(
        "regMr: type ", type, " is not supported; the TCP transport moves host memory only "
        "(NCCL_PTR_HOST = 1)"));
  }
  static int host_region;
  *mhandle = &host_region;
  return absl::OkStatus();
}

absl::Status TcpTransport::RegMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) {
  return absl::FailedPreconditionError(
      "regMrDmaBuf: DMA-BUF is not supported (ptrSupport is NCCL_PTR_HOST)");
}

absl::Status TcpTransport::DeregMr(void*, void*) { return absl::OkStatus(); }

absl::Status TcpTransport::Isend(void* send_comm, void* data, size_t size, int tag, void*, void*,
                                 void** request) {
  return static_cast<TcpSendComm*>(send_comm)->Isend(data, size, tag, request);
}

absl::Status TcpTransport::SetSendClass(void* send_comm, int tos, int priority) {
  return static_cast<TcpSendComm*>(send_comm)->SetTosAndPriority(tos, priority);
}

absl::Status TcpTransport::SetRecvClass(void* recv_comm, int tos, int priority) {
  return static_cast<TcpRecvComm*>(recv_comm)->SetTosAndPriority(tos, priority);
}

absl::Status TcpTransport::Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                                 void**, void**, void** request) {
  if (n > kMaxRecvs) {
    return absl::InvalidArgumentError(
        absl::StrCat("irecv: n=", n, " exceeds maxRecvs (", kMaxRecvs, ")"));
  }
  return static_cast<TcpRecvComm*>(recv_comm)->Irecv(n, data, sizes, tags, request);
}

absl::Status TcpTransport::Iflush(void* recv_comm, int, void**, int*, void**, void** request) {
  // Host memory is coherent once recv() returned: nothing to flush.
  return static_cast<TcpRecvComm*>(recv_comm)->NewFlushRequest(request);
}

absl::Status TcpTransport::Test(void* request, int* done, int* sizes) {
  auto* req = static_cast<TcpRequest*>(request);
  return req->comm->Test(req, done, sizes);
}

absl::Status TcpTransport::CloseSend(void* send_comm) {
  auto* comm = static_cast<TcpSendComm*>(send_comm);
  comm->FinishSending();
  delete comm;
  return absl::OkStatus();
}

absl::Status TcpTransport::CloseRecv(void* recv_comm) {
  delete static_cast<TcpRecvComm*>(recv_comm);
  return absl::OkStatus();
}

absl::Status TcpTransport::CloseListen(void* listen_comm) {
  delete static_cast<ListenComm*>(listen_comm);
  return absl::OkStatus();
}

absl::Status TcpTransport::GetDeviceMr(void*, void*, void** dptr_mhandle) {
  *dptr_mhandle = nullptr;
  return absl::OkStatus();
}

absl::Status TcpTransport::IrecvConsumed(void*, int, void*) { return absl::OkStatus(); }

}  // namespace trirace::net::tcp
