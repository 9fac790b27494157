// The TCP transport: the host's network interfaces as NCCL net devices,
// comms made of one control socket plus TRIRACE_NET_NSOCKS data sockets.
//
// Connection set-up (all non-blocking, as NCCL requires):
//  * Listen binds an ephemeral port on the device's address and writes a
//    ConnectHandle (magic, version, address, listener id, job token,
//    checksum) into NCCL's handle.
//  * Connect validates the handle (garbage is rejected before any socket is
//    made), then opens the sockets and sends a Hello on each; it returns a
//    null comm until every socket is connected. Its progress is kept in the
//    handle's `stage` field, as NCCL passes the same handle again.
//  * Accept takes pending connections, reads their Hellos, closes and logs
//    any with a wrong magic, version, checksum, listener id or token, and
//    returns a comm once all sockets of one connector have arrived.
// The job token is TRIRACE_NET_TOKEN (hashed) when set, on both ends; else
// a random token per listener that only holders of the handle know.
//
// Thread safety: thread-safe; calls on one comm must not be concurrent.
// mu_ guards connecting_ (the half-open connections that Connect resumes
// from their handles); Connect holds it while it advances one of them. The
// device tables (interfaces_, vdevices_) and job_token_ take no lock: Init
// and MakeVDevice fill them while NCCL initialises the plugin, before any
// comm exists, and they are only read afterwards.
#ifndef TRIRACE_PLUGIN_TRANSPORT_TCP_TCP_TRANSPORT_H_
#define TRIRACE_PLUGIN_TRANSPORT_TCP_TCP_TRANSPORT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "plugin/core/transport.h"
#include "plugin/transport/tcp/interfaces.h"
#include "plugin/transport/tcp/tcp_comm.h"

namespace trirace::net::tcp {

class TcpTransport : public Transport {
 public:
  TcpTransport();
  ~TcpTransport() override;

  absl::Status Init(const InitArgs& args) override;
  int NumDevices() const override;
  absl::StatusOr<DeviceProps> Properties(int dev) const override;
  absl::Status MakeVDevice(int* dev, const ncclNetVDeviceProps_v11_t& props) override;

  absl::Status InitContext(uint64_t comm_id, const CommConfig& config, void** inner_ctx) override;
  absl::Status FinalizeContext(void* inner_ctx) override;
  absl::Status SetNetAttr(void* inner_ctx, const ncclNetAttr_v11_t& attr) override;

  absl::Status Listen(void* inner_ctx, int dev, void* handle, void** listen_comm) override;
  absl::Status Connect(void* inner_ctx, int dev, const CommConfig& config, void* handle,
                       void** send_comm, ncclNetDeviceHandle_v11_t** dev_comm) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Accept(void* listen_comm, void** recv_comm,
                      ncclNetDeviceHandle_v11_t** dev_comm) override;

  absl::Status RegMr(void* comm, void* data, size_t size, int type, void** mhandle) override;
  absl::Status RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                           void** mhandle) override;
  absl::Status DeregMr(void* comm, void* mhandle) override;

  absl::Status SetSendClass(void* send_comm, int tos, int priority) override;
  absl::Status SetRecvClass(void* recv_comm, int tos, int priority) override;
  absl::Status Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                     void* phandle, void** request) override;
  absl::Status Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                     void** mhandles, void** phandles, void** request) override;
  absl::Status Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                      void** request) override;
  absl::Status Test(void* request, int* done, int* sizes) override;

  absl::Status CloseSend(void* send_comm) override;
  absl::Status CloseRecv(void* recv_comm) override;
  absl::Status CloseListen(void* listen_comm) override;

  absl::Status GetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) override;
  absl::Status IrecvConsumed(void* recv_comm, int n, void* request) override;

 private:
  struct ConnectState;
  struct ListenComm;
  const Interface& DeviceInterface(int dev) const;
  CommOptions Options() const;

  std::vector<Interface> interfaces_;
  std::vector<std::vector<int>> vdevices_;  // virtual NIC -> member devices
  std::optional<uint64_t> job_token_;       // from TRIRACE_NET_TOKEN
  absl::Mutex mu_;
  // Keyed by the handle's stage (the ConnectState's address).
  std::map<uint64_t, std::unique_ptr<ConnectState>> connecting_ ABSL_GUARDED_BY(mu_);
};

// The job token for a TRIRACE_NET_TOKEN text (empty: none).
std::optional<uint64_t> TokenFromText(absl::string_view text);

}  // namespace trirace::net::tcp

#endif  // TRIRACE_PLUGIN_TRANSPORT_TCP_TCP_TRANSPORT_H_
