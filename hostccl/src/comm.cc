#include "hostccl/src/comm.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/params.h"
#include "nccl_adapter/nccl_result.h"
#include "hostccl/src/bootstrap.h"
#include "hostccl/src/net_plugin.h"
#include "hostccl/src/net_peer_links.h"
#include "hostccl/src/shm_peer_links.h"

namespace trirace::hostccl {
namespace {

constexpr size_t kReadyTokenBytes = 8;  // MoverEnv::ready_tokens, kept 8-aligned

// The handshake needs both ends of every link: a rank waiting for a token
// its peer never sends would hang. So it is on only where every rank has
// it on; rank 0 says so once when the ranks disagree.
bool ReceiverReadyOnEveryRank(const std::vector<HostIdentity>& ids, int rank) {
  int on = 0;
  for (const HostIdentity& id : ids) on += id.receiver_ready ? 1 : 0;
  if (on != 0 && on != static_cast<int>(ids.size()) && rank == 0) {
    TRIRACE_WARN(INIT, "hostccl: TRIRACE_HOSTCCL_RECEIVER_READY is on at %d of %d ranks; this "
                 "communicator's collectives send eagerly (set it alike on every rank)",
                 on, static_cast<int>(ids.size()));
  }
  return on == static_cast<int>(ids.size());
}

}  // namespace

CommCore::CommCore(int nranks, int rank, CommConfig config)
    : nranks_(nranks), rank_(rank), config_(std::move(config)) {}

CommCore::~CommCore() {
  if (executor_.joinable()) Abort();
  if (links_ != nullptr) links_->Close();
}

absl::Status CommCore::Init(const ncclUniqueId& id) {
  absl::Status s = [&]() -> absl::Status {
    std::unique_ptr<NetPeerLinks> net;
    std::string payload;
    if (nranks_ > 1) {
      absl::StatusOr<NetPlugin*> plugin = NetPlugin::Get();
      if (!plugin.ok()) return plugin.status();
      absl::StatusOr<std::unique_ptr<NetPeerLinks>> t =
          NetPeerLinks::Create(*plugin, rank_, nranks_, UniqueIdHash(id), config_.traffic_class);
      if (!t.ok()) return t.status();
      net = std::move(*t);
      payload = net->ListenHandles() + LocalHostIdentity().Encode();
    }
    absl::StatusOr<std::vector<std::string>> all = Rendezvous(id, rank_, nranks_, payload, &abort_);
    if (!all.ok()) return all.status();
    if (net != nullptr) {
      int64_t deadline = MonotonicNs() + ParamInt(ParamId::kHostcclBootstrapTimeoutMs) * 1000000;
      TRIRACE_RETURN_IF_ERROR(net->ConnectAll(*all, deadline, abort_));
      std::vector<HostIdentity> ids;
      for (const std::string& blob : *all) {
        absl::StatusOr<HostIdentity> host = HostIdentity::Decode(blob);
        if (!host.ok()) return host.status();
        ids.push_back(*host);
      }
      // Peers on this host get shared memory; the net plugin carries the rest.
      absl::StatusOr<std::unique_ptr<ShmPeerLinks>> links =
          ShmPeerLinks::Create(std::move(net), rank_, nranks_, UniqueIdHash(id), ids, deadline, abort_);
      if (!links.ok()) return links.status();
      links_ = std::move(*links);
      size_t slot = std::min<size_t>(ParamInt(ParamId::kHostcclSliceBytes), links_->MaxMessageBytes());
      slot &= ~size_t{7};
      int depth = std::max<int>(2, static_cast<int>(ParamInt(ParamId::kHostcclPipelineDepth)));
      const size_t pools = 2 * static_cast<size_t>(depth) * slot;  // receive, then send slots
      staging_.assign(pools + kReadyTokenBytes, '\0');
      absl::StatusOr<std::unique_ptr<MemRegion>> region = links_->Register(staging_.data(), staging_.size());
      if (!region.ok()) return region.status();
      staging_region_ = std::move(*region);
      env_.depth = depth;
      env_.slot_bytes = slot;
      env_.staging = staging_.data();
      env_.staging_region = staging_region_.get();
      env_.receiver_ready = ReceiverReadyOnEveryRank(ids, rank_);
      env_.ready_tokens = staging_.data() + pools;
    } else {
      env_.slot_bytes = static_cast<size_t>(ParamInt(ParamId::kHostcclSliceBytes));
    }
    env_.links = links_.get();
    env_.abort = &abort_;
    env_.rank = rank_;
    executor_ = std::thread([this] { RunExecutor(); });
    return absl::OkStatus();
  }();
  if (s.ok()) {
    TRIRACE_INFO(INIT, "hostccl: rank %d of %d ready", rank_, nranks_);
    SetAsyncState(ncclSuccess);
  } else {
    RecordError(s);
  }
  return s;
}

std::string CommCore::AsyncMessage() const {
  absl::MutexLock lock(&mu_);
  return error_message_;
}

void CommCore::RecordError(const absl::Status& s) {
  {
    absl::MutexLock lock(&mu_);
    if (!error_message_.empty()) return;
    error_message_ = std::string(s.message());
  }
  ncclResult_t expected = AsyncState();
  if (expected == ncclSuccess || expected == ncclInProgress) {
    state_.compare_exchange_strong(expected, ToNcclResult(s));
  }
}

void CommCore::Submit(std::shared_ptr<Launch> launch) {
  absl::MutexLock lock(&mu_);
  ++submitted_;
  queue_.push_back(std::move(launch));
}

void CommCore::Arrive(Launch& launch) {
  absl::MutexLock lock(&mu_);
  --launch.pending_streams;
}

bool CommCore::ArriveAndRun(const std::shared_ptr<Launch>& launch) {
  {
    // Claimed under the lock that Arrive releases, so the executor's wait
    // never sees this launch ready and does not wake for it.
    absl::MutexLock lock(&mu_);
    --launch->pending_streams;
    if (launch->pending_streams > 0 || running_ || abort_.load() || queue_.empty() || queue_.front() != launch) {
      return false;
    }
    queue_.pop_front();
    running_ = true;
  }
  Run(*launch);
  return true;
}

void CommCore::Flush() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return completed_ == submitted_; };
  mu_.Await(absl::Condition(&idle));
}

void CommCore::RunExecutor() {
  for (;;) {
    std::shared_ptr<Launch> launch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return abort_.load() || (!running_ && !queue_.empty() && queue_.front()->pending_streams <= 0) ||
               (stop_ && queue_.empty());
      };
      mu_.Await(absl::Condition(&ready));
      if (abort_.load() || queue_.empty()) return;
      launch = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    Run(*launch);
  }
}

void CommCore::Run(Launch& launch) {
  ncclResult_t result = AsyncState();
  if (result == ncclSuccess) {
    absl::Status s = Execute(launch);
    if (!s.ok()) {
      TRIRACE_WARN(NET, "hostccl: rank %d of %d%s%s: operation failed: %s", rank_, nranks_,
                   config_.name.empty() ? "" : " comm ", config_.name, s.message());
      RecordError(s);
      result = ToNcclResult(s);
    }
  }
  launch.result = result;
  last_launch_end_ns_ = launch.clock_end_ns.value_or(MonotonicNs());
  launch.core.reset();
  launch.done.Notify();
  absl::MutexLock lock(&mu_);
  ++completed_;
  running_ = false;
}

absl::Status CommCore::Execute(Launch& launch) {
  // Only sends and receives keep the device clock: a collective's reduction
  // and copies take real time here.
  const bool clocked = launch.colls.empty() && launch.clock_start_ns.has_value() && links_ != nullptr;
  if (clocked) launch.clock_start_ns = std::max(*launch.clock_start_ns, last_launch_end_ns_);
  if (links_ != nullptr) links_->StartClock(clocked ? launch.clock_start_ns : std::nullopt);
  for (const OpDesc& op : launch.colls) TRIRACE_RETURN_IF_ERROR(RunCollective(op, nranks_, env_));
  if (launch.p2p.empty()) return absl::OkStatus();
  std::vector<P2pTransfer> xs;
  for (const OpDesc& op : launch.p2p) xs.push_back(TransferOf(op));
  env_.regions.clear();
  if (links_ != nullptr) links_->SetTransferFunc(NcclFunc::kSend);  // send/recv
  absl::Status s = RunP2p(xs, env_);
  env_.regions.clear();
  if (clocked && s.ok()) launch.clock_end_ns = links_->ClockEnd();
  return s;
}

absl::StatusOr<std::vector<std::string>> CommCore::AllGatherBytes(const std::string& mine) {
  std::string all(mine.size() * nranks_, '\0');
  auto launch = std::make_shared<Launch>();
  launch->core = shared_from_this();
  OpDesc op;
  op.func = NcclFunc::kAllGather;
  op.sendbuff = mine.data();
  op.recvbuff = all.data();
  op.count = mine.size();
  op.type = ncclUint8;
  launch->colls.push_back(op);
  Submit(launch);
  launch->done.WaitForNotification();
  if (launch->result != ncclSuccess) {
    std::string why = AsyncMessage();
    return absl::UnavailableError(absl::StrFormat("exchange over the parent communicator failed: %s",
                                                  why.empty() ? "communicator in error state" : why));
  }
  std::vector<std::string> out;
  for (int p = 0; p < nranks_; ++p) out.push_back(all.substr(p * mine.size(), mine.size()));
  return out;
}

void CommCore::StopExecutor() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (executor_.joinable()) executor_.join();
}

void CommCore::Shutdown() {
  Flush();
  StopExecutor();
  if (links_ != nullptr) links_->Close();
}

void CommCore::Abort() {
  abort_.store(true, std::memory_order_release);
  StopExecutor();
  std::deque<std::shared_ptr<Launch>> failed;
  {
    absl::MutexLock lock(&mu_);
    // A launch running on a stream's thread stops at its next abort check;
    // the links it uses are closed only after that.
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !running_; };
    mu_.Await(absl::Condition(&idle));
    failed.swap(queue_);
    completed_ += failed.size();
  }
  for (auto& launch : failed) {
    launch->result = ncclRemoteError;
    launch->core.reset();
    launch->done.Notify();
  }
  if (links_ != nullptr) links_->Close();
}

ncclRedOp_t CommCore::AddPreMulSum(ncclDataType_t type, const void* scalar, bool device_residence) {
  UserOp op{type, device_residence, scalar, PreMulSumReduction(type, scalar)};
  absl::MutexLock lock(&mu_);
  int id = next_user_op_++;
  user_ops_[id] = op;
  return static_cast<ncclRedOp_t>(id);
}

absl::Status CommCore::RemoveRedOp(ncclRedOp_t op) {
  if (static_cast<int>(op) >= 0 && static_cast<int>(op) < ncclNumOps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "op=%d is a built-in operator; only operators from ncclRedOpCreatePreMulSum can be destroyed",
        static_cast<int>(op)));
  }
  absl::MutexLock lock(&mu_);
  if (user_ops_.erase(static_cast<int>(op)) == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "op=%d was not created by ncclRedOpCreatePreMulSum on this communicator (or was destroyed)",
        static_cast<int>(op)));
  }
  return absl::OkStatus();
}

absl::Status CommCore::ResolveRedOp(ncclRedOp_t op, ncclDataType_t type, OpDesc* desc) const {
  int id = static_cast<int>(op);
  if (id >= 0 && id < ncclNumOps) {
    desc->reduction = BuiltinReduction(op, type, nranks_);
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  auto it = user_ops_.find(id);
  if (it == user_ops_.end()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "op=%d is not a valid reduction operator: use ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg "
        "or one created by ncclRedOpCreatePreMulSum on this communicator", id));
  }
  if (it->second.type != type) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "op=%d was created for datatype %s but is used with %s", id, TypeName(it->second.type),
        TypeName(type)));
  }
  desc->reduction = it->second.reduction;
  if (it->second.device_residence) desc->device_scalar = it->second.scalar_ptr;
  return absl::OkStatus();
}

}  // namespace trirace::hostccl
