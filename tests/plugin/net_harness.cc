#include "plugin/net_harness.h"

#include <dirent.h>
#include <dlfcn.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "trirace/occupancy.h"

namespace net_test {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ApplyEnv(const Env& env) {
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
}

// Removes the occupancy segment of the ranks' private job, if any.
void RemoveSegment(const Env& env) {
  for (const auto& [k, v] : env) {
    char name[256];
    if (k == "TRIRACE_JOB_ID" && trirace_occ_segment_name(v.c_str(), name, sizeof(name)) == 0) {
      shm_unlink(name);
    }
  }
}

[[noreturn]] void FinishChild() {
  fflush(stdout);
  fflush(stderr);
  // exit() (not _exit) so LeakSanitizer checks the child under ASan.
  exit(::testing::Test::HasFailure() ? 1 : 0);
}

// Waits for every pid until the deadline, then kills the rest.
std::vector<int> WaitAll(const std::vector<pid_t>& pids, int64_t deadline_ms) {
  std::vector<int> codes(pids.size(), -1);
  size_t left = pids.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (codes[i] != -1) continue;
      int status = 0;
      pid_t r = waitpid(pids[i], &status, WNOHANG);
      if (r == pids[i]) {
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --left;
      }
    }
    if (left == 0) break;
    if (NowMs() > deadline_ms) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (codes[i] == -1) {
          kill(pids[i], SIGKILL);
          int status = 0;
          waitpid(pids[i], &status, 0);
          codes[i] = 128 + SIGKILL;
          ADD_FAILURE() << "rank " << i << " did not finish in time: killed";
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling child exit only
  }
  return codes;
}

}  // namespace

Channel::~Channel() {
  if (fd_ >= 0) close(fd_);
}

bool Channel::Send(const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t r = ::send(fd_, p, len, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    len -= static_cast<size_t>(r);
  }
  return true;
}

bool Channel::Recv(void* data, size_t len, int timeout_ms) {
  char* p = static_cast<char*>(data);
  int64_t deadline = NowMs() + timeout_ms;
  while (len > 0) {
    pollfd pfd{fd_, POLLIN, 0};
    int left = static_cast<int>(deadline - NowMs());
    if (left <= 0 || ::poll(&pfd, 1, left) <= 0) return false;
    ssize_t r = ::recv(fd_, p, len, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    len -= static_cast<size_t>(r);
  }
  return true;
}

uint64_t Channel::RecvU64(int timeout_ms) {
  uint64_t v = 0;
  return Recv(&v, sizeof(v), timeout_ms) ? v : 0;
}

bool Channel::Barrier() {
  uint64_t token = 0x42;
  return SendU64(token) && RecvU64() == token;
}

std::vector<int> RunRanks(const Env& env, const RankFn& fn, const ParentFn& parent, int timeout_ms) {
  int peer[2], up0[2], up1[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, peer) != 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, up0) != 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, up1) != 0) {
    ADD_FAILURE() << "socketpair: " << strerror(errno);
    return {};
  }
  int ups[2][2] = {{up0[0], up0[1]}, {up1[0], up1[1]}};
  fflush(stdout);
  fflush(stderr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      close(peer[1 - rank]);
      for (int r = 0; r < 2; ++r) {
        close(ups[r][0]);
        if (r != rank) close(ups[r][1]);
      }
      ApplyEnv(env);
      {
        Channel peer_channel(peer[rank]);
        Channel parent_channel(ups[rank][1]);
        fn(rank, peer_channel, parent_channel);
      }
      FinishChild();
    }
    pids.push_back(pid);
  }
  close(peer[0]);
  close(peer[1]);
  close(up0[1]);
  close(up1[1]);
  Channel c0(up0[0]), c1(up1[0]);
  std::vector<Channel*> channels = {&c0, &c1};
  if (parent) parent(pids, channels);
  std::vector<int> codes = WaitAll(pids, NowMs() + timeout_ms);
  RemoveSegment(env);
  return codes;
}

int RunInChild(const Env& env, const std::function<void()>& fn, int timeout_ms) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    ApplyEnv(env);
    fn();
    FinishChild();
  }
  int code = WaitAll({pid}, NowMs() + timeout_ms)[0];
  RemoveSegment(env);
  return code;
}

// ---- NetPlugin ---------------------------------------------------------------

std::unique_ptr<NetPlugin> NetPlugin::Load(const std::string& path, int version) {
  absl::StatusOr<trirace::net::NetPlugin> loaded = trirace::net::LoadNetPlugin({path}, version);
  if (!loaded.ok()) {
    ADD_FAILURE() << loaded.status();
    return nullptr;
  }
  std::unique_ptr<NetPlugin> p(new NetPlugin());
  p->loaded_ = *std::move(loaded);
  p->api_ = p->loaded_.api.get();
  p->version_ = p->api_->version();
  return p;
}

// The library stays loaded unless Unload(), like NCCL during a job; the
// loader's adapter (and the contexts it made) goes with this object.
NetPlugin::~NetPlugin() = default;

void NetPlugin::Unload() {
  loaded_.Unload();
  api_ = nullptr;
}

const char* NetPlugin::name() const { return api_->name().c_str(); }

static void TestLogger(ncclDebugLogLevel, unsigned long, const char*, int, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[nccl-log] ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

ncclResult_t NetPlugin::Init(uint64_t comm_id, int traffic_class, ncclDebugLogger_t logger) {
  ncclNetCommConfig_v11_t config{traffic_class};
  return api_->Init(&ctx_, comm_id, &config, logger != nullptr ? logger : TestLogger, nullptr);
}

ncclResult_t NetPlugin::Finalize() { return api_->Finalize(ctx_); }

ncclResult_t NetPlugin::Devices(int* ndev) { return api_->Devices(ndev); }

ncclResult_t NetPlugin::GetProperties(int dev, ncclNetProperties_v11_t* props) {
  return api_->GetProperties(dev, props);
}

ncclResult_t NetPlugin::Listen(int dev, void* handle, void** lc) { return api_->Listen(ctx_, dev, handle, lc); }

ncclResult_t NetPlugin::Connect(int dev, void* handle, void** sc) {
  ncclNetDeviceHandle_v11_t* dev_comm = nullptr;
  return api_->Connect(ctx_, dev, nullptr, handle, sc, &dev_comm);
}

ncclResult_t NetPlugin::Accept(void* lc, void** rc) {
  ncclNetDeviceHandle_v11_t* dev_comm = nullptr;
  return api_->Accept(lc, rc, &dev_comm);
}

ncclResult_t NetPlugin::RegMr(void* comm, void* data, size_t size, int type, void** mh) {
  return api_->RegMr(comm, data, size, type, mh);
}

ncclResult_t NetPlugin::DeregMr(void* comm, void* mh) { return api_->DeregMr(comm, mh); }

ncclResult_t NetPlugin::Isend(void* sc, void* data, size_t size, int tag, void* mh, void** req) {
  return api_->Isend(sc, data, size, tag, mh, nullptr, req);
}

ncclResult_t NetPlugin::Irecv(void* rc, int n, void** data, size_t* sizes, int* tags, void** mhs,
                              void** req) {
  void* phandles[NCCL_NET_MAX_REQUESTS] = {};
  return api_->Irecv(rc, n, data, sizes, tags, mhs, phandles, req);
}

ncclResult_t NetPlugin::Iflush(void* rc, int n, void** data, int* sizes, void** mhs, void** req) {
  return api_->Iflush(rc, n, data, sizes, mhs, req);
}

ncclResult_t NetPlugin::Test(void* req, int* done, int* sizes) { return api_->Test(req, done, sizes); }

ncclResult_t NetPlugin::CloseSend(void* c) { return api_->CloseSend(c); }
ncclResult_t NetPlugin::CloseRecv(void* c) { return api_->CloseRecv(c); }
ncclResult_t NetPlugin::CloseListen(void* c) { return api_->CloseListen(c); }

ncclResult_t NetPlugin::SetNetAttrOp(uint32_t op_mask) {
  ncclNetAttr_v11_t attr;
  std::memset(&attr, 0xff, sizeof(attr));  // every field NCCL_NET_ATTR_UNDEF
  attr.op = op_mask;
  return api_->SetNetAttr(ctx_, &attr);
}

ncclResult_t NetPlugin::MakeVDevice(int* dev, ncclNetVDeviceProps_v11_t* props) {
  return api_->MakeVDevice(dev, props);
}

ncclResult_t NetPlugin::ConnectLoop(int dev, void* handle, void** sc, int timeout_ms) {
  *sc = nullptr;
  int64_t deadline = NowMs() + timeout_ms;
  while (*sc == nullptr) {
    ncclResult_t r = Connect(dev, handle, sc);
    if (r != ncclSuccess) return r;
    if (*sc == nullptr && NowMs() > deadline) return ncclInternalError;
    sched_yield();  // as NCCL's proxy thread does when nothing progressed
  }
  return ncclSuccess;
}

ncclResult_t NetPlugin::AcceptLoop(void* lc, void** rc, int timeout_ms) {
  *rc = nullptr;
  int64_t deadline = NowMs() + timeout_ms;
  while (*rc == nullptr) {
    ncclResult_t r = Accept(lc, rc);
    if (r != ncclSuccess) return r;
    if (*rc == nullptr && NowMs() > deadline) return ncclInternalError;
    sched_yield();
  }
  return ncclSuccess;
}

ncclResult_t NetPlugin::Wait(void* req, int* sizes, int timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  int local[NCCL_NET_MAX_REQUESTS] = {};
  while (true) {
    int done = 0;
    ncclResult_t r = Test(req, &done, sizes ? sizes : local);
    if (r != ncclSuccess || done) return r;
    if (NowMs() > deadline) return ncclInternalError;
    sched_yield();
  }
}

const char* PluginPath() { return TRIRACE_NET_PLUGIN_PATH; }
const char* InnerPluginPath() { return TRIRACE_NET_INNER_PATH; }

std::string UniqueJobId(const std::string& tag) {
  return "test-" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(NowMs() % 1000000);
}

void FillPattern(void* data, size_t len, uint32_t seed) {
  auto* p = static_cast<unsigned char*>(data);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < len; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<unsigned char>(x >> 24);
  }
}

bool CheckPattern(const void* data, size_t len, uint32_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < len; ++i) {
    x = x * 1664525u + 1013904223u;
    if (p[i] != static_cast<unsigned char>(x >> 24)) return false;
  }
  return true;
}

std::vector<std::string> OpenSockets() {
  std::vector<std::pair<int, std::string>> found;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return {"(cannot list /proc/self/fd)"};
  while (dirent* e = readdir(d)) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dirfd(d)) continue;
    char target[256] = {};
    ssize_t len = readlink(absl::StrCat("/proc/self/fd/", e->d_name).c_str(), target, sizeof(target) - 1);
    if (len > 0 && absl::StartsWith(target, "socket:")) found.emplace_back(fd, target);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (const auto& [fd, target] : found) out.push_back(absl::StrCat(fd, "->", target));
  return out;
}

}  // namespace net_test
