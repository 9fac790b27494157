// The correctness sweep run by every rank of hostccl_test_rank: every
// collective x every supported datatype x every reduction operator x counts
// {0, 1, 7} x in-place/out-of-place, plus a representative set at
// 1 Mi + 3 elements (see LargeCases). Every rank checks its own outputs
// against values computed here from the known inputs of all ranks.
//
// Inputs are small integers, so sums, products (of -1, 1, 2), max and min
// are exact in every type and compared exactly; avg on floating types
// (premultiplied by 1/nranks, as NCCL does) is compared with a tolerance.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/hostccl/rank_util.h"

namespace hostccl_test {
namespace {

enum class F { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll, kGather, kScatter, kSendRecv };
const F kFuncs[] = {F::kAllReduce, F::kBroadcast, F::kReduce, F::kAllGather, F::kReduceScatter,
                    F::kAlltoAll, F::kGather, F::kScatter, F::kSendRecv};
const char* Name(F f) {
  const char* names[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                         "AlltoAll", "Gather", "Scatter", "SendRecv"};
  return names[static_cast<int>(f)];
}
bool Reduces(F f) { return f == F::kAllReduce || f == F::kReduce || f == F::kReduceScatter; }

const ncclDataType_t kTypes[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
                                 ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
const char* TypeName(ncclDataType_t t) {
  const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bf16"};
  return names[static_cast<int>(t)];
}

enum Op { kSum, kProd, kMax, kMin, kAvg, kPreMul, kNumOps };
const char* OpName(int op) {
  const char* names[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return names[op];
}
constexpr double kPreMulScalar = 3;

struct Case {
  F func;
  ncclDataType_t type;
  int op;  // kSum for non-reducing collectives
  size_t count;
  bool in_place;
  int root;
};

// Element i of rank q's input.
double Input(const Case& c, int q, size_t i) {
  uint64_t k = static_cast<uint64_t>(q) * 3 + i * 7;
  if (!Reduces(c.func)) {
    int64_t v = static_cast<int64_t>((static_cast<uint64_t>(q) * 31 + i * 7) % 11);
    return IsSigned(c.type) ? static_cast<double>(v - 5) : static_cast<double>(v);
  }
  if (c.op == kProd) {
    static const double s[] = {-1, 1, 2}, u[] = {1, 2, 3};
    return IsSigned(c.type) ? s[(q + i) % 3] : u[(q + i) % 3];
  }
  int64_t v = static_cast<int64_t>(k % 5);
  return IsSigned(c.type) ? static_cast<double>(v - 2) : static_cast<double>(v);
}

// The reduction of element i over all ranks' inputs.
double Reduced(const Case& c, int n, size_t i) {
  double acc = c.op == kProd ? 1 : (c.op == kMax ? -1e300 : (c.op == kMin ? 1e300 : 0));
  for (int q = 0; q < n; ++q) {
    double v = Input(c, q, i);
    switch (c.op) {
      case kProd: acc *= v; break;
      case kMax: acc = std::max(acc, v); break;
      case kMin: acc = std::min(acc, v); break;
      case kPreMul: acc += v * kPreMulScalar; break;
      default: acc += v;
    }
  }
  if (c.op == kAvg) {
    if (IsFloat(c.type)) return acc / n;
    return static_cast<double>(static_cast<int64_t>(Wrap(c.type, acc)) / n);
  }
  return Wrap(c.type, acc);
}

double Tolerance(const Case& c) {
  if (c.op != kAvg || !IsFloat(c.type)) return 0;
  switch (c.type) {
    case ncclFloat16: return 0.05;
    case ncclBfloat16: return 0.3;
    case ncclFloat32: return 1e-4;
    default: return 1e-10;
  }
}

struct Buffers {
  std::vector<char> a, b;  // a: send (or the one in-place buffer), b: receive
  const void* send = nullptr;
  void* recv = nullptr;
  size_t recv_elems = 0;   // elements of the output this rank checks
};

void Fill(const Case& c, const RankContext& x, Buffers* bufs) {
  const int n = x.nranks, r = x.rank;
  const size_t m = c.count, ts = SizeOf(c.type), nm = static_cast<size_t>(n) * m;
  const bool root = r == c.root;
  size_t in_elems = m, out_elems = m;
  size_t in_offset = 0;  // where this rank's input sits in the in-place buffer
  switch (c.func) {
    case F::kAllGather: out_elems = nm; in_offset = r * m; break;
    case F::kReduceScatter: in_elems = nm; break;
    case F::kAlltoAll: in_elems = out_elems = nm; break;
    case F::kGather: out_elems = root ? nm : 0; in_offset = root ? r * m : 0; break;
    case F::kScatter: in_elems = root ? nm : 0; break;
    case F::kReduce: out_elems = root ? m : 0; break;
    case F::kBroadcast: in_elems = root ? m : 0; break;
    default: break;
  }
  bufs->recv_elems = out_elems;
  size_t one = std::max(in_elems + in_offset, out_elems);
  if (c.in_place) {
    if (c.func == F::kGather && !root) one = m;
    if (c.func == F::kScatter && !root) one = m;
    bufs->a.assign(std::max<size_t>(one, 1) * ts, 0x5b);
    for (size_t i = 0; i < in_elems; ++i) Store(c.type, bufs->a.data(), in_offset + i, Input(c, r, i));
    char* base = bufs->a.data();
    bufs->send = base + in_offset * ts;
    bufs->recv = base;
    if (c.func == F::kReduceScatter) bufs->recv = base + r * m * ts;
    if (c.func == F::kScatter && root) bufs->recv = base + r * m * ts;
    return;
  }
  bufs->a.assign(std::max<size_t>(in_elems, 1) * ts, 0x5b);
  bufs->b.assign(std::max<size_t>(out_elems, 1) * ts, 0x5b);
  for (size_t i = 0; i < in_elems; ++i) Store(c.type, bufs->a.data(), i, Input(c, r, i));
  bufs->send = bufs->a.data();
  bufs->recv = bufs->b.data();
}

double Expected(const Case& c, const RankContext& x, size_t k) {
  const int n = x.nranks, r = x.rank;
  const size_t m = c.count;
  switch (c.func) {
    case F::kAllReduce:
    case F::kReduce: return Reduced(c, n, k);
    case F::kReduceScatter: return Reduced(c, n, r * m + k);
    case F::kBroadcast: return Input(c, c.root, k);
    case F::kAllGather:
    case F::kGather: return Input(c, static_cast<int>(k / m), k % m);
    case F::kAlltoAll: return Input(c, static_cast<int>(k / m), r * m + k % m);
    case F::kScatter: return Input(c, c.root, r * m + k);
    case F::kSendRecv: return Input(c, (r + n - 1) % n, k);
  }
  return 0;
}

ncclResult_t Issue(const Case& c, const RankContext& x, const Buffers& b, ncclRedOp_t op, ncclComm_t comm,
                   cudaStream_t s) {
  switch (c.func) {
    case F::kAllReduce: return ncclAllReduce(b.send, b.recv, c.count, c.type, op, comm, s);
    case F::kBroadcast:
      if (c.in_place) return ncclBcast(b.recv, c.count, c.type, c.root, comm, s);
      return ncclBroadcast(b.send, b.recv, c.count, c.type, c.root, comm, s);
    case F::kReduce: return ncclReduce(b.send, b.recv, c.count, c.type, op, c.root, comm, s);
    case F::kAllGather: return ncclAllGather(b.send, b.recv, c.count, c.type, comm, s);
    case F::kReduceScatter: return ncclReduceScatter(b.send, b.recv, c.count, c.type, op, comm, s);
    case F::kAlltoAll: return ncclAlltoAll(b.send, b.recv, c.count, c.type, comm, s);
    case F::kGather: return ncclGather(b.send, b.recv, c.count, c.type, c.root, comm, s);
    case F::kScatter: return ncclScatter(b.send, b.recv, c.count, c.type, c.root, comm, s);
    case F::kSendRecv: {
      int n = x.nranks;
      ncclGroupStart();
      ncclSend(b.send, c.count, c.type, (x.rank + 1) % n, comm, s);
      ncclRecv(b.recv, c.count, c.type, (x.rank + n - 1) % n, comm, s);
      return ncclGroupEnd();
    }
  }
  return ncclInternalError;
}

std::string CaseName(const Case& c, int n) {
  return std::string(Name(c.func)) + "/" + TypeName(c.type) + "/" + (Reduces(c.func) ? OpName(c.op) : "-") +
         "/n" + std::to_string(n) + "/count" + std::to_string(c.count) + (c.in_place ? "/inplace" : "/outofplace") +
         "/root" + std::to_string(c.root);
}

// Runs one case; false when the communicator is no longer usable.
bool RunCase(const Case& c, const RankContext& x, ncclComm_t comm, cudaStream_t s, Report* report) {
  const std::string name = CaseName(c, x.nranks);
  Buffers b;
  Fill(c, x, &b);
  ncclRedOp_t op = static_cast<ncclRedOp_t>(c.op);
  std::vector<char> scalar(8);
  if (c.op == kPreMul) {
    Store(c.type, scalar.data(), 0, kPreMulScalar);
    if (ncclRedOpCreatePreMulSum(&op, scalar.data(), c.type, ncclScalarHostImmediate, comm) != ncclSuccess) {
      report->Fail(name, "ncclRedOpCreatePreMulSum failed");
      return false;
    }
  }
  ncclResult_t rc = Issue(c, x, b, op, comm, s);
  ncclResult_t sync = hostcclStreamSynchronize(s);
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  if (c.op == kPreMul) ncclRedOpDestroy(op, comm);
  if (rc != ncclSuccess || sync != ncclSuccess || async != ncclSuccess) {
    report->Fail(name, std::string("call: ") + ncclGetErrorString(rc) + ", async: " + ncclGetErrorString(async));
    return async == ncclSuccess;
  }
  const double tol = Tolerance(c);
  for (size_t k = 0; k < b.recv_elems; ++k) {
    double got = Load(c.type, b.recv, k), want = Expected(c, x, k);
    if (std::fabs(got - want) > tol) {
      report->Fail(name, "element " + std::to_string(k) + " is " + std::to_string(got) + ", expected " +
                             std::to_string(want));
      return true;
    }
  }
  report->Pass(name);
  return true;
}

std::vector<Case> SmallCases(int n) {
  std::vector<Case> cases;
  int id = 0;
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}}) {
    for (F f : kFuncs) {
      for (ncclDataType_t t : kTypes) {
        for (int op = 0; op < (Reduces(f) ? kNumOps : 1); ++op) {
          for (bool in_place : {false, true}) {
            if (in_place && f == F::kSendRecv) continue;
            cases.push_back(Case{f, t, op, count, in_place, id++ % n});
          }
        }
      }
    }
  }
  return cases;
}

// 1 Mi + 3 elements on a representative subset: every collective (float,
// sum) both ways; AllReduce in every datatype (sum) both ways and with every
// operator (float and int32); a few other type/operator pairs.
std::vector<Case> LargeCases(int n) {
  const size_t big = (size_t{1} << 20) + 3;
  std::vector<Case> cases;
  int id = 0;
  for (F f : kFuncs) {
    for (bool in_place : {false, true}) {
      if (in_place && f == F::kSendRecv) continue;
      cases.push_back(Case{f, ncclFloat32, kSum, big, in_place, id++ % n});
    }
  }
  for (ncclDataType_t t : kTypes) {
    for (bool in_place : {false, true}) cases.push_back(Case{F::kAllReduce, t, kSum, big, in_place, 0});
  }
  for (int op = 0; op < kNumOps; ++op) {
    cases.push_back(Case{F::kAllReduce, ncclFloat32, op, big, false, 0});
    cases.push_back(Case{F::kAllReduce, ncclInt32, op, big, true, 0});
  }
  cases.push_back(Case{F::kReduceScatter, ncclBfloat16, kAvg, big, false, 0});
  cases.push_back(Case{F::kReduce, ncclFloat16, kProd, big, true, n - 1});
  cases.push_back(Case{F::kAllGather, ncclUint8, kSum, big, false, 0});
  cases.push_back(Case{F::kAlltoAll, ncclFloat64, kSum, big, true, 0});
  return cases;
}

}  // namespace

int RunSweep(const RankContext& x) {
  ncclComm_t comm;
  HT_CHECK_NCCL(ncclCommInitRank(&comm, x.nranks, x.id, x.rank));
  cudaStream_t s;
  HT_CHECK_NCCL(hostcclStreamCreate(&s));
  Report report;
  std::vector<Case> cases = SmallCases(x.nranks);
  if (x.arg != "small") {
    for (const Case& c : LargeCases(x.nranks)) cases.push_back(c);
  }
  for (const Case& c : cases) {
    if (!RunCase(c, x, comm, s, &report)) break;
  }
  std::printf("rank %d of %d: %d cases passed, %d failed\n", x.rank, x.nranks, report.passed(), report.failed());
  HT_CHECK_NCCL(hostcclStreamDestroy(s));
  HT_CHECK_NCCL(ncclCommDestroy(comm));
  return report.failed() == 0 ? 0 : 1;
}

}  // namespace hostccl_test
