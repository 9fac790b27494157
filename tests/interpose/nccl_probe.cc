// nccl_probe: a program that uses NCCL the way an application does, for the
// shim's tests. It links no NCCL: it loads the library named on the command
// line (like a framework would) and calls ncclX through the dynamic linker
// (dlsym RTLD_DEFAULT), so with LD_PRELOAD=libtrirace.so the calls reach the
// shim and without it they reach the library directly. It prints every
// return code and result so two runs can be compared line by line; lines
// that depend on the shim being present start with "annot ".
//
// usage: nccl_probe version
//        nccl_probe real <libnccl>          the real NCCL, no GPU needed
//        nccl_probe basic <standin>         every kind of call once
//        nccl_probe local <standin> <user>  NCCL loaded RTLD_LOCAL, called from <user>
//        nccl_probe threads <standin> <threads> <ops>
//        nccl_probe many <standin> <ops>
//        nccl_probe roles <standin>       comms created under declared roles
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "trirace/trirace.h"

namespace {

template <typename Fn>
Fn Lookup(const char* name) {
  void* p = dlsym(RTLD_DEFAULT, name);
  if (p == nullptr) {
    std::fprintf(stderr, "probe: %s not found: %s\n", name, dlerror());
    std::exit(3);
  }
  return reinterpret_cast<Fn>(p);
}
#define NCCL(name) Lookup<decltype(&::name)>(#name)

void* Load(const char* path, int flags) {
  void* h = dlopen(path, flags);
  if (h == nullptr) {
    std::fprintf(stderr, "probe: cannot load %s: %s\n", path, dlerror());
    std::exit(3);
  }
  return h;
}

void PrintStandinCalls(void* handle) {
  auto calls = reinterpret_cast<uint64_t (*)(const char*)>(dlsym(handle, "standin_calls"));
  if (calls == nullptr) return;
  for (const char* f : {"CommInitRank", "CommSplit", "CommDestroy", "AllReduce", "Broadcast", "Bcast", "AllGather",
                        "Send", "Recv", "GroupStart", "GroupEnd"}) {
    std::printf("calls %s=%llu\n", f, static_cast<unsigned long long>(calls(f)));
  }
}

ncclComm_t NewComm() {
  ncclUniqueId id;
  ncclResult_t r = NCCL(ncclGetUniqueId)(&id);
  ncclComm_t comm = nullptr;
  ncclResult_t r2 = NCCL(ncclCommInitRank)(&comm, 1, id, 0);
  std::printf("rc GetUniqueId=%d CommInitRank=%d\n", r, r2);
  return comm;
}

int Version() {
  int v = 0;
  ncclResult_t r = NCCL(ncclGetVersion)(&v);
  std::printf("rc GetVersion=%d version=%d\n", r, v);
  std::printf("error string 0: %s\n", NCCL(ncclGetErrorString)(ncclSuccess));
  ncclUniqueId id;
  std::printf("rc GetUniqueId=%d\n", NCCL(ncclGetUniqueId)(&id));
  return 0;
}

int Real(const char* lib) {
  Load(lib, RTLD_NOW | RTLD_GLOBAL);
  int v = 0;
  ncclResult_t r = NCCL(ncclGetVersion)(&v);
  std::printf("rc GetVersion=%d version=%d\n", r, v);
  for (int e = ncclSuccess; e <= ncclInProgress; ++e) {
    std::printf("error string %d: %s\n", e, NCCL(ncclGetErrorString)(static_cast<ncclResult_t>(e)));
  }
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  r = NCCL(ncclGetUniqueId)(&id);
  bool nonzero = false;
  for (char c : id.internal) nonzero |= c != 0;
  std::printf("rc GetUniqueId=%d filled=%d\n", r, nonzero ? 1 : 0);
  std::printf("rc GetUniqueId(NULL)=%d\n", NCCL(ncclGetUniqueId)(nullptr));
  ncclComm_t comm = nullptr;
  std::printf("rc CommInitRank=%d\n", NCCL(ncclCommInitRank)(&comm, 1, id, 0));
  std::printf("rc CommInitRank(bad rank)=%d\n", NCCL(ncclCommInitRank)(&comm, 1, id, 5));
  return 0;
}

int Basic(const char* lib) {
  void* h = Load(lib, RTLD_NOW | RTLD_GLOBAL);
  ncclComm_t comm = NewComm();
  std::vector<float> send(256), recv(256, 0.f);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(i) * 0.5f;

  std::printf("annot iteration_begin=%d\n", trirace_iteration_begin(7));
  {
    trirace_tag_t t = TRIRACE_TAG_INIT;
    t.layer = 3;
    t.phase = TRIRACE_PHASE_BACKWARD;
    t.traffic_class = TRIRACE_CLASS_DENSE;
    std::printf("annot push=%d\n", trirace_push_tag(&t));
    std::printf("rc AllReduce=%d\n",
                NCCL(ncclAllReduce)(send.data(), recv.data(), send.size(), ncclFloat32, ncclSum, comm, nullptr));
    std::printf("annot pop=%d\n", trirace_pop_tag());
  }
  std::printf("result AllReduce=%d\n", std::memcmp(send.data(), recv.data(), send.size() * sizeof(float)) == 0);
  std::vector<int32_t> b(64, 9);
  std::printf("rc Bcast=%d\n", NCCL(ncclBcast)(b.data(), b.size(), ncclInt32, 0, comm, nullptr));
  {
    trirace::TagScope scope(trirace::Tag().MicroBatch(2).Stage(1));
    std::printf("rc GroupStart=%d\n", NCCL(ncclGroupStart)());
    std::printf("rc Send=%d\n", NCCL(ncclSend)(send.data(), 16, ncclFloat32, 0, comm, nullptr));
    std::printf("rc Recv=%d\n", NCCL(ncclRecv)(recv.data(), 16, ncclFloat32, 0, comm, nullptr));
    std::printf("rc GroupEnd=%d\n", NCCL(ncclGroupEnd)());
  }
  ncclComm_t sub = nullptr, none = reinterpret_cast<ncclComm_t>(0x1);
  std::printf("rc CommSplit=%d\n", NCCL(ncclCommSplit)(comm, 0, 0, &sub, nullptr));
  std::printf("rc CommSplit(nocolor)=%d null=%d\n", NCCL(ncclCommSplit)(comm, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr),
              none == nullptr);
  std::printf("annot role=%d\n", trirace_set_comm_role(sub, TRIRACE_ROLE_EXPERT));
  std::printf("rc AllGather=%d\n", NCCL(ncclAllGather)(send.data(), recv.data(), 8, ncclFloat32, sub, nullptr));
  // Invalid arguments: the library's error comes back unchanged.
  std::printf("rc AllReduce(NULL comm)=%d\n",
              NCCL(ncclAllReduce)(send.data(), recv.data(), 4, ncclFloat32, ncclSum, nullptr, nullptr));
  std::printf("rc AllReduce(bad dtype)=%d\n", NCCL(ncclAllReduce)(send.data(), recv.data(), 4,
                                                                 static_cast<ncclDataType_t>(99), ncclSum, comm,
                                                                 nullptr));
  std::printf("rc GroupEnd(unbalanced)=%d\n", NCCL(ncclGroupEnd)());
  std::printf("annot pop(unbalanced)=%d\n", trirace_pop_tag());
  std::printf("annot iteration_end=%d\n", trirace_iteration_end(7));
  std::printf("rc CommDestroy(sub)=%d\n", NCCL(ncclCommDestroy)(sub));
  std::printf("rc CommDestroy=%d\n", NCCL(ncclCommDestroy)(comm));
  std::printf("error string: %s\n", NCCL(ncclGetErrorString)(ncclInvalidArgument));
  PrintStandinCalls(h);
  return 0;
}

int Local(const char* lib, const char* user) {
  // A framework loads NCCL privately, then its own library calls NCCL.
  void* h = Load(lib, RTLD_NOW | RTLD_LOCAL);
  void* u = Load(user, RTLD_NOW | RTLD_LOCAL);
  auto run = reinterpret_cast<int (*)(void)>(dlsym(u, "nccl_user_run"));
  if (run == nullptr) return 3;
  std::printf("user=%d\n", run());
  PrintStandinCalls(h);
  return 0;
}

int Threads(const char* lib, int threads, int ops) {
  void* h = Load(lib, RTLD_NOW | RTLD_GLOBAL);
  std::vector<ncclComm_t> comms(threads);
  for (auto& c : comms) c = NewComm();
  std::vector<int> failures(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<int64_t> a(32, t), b(32);
      for (int i = 0; i < ops; ++i) {
        trirace::TagScope scope(trirace::Tag().Layer(t).MicroBatch(i));
        ncclResult_t r = i % 2 == 0 ? NCCL(ncclAllReduce)(a.data(), b.data(), a.size(), ncclInt64, ncclSum, comms[t],
                                                          nullptr)
                                    : NCCL(ncclAllGather)(a.data(), b.data(), a.size(), ncclInt64, comms[t], nullptr);
        if (r != ncclSuccess || b[0] != t) ++failures[t];
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) std::printf("thread %d failures=%d\n", t, failures[t]);
  for (auto& c : comms) std::printf("rc CommDestroy=%d\n", NCCL(ncclCommDestroy)(c));
  PrintStandinCalls(h);
  return 0;
}

int Many(const char* lib, int ops) {
  Load(lib, RTLD_NOW | RTLD_GLOBAL);
  ncclComm_t comm = NewComm();
  int32_t x = 1, y = 0;
  int bad = 0;
  auto allreduce = NCCL(ncclAllReduce);
  for (int i = 0; i < ops; ++i) bad += allreduce(&x, &y, 1, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess;
  std::printf("many failures=%d\n", bad);
  std::printf("rc CommDestroy=%d\n", NCCL(ncclCommDestroy)(comm));
  return 0;
}

// Comms created under declared roles (trirace_set_new_comm_role): prints,
// per creation, which init the library saw and the trafficClass it got.
int Roles(const char* lib) {
  void* h = Load(lib, RTLD_NOW | RTLD_GLOBAL);
  auto calls = reinterpret_cast<uint64_t (*)(const char*)>(dlsym(h, "standin_calls"));
  auto last = reinterpret_cast<int (*)(const char*)>(dlsym(h, "standin_last_traffic_class"));
  if (calls == nullptr || last == nullptr) return 3;
  auto text = [](int tc) { return tc == NCCL_CONFIG_UNDEF_INT ? std::string("undef") : std::to_string(tc); };
  auto report = [&](const char* what, ncclResult_t r, const char* call) {
    std::printf("roles %s rc=%d InitRank=%llu InitRankConfig=%llu tc=%s\n", what, r,
                static_cast<unsigned long long>(calls("CommInitRank")),
                static_cast<unsigned long long>(calls("CommInitRankConfig")), text(last(call)).c_str());
  };
  ncclUniqueId id;
  NCCL(ncclGetUniqueId)(&id);
  std::vector<ncclComm_t> comms(6, nullptr);
  {
    trirace::CommRoleScope pipeline(TRIRACE_ROLE_PIPELINE);
    report("init-pipeline", NCCL(ncclCommInitRank)(&comms[0], 1, id, 0), "CommInitRankConfig");
  }
  int previous = -1;
  const int set = trirace_set_new_comm_role(TRIRACE_ROLE_DATA_PARALLEL, &previous);
  std::printf("roles set rc=%d previous=%d\n", set, previous);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  report("config-data-parallel", NCCL(ncclCommInitRankConfig)(&comms[1], 1, id, 0, &config), "CommInitRankConfig");
  ncclConfig_t own = NCCL_CONFIG_INITIALIZER;
  own.trafficClass = 7;
  report("config-own-class", NCCL(ncclCommInitRankConfig)(&comms[2], 1, id, 0, &own), "CommInitRankConfig");
  std::printf("config after: trafficClass=%s\n", text(config.trafficClass).c_str());
  trirace_set_new_comm_role(TRIRACE_ROLE_EXPERT, nullptr);
  ncclConfig_t split = NCCL_CONFIG_INITIALIZER;
  report("split-expert", NCCL(ncclCommSplit)(comms[0], 0, 0, &comms[3], &split), "CommSplit");
  report("split-no-config", NCCL(ncclCommSplit)(comms[0], 0, 0, &comms[4], nullptr), "CommSplit");
  std::printf("roles bad rc=%d\n", trirace_set_new_comm_role(9, nullptr));
  trirace_set_new_comm_role(TRIRACE_ROLE_UNKNOWN, nullptr);
  report("init-no-role", NCCL(ncclCommInitRank)(&comms[5], 1, id, 0), "CommInitRankConfig");
  for (ncclComm_t c : comms) {
    if (c != nullptr) NCCL(ncclCommDestroy)(c);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "version") return Version();
  if (what == "real" && argc > 2) return Real(argv[2]);
  if (what == "basic" && argc > 2) return Basic(argv[2]);
  if (what == "local" && argc > 3) return Local(argv[2], argv[3]);
  if (what == "threads" && argc > 4) return Threads(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  if (what == "many" && argc > 3) return Many(argv[2], std::atoi(argv[3]));
  if (what == "roles" && argc > 2) return Roles(argv[2]);
  std::fprintf(stderr,
               "usage: nccl_probe version|real LIB|basic LIB|local LIB USER|threads LIB N OPS|many LIB OPS|roles LIB\n");
  return 2;
}
