// FakeDevice: the device::Device interface in one process, for tests of
// code that drives streams (the gated launcher) without hostccl or a GPU,
// with every stream operation visible.
//
// Each stream is a FIFO of work items run by a thread of its own: events
// (record / wait, each record its own point as in CUDA), gate waits (polled
// every 50 us: gates open by plain stores), host functions, and work a
// test enqueues itself (a fake library's "kernels", Enqueue()). Work queued
// on a stream the device did not create fails the test. SetCapturing()
// makes IsCapturing() report a stream as under graph capture, and
// captured_ops() counts the device operations (event record or wait, gate
// wait, host or inline function) queued on such a stream since: under CUDA
// each would have become a node of the application's graph.
//
//   FakeDevice dev;                       // outlives whatever borrows it
//   auto s = dev.CreateStream();
//   dev.Enqueue(*s, [] { /* runs on the stream's thread */ });
//   EXPECT_TRUE(dev.Drain(absl::Seconds(30)));   // every stream idle
//   for (auto w : dev.gate_waits()) ...   // when each gate wait was queued / passed
//
// Thread safety: every method may be called from any thread; one mutex
// guards the streams, events and records. Work items run without it.
#ifndef TRIRACE_TESTS_INTERPOSE_FAKE_DEVICE_H_
#define TRIRACE_TESTS_INTERPOSE_FAKE_DEVICE_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "interpose/device/device.h"

namespace trirace::interpose::testing {

class FakeGateBlock final : public device::GateBlock {
 public:
  explicit FakeGateBlock(size_t n) : GateBlock(new uint32_t[n](), n) {}
  ~FakeGateBlock() override { delete[] host_word(0); }
};

class FakeDevice final : public device::Device {
 public:
  struct GateWait {
    int64_t enqueued_ns = 0;
    int64_t passed_ns = -1;
  };

  ~FakeDevice() override {
    std::vector<device::StreamHandle> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Stream* s : streams_) left.push_back(s);
    }
    for (device::StreamHandle s : left) DestroyStream(s).IgnoreError();
    for (Event* e : events_) delete e;
  }

  absl::string_view name() const override { return "fake"; }

  absl::StatusOr<device::StreamHandle> CreateStream() override {
    auto* s = new Stream;
    {
      std::lock_guard<std::mutex> lock(mu_);
      streams_.insert(s);
    }
    s->worker = std::thread([this, s] { Work(s); });
    return static_cast<device::StreamHandle>(s);
  }
  absl::Status DestroyStream(device::StreamHandle h) override {
    Stream* s = static_cast<Stream*>(h);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (streams_.count(s) == 0) return absl::InvalidArgumentError("unknown stream");
      s->stop = true;
    }
    cv_.notify_all();
    s->worker.join();
    std::lock_guard<std::mutex> lock(mu_);
    streams_.erase(s);
    delete s;
    return absl::OkStatus();
  }

  absl::StatusOr<device::EventHandle> CreateEvent() override {
    std::lock_guard<std::mutex> lock(mu_);
    auto* e = new Event;
    events_.insert(e);
    return static_cast<device::EventHandle>(e);
  }
  absl::Status DestroyEvent(device::EventHandle h) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (events_.erase(static_cast<Event*>(h)) == 0) return absl::InvalidArgumentError("unknown event");
    delete static_cast<Event*>(h);
    return absl::OkStatus();
  }
  absl::Status RecordEvent(device::EventHandle h, device::StreamHandle s) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto* e = static_cast<Event*>(h);
    if (events_.count(e) == 0) return absl::InvalidArgumentError("unknown event");
    // As CUDA: a record captures this point of `s`; a wait captures the
    // event's latest record, which a later record (on any stream) does not
    // change.
    NoteCapturedLocked(s);
    auto point = std::make_shared<bool>(false);
    e->latest = point;
    return PushLocked(s, {nullptr, [this, point] {
                            std::lock_guard<std::mutex> l(mu_);
                            *point = true;
                          }});
  }
  absl::Status StreamWaitEvent(device::StreamHandle s, device::EventHandle h) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto* e = static_cast<Event*>(h);
    if (events_.count(e) == 0) return absl::InvalidArgumentError("unknown event");
    NoteCapturedLocked(s);
    std::shared_ptr<bool> point = e->latest;  // nullptr: never recorded, nothing to wait for
    return PushLocked(s, {[point] { return point == nullptr || *point; }, nullptr});
  }
  absl::StatusOr<bool> QueryEvent(device::EventHandle h) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto* e = static_cast<Event*>(h);
    return e->latest == nullptr || *e->latest;
  }
  absl::Status SynchronizeEvent(device::EventHandle h) override {
    std::unique_lock<std::mutex> lock(mu_);
    auto* e = static_cast<Event*>(h);
    std::shared_ptr<bool> point = e->latest;
    cv_.wait(lock, [&point] { return point == nullptr || *point; });
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<device::GateBlock>> AllocateGates(size_t count) override {
    return std::unique_ptr<device::GateBlock>(new FakeGateBlock(count));
  }
  absl::Status WaitGate(device::StreamHandle s, const device::GateBlock& gates, size_t index,
                        uint32_t value) override {
    if (index >= gates.size()) return absl::OutOfRangeError("gate index");
    std::lock_guard<std::mutex> lock(mu_);
    NoteCapturedLocked(s);
    GateWait* w = &gate_waits_.emplace_back(GateWait{MonotonicNs(), -1});
    return PushLocked(s, {[&gates, index, value] { return static_cast<int32_t>(gates.Value(index) - value) >= 0; },
                          [this, w] {
                            std::lock_guard<std::mutex> l(mu_);
                            w->passed_ns = MonotonicNs();
                          }});
  }

  absl::StatusOr<bool> IsCapturing(device::StreamHandle s) override {
    std::lock_guard<std::mutex> lock(mu_);
    return captured_.count(s) != 0;
  }
  absl::Status LaunchHostFunc(device::StreamHandle s, device::HostFn fn, void* arg) override {
    NoteCaptured(s);
    return Enqueue(s, [fn, arg] { fn(arg); });
  }
  bool inline_funcs() const override { return true; }
  absl::Status LaunchInlineFunc(device::StreamHandle s, device::HostFn fn, void* arg) override {
    NoteCaptured(s);
    return Enqueue(s, [fn, arg] { fn(arg); });
  }
  absl::StatusOr<device::CurrentDevice> MakeCurrent(int) override { return device::CurrentDevice(); }
  absl::StatusOr<std::string> PciBusId(int ordinal) override {
    return absl::StrFormat("0000:%02X:00.0", 0x10 + ordinal);
  }

  // The fake NCCL's stream work.
  absl::Status Enqueue(device::StreamHandle s, std::function<void()> work) {
    std::lock_guard<std::mutex> lock(mu_);
    return PushLocked(s, {nullptr, std::move(work)});
  }
  void SetCapturing(device::StreamHandle s) {
    std::lock_guard<std::mutex> lock(mu_);
    captured_.insert(s);
  }
  // True once every stream has run everything queued on it.
  bool Drain(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] {
      for (Stream* s : streams_) {
        if (!s->items.empty() || s->busy) return false;
      }
      return true;
    });
  }
  std::vector<GateWait> gate_waits() {
    std::lock_guard<std::mutex> lock(mu_);
    return {gate_waits_.begin(), gate_waits_.end()};
  }
  int captured_ops() {
    std::lock_guard<std::mutex> lock(mu_);
    return captured_ops_;
  }

 private:
  struct Item {
    std::function<bool()> ready;  // under mu_; nullptr: always
    std::function<void()> run;    // without mu_
  };
  struct Stream {
    std::deque<Item> items;
    bool busy = false;
    bool stop = false;
    std::thread worker;
  };
  struct Event {
    std::shared_ptr<bool> latest;  // set (under mu_) once its stream passed the record
  };

  void NoteCapturedLocked(device::StreamHandle s) { captured_ops_ += captured_.count(s) != 0 ? 1 : 0; }
  void NoteCaptured(device::StreamHandle s) {
    std::lock_guard<std::mutex> lock(mu_);
    NoteCapturedLocked(s);
  }

  absl::Status PushLocked(device::StreamHandle h, Item item) {
    auto* s = static_cast<Stream*>(h);
    if (streams_.count(s) == 0) {
      ADD_FAILURE() << "work queued on a stream the fake device did not create: " << h;
      return absl::InvalidArgumentError("unknown stream");
    }
    s->items.push_back(std::move(item));
    cv_.notify_all();
    return absl::OkStatus();
  }

  void Work(Stream* s) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      const bool ready = !s->items.empty() && (!s->items.front().ready || s->items.front().ready());
      if (!ready) {
        if (s->stop) return;  // drained, or stuck behind a gate that never opens
        if (s->items.empty()) {
          cv_.wait(lock);
        } else {
          cv_.wait_for(lock, std::chrono::microseconds(50));  // gates open by plain stores: poll
        }
        continue;
      }
      Item item = std::move(s->items.front());
      s->items.pop_front();
      s->busy = true;
      lock.unlock();
      if (item.run) item.run();
      lock.lock();
      s->busy = false;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<Stream*> streams_;
  std::set<Event*> events_;
  std::set<device::StreamHandle> captured_;
  int captured_ops_ = 0;
  std::deque<GateWait> gate_waits_;
};

}  // namespace trirace::interpose::testing

#endif  // TRIRACE_TESTS_INTERPOSE_FAKE_DEVICE_H_
