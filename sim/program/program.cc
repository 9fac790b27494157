#include "sim/program/program.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace trirace::sim {

int ProgramBuilder::Add(StreamOp op) {
  program_.ops.push_back(op);
  const int id = int(program_.ops.size()) - 1;
  program_.host.push_back({HostKind::kEnqueue, id, 0});
  return id;
}

int ProgramBuilder::Compute(int stream, int64_t ns) {
  StreamOp op;
  op.kind = OpKind::kCompute;
  op.stream = stream;
  op.duration_ns = std::max<int64_t>(ns, 0);
  return Add(op);
}

int ProgramBuilder::Record(int stream, int64_t event_key) {
  StreamOp op;
  op.kind = OpKind::kRecord;
  op.stream = stream;
  const int id = Add(op);
  records_[event_key] = id;
  return id;
}

int ProgramBuilder::LastRecord(int64_t event_key) const {
  auto it = records_.find(event_key);
  return it == records_.end() ? kNoOp : it->second;
}

int ProgramBuilder::Wait(int stream, int64_t event_key) {
  const int record = LastRecord(event_key);
  if (record == kNoOp) return kNoOp;  // never recorded: waiting on it is a no-op
  StreamOp op;
  op.kind = OpKind::kWait;
  op.stream = stream;
  op.wait_for = record;
  return Add(op);
}

int ProgramBuilder::Comm(int stream, std::vector<NcclCall> calls) {
  StreamOp op;
  op.kind = OpKind::kComm;
  op.stream = stream;
  op.first_call = int(program_.calls.size());
  op.call_count = int(calls.size());
  for (NcclCall& c : calls) program_.calls.push_back(std::move(c));
  return Add(op);
}

int ProgramBuilder::Stamp(int stream, int index) {
  StreamOp op;
  op.kind = OpKind::kStamp;
  op.stream = stream;
  op.stamp = index;
  return Add(op);
}

void ProgramBuilder::HostWait(int64_t event_key) { HostWaitOp(LastRecord(event_key)); }

void ProgramBuilder::HostWaitOp(int op) {
  if (op != kNoOp) program_.host.push_back({HostKind::kHostWait, op, 0});
}

void ProgramBuilder::IterationBegin(int64_t iteration) {
  program_.host.push_back({HostKind::kIterationBegin, kNoOp, iteration});
}

void ProgramBuilder::IterationEnd(int64_t iteration) {
  program_.host.push_back({HostKind::kIterationEnd, kNoOp, iteration});
}

void ProgramBuilder::HostSpend(int64_t ns) {
  if (ns > 0) program_.host.push_back({HostKind::kSpend, kNoOp, ns});
}

bool ValidateWorkload(const Workload& w, std::string* error) {
  const int n = int(w.ranks.size());
  if (n == 0) {
    *error = "the workload has no ranks";
    return false;
  }
  if (w.iterations < 1 || w.warmup < 0 || w.warmup >= w.iterations) {
    *error = absl::StrCat("the workload's iterations (", w.iterations, ") and warm-up (", w.warmup,
                          ") must satisfy 0 <= warm-up < iterations");
    return false;
  }
  std::vector<std::vector<int>> comm_rank(w.comms.size());  // [comm][global rank] -> comm rank or -1
  for (size_t c = 0; c < w.comms.size(); ++c) {
    comm_rank[c].assign(size_t(n), -1);
    if (w.comms[c].ranks.empty()) {
      *error = absl::StrCat("comm ", w.comms[c].name, " has no ranks");
      return false;
    }
    for (size_t i = 0; i < w.comms[c].ranks.size(); ++i) {
      const int r = w.comms[c].ranks[i];
      if (r < 0 || r >= n || comm_rank[c][size_t(r)] >= 0) {
        *error = absl::StrCat("comm ", w.comms[c].name, " names rank ", r, " out of range or twice");
        return false;
      }
      comm_rank[c][size_t(r)] = int(i);
    }
  }
  for (int r = 0; r < n; ++r) {
    const RankProgram& p = w.ranks[size_t(r)];
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const StreamOp& op = p.ops[i];
      const std::string where = absl::StrCat("rank ", r, " op ", i, ": ");
      if (op.stream < 0 || op.stream >= p.streams) {
        *error = absl::StrCat(where, "stream ", op.stream, " out of range (", p.streams, " streams)");
        return false;
      }
      if (op.kind == OpKind::kWait && (op.wait_for < 0 || op.wait_for >= int(i))) {
        *error = absl::StrCat(where, "waits for op ", op.wait_for, ", not an earlier op");
        return false;
      }
      if (op.kind == OpKind::kStamp && (op.stamp < 0 || op.stamp > w.iterations)) {
        *error = absl::StrCat(where, "stamp ", op.stamp, " outside 0..", w.iterations);
        return false;
      }
      if (op.kind != OpKind::kComm) continue;
      if (op.call_count <= 0 || op.first_call < 0 || op.first_call + op.call_count > int(p.calls.size())) {
        *error = absl::StrCat(where, "names calls out of range");
        return false;
      }
      for (int k = op.first_call; k < op.first_call + op.call_count; ++k) {
        const NcclCall& c = p.calls[size_t(k)];
        if (c.comm < 0 || c.comm >= int(w.comms.size()) || comm_rank[size_t(c.comm)][size_t(r)] < 0) {
          *error = absl::StrCat(where, NcclFuncName(c.func), " on comm ", c.comm, ", which rank ", r,
                                " is not a member of");
          return false;
        }
        const int size = int(w.comms[size_t(c.comm)].ranks.size());
        if (IsPointToPoint(c.func) && (c.peer < 0 || c.peer >= size || c.peer == comm_rank[size_t(c.comm)][size_t(r)])) {
          *error = absl::StrCat(where, NcclFuncName(c.func), " to comm rank ", c.peer, " of comm ",
                                w.comms[size_t(c.comm)].name, " (", size, " ranks, this rank is ",
                                comm_rank[size_t(c.comm)][size_t(r)], ")");
          return false;
        }
      }
    }
    for (const HostStep& h : p.host) {
      if ((h.kind == HostKind::kEnqueue || h.kind == HostKind::kHostWait) &&
          (h.op < 0 || h.op >= int(p.ops.size()))) {
        *error = absl::StrCat("rank ", r, ": a host step names op ", h.op, " out of range");
        return false;
      }
    }
  }
  if (!w.job_of_rank.empty() && int(w.job_of_rank.size()) != n) {
    *error = "job_of_rank must name a job for every rank";
    return false;
  }
  for (int j : w.job_of_rank) {
    if (j < -1 || j >= std::max<int>(int(w.job_names.size()), 1)) {
      *error = absl::StrCat("job_of_rank names job ", j, "; the workload has ", w.job_names.size());
      return false;
    }
  }
  return true;
}

}  // namespace trirace::sim
