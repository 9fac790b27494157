#include "soak_rank.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "nccl.h"
#include "nccl_adapter/unique_id_text.h"
#include "soak_probe.h"
#include "trirace/trirace.h"

namespace trirace::soak {
namespace {

constexpr int kMaxCount = 256;
constexpr int64_t kIterationOps = 50;

// The NCCL entry points as the dynamic linker binds them (the shim's, as it
// is preloaded), and hostccl's stream calls from the library itself.
struct Api {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) init_rank;
  decltype(&ncclCommDestroy) destroy;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  ncclResult_t (*stream_create)(cudaStream_t*);
  ncclResult_t (*stream_destroy)(cudaStream_t);
  ncclResult_t (*stream_sync)(cudaStream_t);
};

template <typename Fn>
bool Bind(void* handle, const char* name, Fn* out) {
  void* p = dlsym(handle, name);
  if (p == nullptr) std::fprintf(stderr, "soak rank: %s not found\n", name);
  *out = reinterpret_cast<Fn>(p);
  return p != nullptr;
}

enum Kind { kAllReduce, kAllGather, kBroadcast, kSendRecv };
const char* const kKindNames[] = {"AllReduce", "AllGather", "Broadcast", "SendRecv"};

// The value rank `r` contributes at element `i` of op `op`: small positive
// integers, exact in every type used, sums included.
int64_t Value(int r, int64_t op, int64_t i) { return (op * 131 + i * 7 + r * 1009) % 1000 + 1; }

size_t TypeSize(ncclDataType_t t) { return t == ncclInt32 || t == ncclFloat32 ? 4 : 8; }

void Put(void* buf, ncclDataType_t t, size_t i, int64_t v) {
  switch (t) {
    case ncclInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case ncclFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case ncclInt64: static_cast<int64_t*>(buf)[i] = v; break;
    default: static_cast<double*>(buf)[i] = static_cast<double>(v); break;
  }
}

double Get(const void* buf, ncclDataType_t t, size_t i) {
  switch (t) {
    case ncclInt32: return static_cast<const int32_t*>(buf)[i];
    case ncclFloat32: return static_cast<const float*>(buf)[i];
    case ncclInt64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    default: return static_cast<const double*>(buf)[i];
  }
}

struct Comm {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int64_t index = 0;
};

class Rank {
 public:
  Rank(const Options& o, const Api& api)
      : o_(o), api_(api), rng_(o.seed), shm_(o.job), trace_(o.log), start_(std::chrono::steady_clock::now()) {
    const size_t bytes = static_cast<size_t>(kMaxCount) * 8 * static_cast<size_t>(o.nranks);
    send_.assign(bytes, 0);
    recv_.assign(bytes, 0);
    result_.rank = o.rank;
  }

  int Run() {
    Print(Measure(0));
    const int64_t per_comm = o_.ops_per_comm(), per_wave = o_.ops_per_wave();
    bool ok = true;
    for (int wave = 0; wave < o_.samples && ok; ++wave) {
      trirace_tag_t stage = TRIRACE_TAG_INIT;
      stage.stage = wave % 4;
      Annotation(trirace_push_tag(&stage), "push the wave's tag");
      for (int64_t op = wave * per_wave; op < (wave + 1) * per_wave && ok; ++op) {
        if (op % per_comm == 0) ok = CreateComm() && (comms_.size() <= static_cast<size_t>(o_.alive) || DestroyOldest());
        if (!ok) break;
        if (op % kIterationOps == 0) BeginIteration(op / kIterationOps);
        ok = RunOp(op);
        if (op % kIterationOps == kIterationOps - 1) EndIteration();
        result_.ops = op + 1;
        Progress();
      }
      EndIteration();
      Annotation(trirace_pop_tag(), "pop the wave's tag");
      if (!ok) break;
      Sample s = Measure(result_.ops);
      while (!comms_.empty() && ok) ok = DestroyOldest();
      const TraceSummary t = trace_.Next();
      s.trace_records = t.records;
      s.trace_dropped = t.dropped;
      s.trace_waiting = t.waiting;
      s.trace_high = t.high;
      s.trace_capacity = t.capacity;
      Print(s);
    }
    std::printf("%s\n", FormatResult(result_).c_str());
    std::fflush(stdout);
    return ok && result_.wrong_values == 0 && result_.annotation_errors == 0 ? 0 : 1;
  }

 private:
  void Print(const Sample& s) {
    std::printf("%s\n", FormatSample(s).c_str());
    std::fflush(stdout);
    last_print_ = std::chrono::steady_clock::now();
  }

  // A line now and then, so the launcher knows this rank is alive between samples.
  void Progress() {
    if (result_.ops % 100 != 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print_ < std::chrono::seconds(2)) return;
    std::printf("progress rank=%d ops=%" PRId64 "\n", o_.rank, result_.ops);
    std::fflush(stdout);
    last_print_ = now;
  }

  Sample Measure(int64_t ops) const {
    Sample s;
    s.rank = o_.rank;
    s.ops = ops;
    s.comms_created = created_;
    s.comms_alive = static_cast<int64_t>(comms_.size());
    s.rss_kb = RssKb();
    s.fds = OpenFds();
    s.threads = ThreadCount();
    s.shm_objects = shm_.Count();
    s.shm_maps = MappedShmFiles();
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return s;
  }

  bool Fail(const std::string& what, ncclResult_t r) {
    ++result_.failed_calls;
    if (result_.first_problem.empty()) result_.first_problem = what + " returned " + std::to_string(r);
    std::fprintf(stderr, "soak rank %d: %s returned %d\n", o_.rank, what.c_str(), static_cast<int>(r));
    return false;
  }

  void Annotation(int rc, const char* what) {
    if (rc == TRIRACE_OK) return;
    if (result_.annotation_errors++ == 0 && result_.first_problem.empty()) {
      result_.first_problem = std::string("annotation: ") + what + " returned " + std::to_string(rc);
    }
  }

  void BeginIteration(int64_t iteration) {
    Annotation(trirace_iteration_begin(iteration), "iteration begin");
    ++result_.trace_caused;
    open_iteration_ = iteration;
  }
  void EndIteration() {
    if (open_iteration_ < 0) return;
    Annotation(trirace_iteration_end(open_iteration_), "iteration end");
    ++result_.trace_caused;
    open_iteration_ = -1;
  }

  // The next comm's id: made here on rank 0 and sent to the others, read from rank 0's pipe elsewhere.
  bool ExchangeId(ncclUniqueId* id) {
    if (o_.rank == 0) {
      const ncclResult_t r = api_.get_unique_id(id);
      if (r != ncclSuccess) return Fail("ncclGetUniqueId", r);
      const std::string line = UniqueIdToHex(*id) + "\n";
      for (int fd : o_.uid_fds) {
        if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
          result_.first_problem = "cannot send the comm id to a rank";
          return false;
        }
      }
      return true;
    }
    std::string line;
    char c = 0;
    while (read(o_.uid_fds[0], &c, 1) == 1 && c != '\n') line += c;
    if (c != '\n' || !UniqueIdFromHex(line, id)) {
      result_.first_problem = "no comm id from rank 0 (it is gone?)";
      return false;
    }
    return true;
  }

  bool CreateComm() {
    ncclUniqueId id;
    if (!ExchangeId(&id)) return false;
    shm_.AddComm(id);
    Comm c;
    c.index = created_++;
    ncclResult_t r;
    if (c.index % 4 == 1) {
      // Declared for creation, as a framework that creates comms lazily does.
      CommRoleScope role(TRIRACE_ROLE_PIPELINE);
      r = api_.init_rank(&c.comm, o_.nranks, id, o_.rank);
    } else {
      r = api_.init_rank(&c.comm, o_.nranks, id, o_.rank);
    }
    if (r != ncclSuccess) return Fail("ncclCommInitRank of comm " + std::to_string(c.index), r);
    ++result_.trace_caused;
    if (c.index % 4 == 0) Annotation(trirace_set_comm_role(c.comm, TRIRACE_ROLE_DATA_PARALLEL), "set_comm_role");
    if (c.index % 4 == 2) Annotation(trirace_set_comm_role(c.comm, TRIRACE_ROLE_EXPERT), "set_comm_role");
    r = api_.stream_create(&c.stream);
    if (r != ncclSuccess) return Fail("hostcclStreamCreate", r);
    comms_.push_back(c);
    return true;
  }

  bool DestroyOldest() {
    Comm c = comms_.front();
    comms_.pop_front();
    ncclResult_t r = api_.destroy(c.comm);
    if (r != ncclSuccess) return Fail("ncclCommDestroy of comm " + std::to_string(c.index), r);
    ++result_.trace_caused;
    r = api_.stream_destroy(c.stream);
    if (r != ncclSuccess) return Fail("hostcclStreamDestroy", r);
    return true;
  }

  bool RunOp(int64_t op) {
    // Every draw happens on every rank, in the same order.
    const Comm& c = comms_[rng_() % comms_.size()];
    const uint64_t pick = rng_() % 100;
    const Kind kind = pick < 35 ? kAllReduce : pick < 55 ? kAllGather : pick < 75 ? kBroadcast : kSendRecv;
    static constexpr ncclDataType_t kTypes[] = {ncclInt32, ncclFloat32, ncclInt64, ncclFloat64};
    const ncclDataType_t type = kTypes[rng_() % 4];
    const size_t count = 1 + rng_() % kMaxCount;
    const int root = static_cast<int>(rng_() % static_cast<uint64_t>(o_.nranks));
    const ncclRedOp_t redop = rng_() % 4 == 0 ? ncclMax : ncclSum;
    const int n = o_.nranks, me = o_.rank, next = (me + 1) % n, prev = (me + n - 1) % n;

    for (size_t i = 0; i < count; ++i) Put(send_.data(), type, i, Value(me, op, static_cast<int64_t>(i)));
    const size_t out_count = kind == kAllGather ? count * static_cast<size_t>(n) : count;
    std::memset(recv_.data(), 0, out_count * TypeSize(type));  // no expected value is 0

    trirace_tag_t tag = TRIRACE_TAG_INIT;
    tag.layer = static_cast<int32_t>(op % 24);
    tag.micro_batch = static_cast<int32_t>((op / 24) % 4);
    tag.phase = kind == kAllReduce ? TRIRACE_PHASE_BACKWARD : TRIRACE_PHASE_FORWARD;
    Annotation(trirace_push_tag(&tag), "push_tag");
    ncclResult_t r = ncclSuccess;
    switch (kind) {
      case kAllReduce:
        r = api_.all_reduce(send_.data(), recv_.data(), count, type, redop, c.comm, c.stream);
        break;
      case kAllGather:
        r = api_.all_gather(send_.data(), recv_.data(), count, type, c.comm, c.stream);
        break;
      case kBroadcast:
        r = api_.broadcast(send_.data(), recv_.data(), count, type, root, c.comm, c.stream);
        break;
      case kSendRecv: {
        const ncclResult_t g = api_.group_start();
        const ncclResult_t s = api_.send(send_.data(), count, type, next, c.comm, c.stream);
        const ncclResult_t v = api_.recv(recv_.data(), count, type, prev, c.comm, c.stream);
        const ncclResult_t e = api_.group_end();
        r = g != ncclSuccess ? g : s != ncclSuccess ? s : v != ncclSuccess ? v : e;
        break;
      }
    }
    Annotation(trirace_pop_tag(), "pop_tag");
    result_.trace_caused += kind == kSendRecv ? 2 : 1;
    if (r != ncclSuccess) return Fail(std::string("nccl") + kKindNames[kind] + " at op " + std::to_string(op), r);
    r = api_.stream_sync(c.stream);
    if (r != ncclSuccess) return Fail("hostcclStreamSynchronize at op " + std::to_string(op), r);

    for (size_t j = 0; j < out_count; ++j) {
      const int64_t i = static_cast<int64_t>(j);
      int64_t want = 0;
      switch (kind) {
        case kAllReduce:
          for (int p = 0; p < n; ++p) {
            want = redop == ncclSum ? want + Value(p, op, i) : std::max(want, Value(p, op, i));
          }
          break;
        case kAllGather: {
          const int64_t per_rank = static_cast<int64_t>(count);
          want = Value(static_cast<int>(i / per_rank), op, i % per_rank);
          break;
        }
        case kBroadcast: want = Value(root, op, i); break;
        case kSendRecv: want = Value(prev, op, i); break;
      }
      ++result_.values_checked;
      const double got = Get(recv_.data(), type, j);
      if (got == static_cast<double>(want)) continue;
      if (result_.wrong_values++ == 0) {
        char text[200];
        std::snprintf(text, sizeof(text), "op %" PRId64 " %s comm %" PRId64 " element %zu: got %.17g, want %" PRId64,
                      op, kKindNames[kind], c.index, j, got, want);
        std::fprintf(stderr, "soak rank %d: wrong value: %s\n", me, text);
        if (result_.first_problem.empty()) result_.first_problem = text;
      }
    }
    return true;
  }

  const Options& o_;
  const Api& api_;
  std::mt19937_64 rng_;
  ShmNames shm_;
  TraceSummaryReader trace_;
  const std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_ = start_;
  std::deque<Comm> comms_;
  int64_t created_ = 0;
  int64_t open_iteration_ = -1;
  std::vector<unsigned char> send_, recv_;
  Result result_;
};

}  // namespace

int RunRank(const Options& o) {
  void* h = dlopen(o.nccl.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    std::fprintf(stderr, "soak rank %d: cannot load %s: %s\n", o.rank, o.nccl.c_str(), dlerror());
    return 3;
  }
  Api api{};
  bool ok = Bind(RTLD_DEFAULT, "ncclGetUniqueId", &api.get_unique_id) &&
            Bind(RTLD_DEFAULT, "ncclCommInitRank", &api.init_rank) &&
            Bind(RTLD_DEFAULT, "ncclCommDestroy", &api.destroy) &&
            Bind(RTLD_DEFAULT, "ncclAllReduce", &api.all_reduce) &&
            Bind(RTLD_DEFAULT, "ncclAllGather", &api.all_gather) &&
            Bind(RTLD_DEFAULT, "ncclBroadcast", &api.broadcast) && Bind(RTLD_DEFAULT, "ncclSend", &api.send) &&
            Bind(RTLD_DEFAULT, "ncclRecv", &api.recv) && Bind(RTLD_DEFAULT, "ncclGroupStart", &api.group_start) &&
            Bind(RTLD_DEFAULT, "ncclGroupEnd", &api.group_end) &&
            Bind(h, "hostcclStreamCreate", &api.stream_create) &&
            Bind(h, "hostcclStreamDestroy", &api.stream_destroy) &&
            Bind(h, "hostcclStreamSynchronize", &api.stream_sync);
  if (!ok) return 3;
  if (trirace_api_version() == 0) {
    std::fprintf(stderr, "soak rank %d: libtrirace.so is not preloaded\n", o.rank);
    return 3;
  }
  Rank rank(o, api);
  return rank.Run();
}

}  // namespace trirace::soak
