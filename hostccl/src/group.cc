#include "hostccl/src/group.h"

#include <chrono>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace trirace::hostccl {
namespace {

struct PendingOp {
  std::shared_ptr<CommCore> core;
  OpDesc op;
  std::shared_ptr<HostStream> stream;
};

struct GroupState {
  int depth = 0;
  std::vector<std::function<absl::Status()>> jobs;
  std::vector<PendingOp> ops;
  absl::Status error;
};

GroupState& State() {
  thread_local GroupState state;
  return state;
}

absl::Status RunJobs(std::vector<std::function<absl::Status()>> jobs) {
  if (jobs.size() == 1) return jobs[0]();
  std::vector<absl::Status> results(jobs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = jobs[i](); });
  }
  for (auto& t : threads) t.join();
  for (auto& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void Issue(std::vector<PendingOp> ops) {
  struct Entry {
    std::shared_ptr<Launch> launch;
    std::vector<std::shared_ptr<HostStream>> streams;
  };
  std::vector<Entry> entries;
  for (PendingOp& p : ops) {
    Entry* e = nullptr;
    for (Entry& x : entries) {
      if (x.launch->core == p.core) e = &x;
    }
    if (e == nullptr) {
      entries.push_back(Entry{std::make_shared<Launch>(), {}});
      e = &entries.back();
      e->launch->core = p.core;
    }
    if (p.op.func == NcclFunc::kSend || p.op.func == NcclFunc::kRecv) {
      e->launch->p2p.push_back(p.op);
    } else {
      e->launch->colls.push_back(p.op);
    }
    bool known = false;
    for (auto& s : e->streams) known = known || s == p.stream;
    if (!known) e->streams.push_back(p.stream);
  }
  // Launches per stream: each stream first releases all of them, then waits.
  std::vector<std::pair<std::shared_ptr<HostStream>, std::vector<std::shared_ptr<Launch>>>> per_stream;
  for (Entry& e : entries) {
    e.launch->pending_streams = static_cast<int>(e.streams.size());
    e.launch->one_stream = e.streams.size() == 1;
    for (auto& s : e.streams) {
      auto it = per_stream.begin();
      while (it != per_stream.end() && it->first != s) ++it;
      if (it == per_stream.end()) {
        per_stream.emplace_back(s, std::vector<std::shared_ptr<Launch>>{});
        it = per_stream.end() - 1;
      }
      it->second.push_back(e.launch);
    }
  }
  for (Entry& e : entries) e.launch->core->Submit(e.launch);
  for (auto& [stream, launches] : per_stream) {
    std::vector<std::pair<std::shared_ptr<CommCore>, std::shared_ptr<Launch>>> work;
    for (auto& l : launches) work.emplace_back(l->core, l);
    // One launch: this thread may run it, and it keeps the device clock when
    // this is its only stream. Several (a group over several comms) must
    // progress together, so the executors run them.
    if (work.size() == 1 && work[0].second->one_stream) {
      stream->EnqueueClocked([work = std::move(work)](HostStream::Clock::time_point start) mutable
                             -> std::optional<HostStream::Clock::time_point> {
        Launch& launch = *work[0].second;
        launch.clock_start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
        if (!work[0].first->ArriveAndRun(work[0].second)) launch.done.WaitForNotification();
        if (!launch.clock_end_ns.has_value()) return std::nullopt;
        return HostStream::Clock::time_point(std::chrono::nanoseconds(*launch.clock_end_ns));
      });
      continue;
    }
    stream->Enqueue([work = std::move(work)]() mutable {
      if (work.size() == 1) {
        if (!work[0].first->ArriveAndRun(work[0].second)) work[0].second->done.WaitForNotification();
        return;
      }
      for (auto& [core, launch] : work) core->Arrive(*launch);
      for (auto& [core, launch] : work) launch->done.WaitForNotification();
    });
  }
}

}  // namespace

bool InGroup() { return State().depth > 0; }

void GroupStart() { ++State().depth; }

absl::Status GroupEnd() {
  GroupState& g = State();
  if (g.depth == 0) {
    return absl::FailedPreconditionError("ncclGroupEnd called without a matching ncclGroupStart");
  }
  if (--g.depth > 0) return absl::OkStatus();
  std::vector<std::function<absl::Status()>> jobs = std::move(g.jobs);
  std::vector<PendingOp> ops = std::move(g.ops);
  absl::Status error = std::move(g.error);
  g = GroupState();
  if (!error.ok()) return error;
  if (!jobs.empty()) TRIRACE_RETURN_IF_ERROR(RunJobs(std::move(jobs)));
  if (!ops.empty()) Issue(std::move(ops));
  return absl::OkStatus();
}

absl::Status EnqueueOp(std::shared_ptr<CommCore> core, const OpDesc& op, std::shared_ptr<HostStream> stream) {
  GroupState& g = State();
  if (g.depth > 0) {
    g.ops.push_back(PendingOp{std::move(core), op, std::move(stream)});
    return absl::OkStatus();
  }
  std::vector<PendingOp> one;
  one.push_back(PendingOp{std::move(core), op, std::move(stream)});
  Issue(std::move(one));
  return absl::OkStatus();
}

absl::Status RunOrDefer(std::function<absl::Status()> job) {
  GroupState& g = State();
  if (g.depth > 0) {
    g.jobs.push_back(std::move(job));
    return absl::OkStatus();
  }
  return job();
}

void NoteGroupError(const absl::Status& s) {
  GroupState& g = State();
  if (g.depth > 0 && g.error.ok()) g.error = s;
}

}  // namespace trirace::hostccl
