// net_transfer: moves N bytes from rank 0 to rank 1 through an NCCL net
// plugin loaded with dlopen (ncclNet_v11 table), the way NCCL's proxy
// thread drives it. Used by the test-bed smoke test: the two ranks run in
// two test-bed hosts, so the bytes cross both shaped uplinks.
//
//   RANK=1 RENDEZVOUS_FILE=f net_transfer --plugin libnccl-net-trirace.so --bytes 4194304
//   RANK=0 RENDEZVOUS_FILE=f net_transfer --plugin ... --bytes 4194304
//
// Rank 1 listens and writes the listen handle to RENDEZVOUS_FILE (atomic
// rename); rank 0 waits for it and connects. Rank 0 closes its connection
// only after rank 1 wrote RENDEZVOUS_FILE.done (everything arrived), as
// NCCL keeps connections for the life of a communicator. Each rank prints
// one line:
//   SEND bytes=<n> start_ns=<CLOCK_MONOTONIC before the first isend> occupancy_bytes=<b>
//   RECV bytes=<n> end_ns=<CLOCK_MONOTONIC when the last receive completed> occupancy_bytes=<b>
// occupancy_bytes is what the plugin's occupancy segment (this host's
// job) reports as completed sends (rank 0) or receives (rank 1) once it has
// caught up, or -1 when there is no segment.
// Exit status 0 on success, 1 on any failure (with a message on stderr).
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "plugin/abi/net_abi.h"
#include "trirace/occupancy.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "net_transfer: %s\n", what.c_str());
  std::exit(1);
}

void Check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) Fail(std::string(what) + " returned " + std::to_string(int(r)));
}

void Logger(ncclDebugLogLevel level, unsigned long, const char* file, int line, const char* fmt, ...) {
  if (level != NCCL_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "net_transfer: plugin WARN %s:%d: ", file, line);
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

bool Expired(uint64_t deadline_ns) { return NowNs() > deadline_ns; }

void WriteHandle(const std::string& path, const char* handle) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) Fail("cannot create " + tmp + ": " + std::strerror(errno));
  bool ok = std::fwrite(handle, 1, NCCL_NET_HANDLE_MAXSIZE, f) == NCCL_NET_HANDLE_MAXSIZE;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) Fail("cannot write " + path);
}

void ReadHandle(const std::string& path, char* handle, uint64_t deadline_ns) {
  for (;;) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f != nullptr) {
      size_t n = std::fread(handle, 1, NCCL_NET_HANDLE_MAXSIZE, f);
      std::fclose(f);
      if (n != NCCL_NET_HANDLE_MAXSIZE) Fail(path + ": short handle");
      return;
    }
    if (Expired(deadline_ns)) Fail("rank 1 never wrote " + path);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Completed bytes this host's occupancy segment reports (send or receive),
// once they reach `expect` or the deadline passes; -1 without a segment.
long long OccupancyBytes(bool send, uint64_t expect, uint64_t deadline_ns) {
  trirace_occ_reader_t* reader = nullptr;
  if (trirace_occ_open(nullptr, &reader) != 0) return -1;
  long long seen = 0;
  for (;;) {
    trirace_occ_snapshot_t snap;
    if (trirace_occ_read(reader, &snap) == 0) {
      seen = 0;
      for (uint32_t i = 0; i < snap.num_nics; ++i) {
        seen += static_cast<long long>(send ? snap.nics[i].total.send_completed_bytes
                                            : snap.nics[i].total.recv_completed_bytes);
      }
      if (uint64_t(seen) >= expect || Expired(deadline_ns)) break;
    } else if (Expired(deadline_ns)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  trirace_occ_close(reader);
  return seen;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plugin;
  size_t bytes = 4 << 20, chunk = 512 << 10;
  int timeout_s = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--plugin") {
      plugin = value;
    } else if (flag == "--bytes") {
      bytes = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--chunk") {
      chunk = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--timeout") {
      timeout_s = std::atoi(value.c_str());
    } else {
      Fail("unknown flag " + flag + " (expected --plugin, --bytes, --chunk, --timeout)");
    }
  }
  const char* rank_env = std::getenv("RANK");
  const char* rendezvous = std::getenv("RENDEZVOUS_FILE");
  if (plugin.empty() || rank_env == nullptr || rendezvous == nullptr || bytes == 0 || chunk == 0) {
    Fail("needs --plugin PATH, --bytes > 0, --chunk > 0 and RANK, RENDEZVOUS_FILE in the environment");
  }
  const int rank = std::atoi(rank_env);
  const uint64_t deadline = NowNs() + uint64_t(timeout_s) * 1000000000ull;

  void* dl = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) Fail("dlopen " + plugin + ": " + dlerror());
  auto* net = static_cast<const ncclNet_v11_t*>(dlsym(dl, "ncclNetPlugin_v11"));
  if (net == nullptr) Fail(plugin + " exports no ncclNetPlugin_v11");

  void* ctx = nullptr;
  ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
  Check(net->init(&ctx, /*commId=*/0x7e57bedull, &config, Logger, nullptr), "init");
  int ndev = 0;
  Check(net->devices(&ndev), "devices");
  if (ndev < 1) Fail("the plugin found no network device (check TRIRACE_NET_IFNAME)");

  std::vector<char> buf(bytes, static_cast<char>(rank == 0 ? 0x5a : 0));
  const size_t nchunks = (bytes + chunk - 1) / chunk;
  constexpr size_t kWindow = 8;  // outstanding requests, as NCCL keeps per connection

  if (rank == 1) {
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    void* listen_comm = nullptr;
    Check(net->listen(ctx, 0, handle, &listen_comm), "listen");
    WriteHandle(rendezvous, handle);
    void* recv_comm = nullptr;
    ncclNetDeviceHandle_v11_t* dev_handle = nullptr;
    while (recv_comm == nullptr) {
      Check(net->accept(listen_comm, &recv_comm, &dev_handle), "accept");
      if (Expired(deadline)) Fail("no connection from rank 0");
    }
    void* mh = nullptr;
    Check(net->regMr(recv_comm, buf.data(), bytes, NCCL_PTR_HOST, &mh), "regMr");
    std::vector<void*> reqs(nchunks, nullptr);
    size_t posted = 0, done = 0;
    while (done < nchunks) {
      while (posted < nchunks && posted - done < kWindow) {
        void* data = buf.data() + posted * chunk;
        size_t size = std::min(chunk, bytes - posted * chunk);
        int tag = 0;
        void* phandle = nullptr;
        Check(net->irecv(recv_comm, 1, &data, &size, &tag, &mh, &phandle, &reqs[posted]), "irecv");
        if (reqs[posted] == nullptr) break;  // back-pressure: retry later
        ++posted;
      }
      int finished = 0, size = 0;
      if (done < posted) Check(net->test(reqs[done], &finished, &size), "test");
      if (finished) {
        ++done;
      } else {
        // The link is shaped: waiting costs nothing, spinning costs a core.
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (Expired(deadline)) Fail("receive timed out");
    }
    const uint64_t end = NowNs();
    for (char c : buf) {
      if (c != 0x5a) Fail("received bytes differ from what was sent");
    }
    long long occ = OccupancyBytes(false, bytes, NowNs() + 2000000000ull);
    std::printf("RECV bytes=%zu end_ns=%llu occupancy_bytes=%lld\n", bytes, (unsigned long long)end, occ);
    // Like NCCL, the sender keeps its connection until the job is done:
    // tell it everything arrived.
    WriteHandle(std::string(rendezvous) + ".done", handle);
    net->deregMr(recv_comm, mh);
    net->closeRecv(recv_comm);
    net->closeListen(listen_comm);
  } else {
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    ReadHandle(rendezvous, handle, deadline);
    void* send_comm = nullptr;
    ncclNetDeviceHandle_v11_t* dev_handle = nullptr;
    while (send_comm == nullptr) {
      Check(net->connect(ctx, 0, handle, &send_comm, &dev_handle), "connect");
      if (Expired(deadline)) Fail("could not connect to rank 1");
    }
    void* mh = nullptr;
    Check(net->regMr(send_comm, buf.data(), bytes, NCCL_PTR_HOST, &mh), "regMr");
    const uint64_t start = NowNs();
    std::vector<void*> reqs(nchunks, nullptr);
    size_t posted = 0, done = 0;
    while (done < nchunks) {
      while (posted < nchunks && posted - done < kWindow) {
        size_t size = std::min(chunk, bytes - posted * chunk);
        Check(net->isend(send_comm, buf.data() + posted * chunk, size, 0, mh, nullptr, &reqs[posted]), "isend");
        if (reqs[posted] == nullptr) break;
        ++posted;
      }
      int finished = 0, size = 0;
      if (done < posted) Check(net->test(reqs[done], &finished, &size), "test");
      if (finished) {
        ++done;
      } else {
        // The link is shaped: waiting costs nothing, spinning costs a core.
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (Expired(deadline)) Fail("send timed out");
    }
    long long occ = OccupancyBytes(true, bytes, NowNs() + 2000000000ull);
    std::printf("SEND bytes=%zu start_ns=%llu occupancy_bytes=%lld\n", bytes, (unsigned long long)start, occ);
    char ack[NCCL_NET_HANDLE_MAXSIZE];
    ReadHandle(std::string(rendezvous) + ".done", ack, deadline);
    net->deregMr(send_comm, mh);
    net->closeSend(send_comm);
  }
  if (net->finalize != nullptr) net->finalize(ctx);
  std::fflush(stdout);
  return 0;
}
