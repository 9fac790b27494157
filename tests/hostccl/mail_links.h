// MailLinks: an in-process stand-in for hostccl's net links (PeerLinks),
// for tests that run several ranks as threads of one process. Messages go
// through Mailboxes, one FIFO per (sender, receiver); a send completes at
// once (eager), a receive once a message is there. Mailboxes also records
// the size of every message put, so a test can see what moved and when.
//
// Thread safety: Mailboxes is safe from any thread; one MailLinks per rank,
// driven by one thread at a time.
#ifndef TRIRACE_TESTS_HOSTCCL_MAIL_LINKS_H_
#define TRIRACE_TESTS_HOSTCCL_MAIL_LINKS_H_

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "hostccl/src/peer_links.h"

namespace trirace::hostccl {

// The net links stood in for: messages between ranks of this process.
class Mailboxes {
 public:
  explicit Mailboxes(int n) : n_(n), q_(n * n), put_sizes_(n * n) {}
  void Put(int src, int dst, std::string m) {
    absl::MutexLock lock(&mu_);
    put_sizes_[src * n_ + dst].push_back(m.size());
    q_[src * n_ + dst].push_back(std::move(m));
    ++messages_;
  }
  bool Take(int src, int dst, std::string* m) {
    absl::MutexLock lock(&mu_);
    auto& q = q_[src * n_ + dst];
    if (q.empty()) return false;
    *m = std::move(q.front());
    q.pop_front();
    return true;
  }
  int messages() {
    absl::MutexLock lock(&mu_);
    return messages_;
  }
  // The sizes of the messages put from `src` to `dst` so far, in order.
  std::vector<size_t> PutSizes(int src, int dst) {
    absl::MutexLock lock(&mu_);
    return put_sizes_[src * n_ + dst];
  }

 private:
  int n_;
  absl::Mutex mu_;
  std::vector<std::deque<std::string>> q_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<size_t>> put_sizes_ ABSL_GUARDED_BY(mu_);
  int messages_ ABSL_GUARDED_BY(mu_) = 0;
};

class MailLinks final : public PeerLinks {
 public:
  MailLinks(Mailboxes* mail, int rank) : mail_(mail), rank_(rank) {}
  absl::StatusOr<std::unique_ptr<MemRegion>> Register(void* base, size_t size) override {
    return std::make_unique<MemRegion>(static_cast<char*>(base), size);
  }
  absl::StatusOr<void*> Isend(int peer, const void* data, size_t size, MemRegion&) override {
    mail_->Put(rank_, peer, std::string(static_cast<const char*>(data), size));
    return New(Req{true, peer, nullptr, size});
  }
  absl::StatusOr<void*> Irecv(int peer, void* data, size_t size, MemRegion&) override {
    return New(Req{false, peer, static_cast<char*>(data), size});
  }
  absl::StatusOr<bool> Test(void* request, size_t* size) override {
    auto it = reqs_.find(request);
    if (it == reqs_.end()) return absl::InternalError("unknown request");
    Req& r = it->second;
    size_t n = r.size;
    if (!r.send) {
      std::string m;
      if (!mail_->Take(r.peer, rank_, &m)) return false;
      if (m.size() > r.size) return absl::InvalidArgumentError("message too large");
      std::memcpy(r.data, m.data(), m.size());
      n = m.size();
    }
    if (size != nullptr) *size = n;
    reqs_.erase(it);
    return true;
  }
  size_t MaxMessageBytes() const override { return size_t{1} << 30; }
  bool CrossesNetwork(int, bool) const override { return crosses_network_; }
  void Close() override {}
  // What CrossesNetwork says for every peer (true: links between hosts).
  void set_crosses_network(bool v) { crosses_network_ = v; }

 private:
  struct Req {
    bool send;
    int peer;
    char* data;
    size_t size;
  };
  void* New(Req r) {
    void* key = reinterpret_cast<void*>(++next_);
    reqs_.emplace(key, r);
    return key;
  }
  Mailboxes* mail_;
  int rank_;
  bool crosses_network_ = true;
  uintptr_t next_ = 0;
  absl::flat_hash_map<void*, Req> reqs_;
};

}  // namespace trirace::hostccl

#endif  // TRIRACE_TESTS_HOSTCCL_MAIL_LINKS_H_
