// A RecordSink that keeps what a launcher hands back (records taken and
// finished, and events such as tuning changes), for launcher tests.
//
// Thread safety: every member is thread-safe.
#ifndef TRIRACE_TESTS_INTERPOSE_RECORDING_SINK_H_
#define TRIRACE_TESTS_INTERPOSE_RECORDING_SINK_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "interpose/gate/launcher.h"
#include "interpose/trace/trace_record.h"

namespace trirace::interpose::testing {

class Sink final : public RecordSink {
 public:
  void RecordStarted() override { started_.fetch_add(1); }
  void RecordFinished(TraceRecord& r, CommState*) override {
    std::lock_guard<std::mutex> lock(mu_);
    finished_.push_back(r);
  }
  void RecordEvent(const TraceRecord& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(r);
  }
  uint64_t started() const { return started_.load(); }
  std::vector<TraceRecord> finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }
  std::vector<TraceRecord> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::atomic<uint64_t> started_{0};
  std::mutex mu_;
  std::vector<TraceRecord> finished_;
  std::vector<TraceRecord> events_;
};

}  // namespace trirace::interpose::testing

#endif  // TRIRACE_TESTS_INTERPOSE_RECORDING_SINK_H_
