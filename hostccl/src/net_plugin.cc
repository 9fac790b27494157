#include "hostccl/src/net_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/status.h"

namespace trirace::hostccl {
namespace {

constexpr char kDefaultPlugin[] = "libnccl-net-trirace.so";

// The logger handed to the plugin: NCCL's printf-style callback, routed into
// TriRace's logging so TRIRACE_DEBUG filters it like hostccl's own lines.
void PluginLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                  const char* fmt, ...) {
  LogLevel lvl = level == NCCL_LOG_WARN ? LogLevel::kWARN
                 : level == NCCL_LOG_INFO ? LogLevel::kINFO
                 : level == NCCL_LOG_TRACE ? LogLevel::kTRACE
                                           : LogLevel::kNONE;
  if (lvl == LogLevel::kNONE) return;
  Subsys subsys = (flags & NCCL_NET) != 0 ? Subsys::kNET : Subsys::kINIT;
  if (!log::Enabled(lvl, subsys)) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  log::Write(lvl, subsys, file != nullptr ? file : "plugin", line, buf);
}

// The folder holding this library (hostccl's libnccl.so.2).
std::string OwnDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&OwnDirectory), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  if (path.find('/') == std::string::npos) {
    // Linked into the main program: use its own path.
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
  }
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::vector<std::string> Candidates(std::string* described) {
  std::vector<std::string> files;
  const char* env = std::getenv("NCCL_NET_PLUGIN");
  if (env == nullptr || *env == '\0') {
    std::string dir = OwnDirectory();
    if (!dir.empty()) {
      // Install layout: <libdir>/hostccl/libnccl.so.2 next to <libdir>/;
      // build layout: <build>/hostccl/lib/ next to <build>/lib/.
      files.push_back(absl::StrCat(dir, "/../", kDefaultPlugin));
      files.push_back(absl::StrCat(dir, "/../../lib/", kDefaultPlugin));
      files.push_back(absl::StrCat(dir, "/../lib/", kDefaultPlugin));  // linked into a program in bin/
      files.push_back(absl::StrCat(dir, "/", kDefaultPlugin));
    }
    files.push_back(kDefaultPlugin);
    *described = "NCCL_NET_PLUGIN unset: the TriRace TCP plugin";
    return files;
  }
  *described = absl::StrCat("NCCL_NET_PLUGIN=", env);
  for (absl::string_view name : absl::StrSplit(env, ',', absl::SkipWhitespace())) {
    files.emplace_back(name);
    files.push_back(absl::StrCat("libnccl-net-", name, ".so"));
  }
  return files;
}

}  // namespace

absl::Status PluginStatus(ncclResult_t result, const char* call) {
  switch (result) {
    case ncclSuccess:
      return absl::OkStatus();
    case ncclRemoteError:
      return RemoteError(absl::StrCat("net plugin ", call, ": remote process exited or network error"));
    case ncclInternalError:
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return InternalError(absl::StrCat("net plugin ", call, " failed with ncclResult_t ", result));
    default:
      return absl::UnknownError(absl::StrCat("net plugin ", call, " failed with ncclResult_t ", result));
  }
}

absl::StatusOr<NetPlugin*> NetPlugin::Get() {
  static std::once_flag once;
  static absl::StatusOr<NetPlugin*>* result = nullptr;
  std::call_once(once, [] { result = new absl::StatusOr<NetPlugin*>(Load()); });
  return *result;
}

absl::StatusOr<NetPlugin*> NetPlugin::Load() {
  const char* env = std::getenv("NCCL_NET_PLUGIN");
  if (env != nullptr && absl::string_view(env) == "none") {
    return absl::FailedPreconditionError(
        "NCCL_NET_PLUGIN=none disables net plugins, but hostccl has no internal transport: unset "
        "NCCL_NET_PLUGIN (TriRace TCP plugin) or name a plugin");
  }
  std::string described;
  std::vector<std::string> files = Candidates(&described);
  std::vector<std::string> errors;
  for (const std::string& file : files) {
    auto* plugin = new NetPlugin();
    absl::Status s = plugin->TryLibrary(file);
    if (s.ok()) {
      TRIRACE_INFO(INIT, "hostccl: net plugin '%s' (ncclNetPlugin_v%d) from %s", plugin->name_,
                   plugin->version_, plugin->path_);
      return plugin;
    }
    errors.push_back(std::string(s.message()));
    delete plugin;
  }
  return absl::FailedPreconditionError(absl::StrCat("hostccl: no usable net plugin (", described,
                                                    "); tried: ", absl::StrJoin(errors, "; ")));
}

absl::Status NetPlugin::TryLibrary(const std::string& file) {
  dl_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl_ == nullptr) {
    const char* why = dlerror();
    return absl::NotFoundError(why != nullptr ? why : absl::StrCat(file, ": dlopen failed"));
  }
  path_ = file;
  if ((v11_ = static_cast<const ncclNet_v11_t*>(dlsym(dl_, TRIRACE_NCCL_NET_SYMBOL_V11))) != nullptr) {
    version_ = 11;
  } else if ((v10_ = static_cast<const ncclNet_v10_t*>(dlsym(dl_, TRIRACE_NCCL_NET_SYMBOL_V10))) != nullptr) {
    version_ = 10;
  } else if ((v9_ = static_cast<const ncclNet_v9_t*>(dlsym(dl_, TRIRACE_NCCL_NET_SYMBOL_V9))) != nullptr) {
    version_ = 9;
  } else if ((v8_ = static_cast<const ncclNet_v8_t*>(dlsym(dl_, TRIRACE_NCCL_NET_SYMBOL_V8))) != nullptr) {
    version_ = 8;
  }
  absl::Status s = version_ == 0
                       ? absl::NotFoundError(absl::StrCat(file, ": exports no ncclNetPlugin_v8..v11 table"))
                       : Initialize();
  if (!s.ok()) {
    dlclose(dl_);
    dl_ = nullptr;
  }
  return s;
}

absl::Status NetPlugin::Initialize() {
  int ndev = 0;
  ncclResult_t rc = ncclSuccess;
  void* probe = nullptr;
  if (v11_ != nullptr) {
    name_ = v11_->name;
    ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
    rc = v11_->init(&probe, 0, &config, PluginLogger, nullptr);
    if (rc == ncclSuccess) rc = v11_->devices(&ndev);
  } else if (v10_ != nullptr) {
    name_ = v10_->name;
    rc = v10_->init(PluginLogger, nullptr);
    if (rc == ncclSuccess) rc = v10_->devices(&ndev);
  } else if (v9_ != nullptr) {
    name_ = v9_->name;
    rc = v9_->init(PluginLogger);
    if (rc == ncclSuccess) rc = v9_->devices(&ndev);
  } else {
    name_ = v8_->name;
    rc = v8_->init(PluginLogger);
    if (rc == ncclSuccess) rc = v8_->devices(&ndev);
  }
  if (rc != ncclSuccess) return absl::UnavailableError(absl::StrFormat("%s: init failed (%d)", path_, rc));
  if (ndev <= 0) return absl::UnavailableError(absl::StrFormat("%s: plugin '%s' has no devices", path_, name_));

  ncclNetProperties_v11_t props{};
  if (v11_ != nullptr) {
    rc = v11_->getProperties(dev_, &props);
  } else {
    ncclNetProperties_v10_t p10{};
    ncclNetProperties_v8_t p8{};
    rc = v10_ != nullptr ? v10_->getProperties(dev_, &p10)
         : v9_ != nullptr ? v9_->getProperties(dev_, &p10)
                          : v8_->getProperties(dev_, &p8);
    if (v8_ != nullptr) {
      props.name = p8.name;
      props.ptrSupport = p8.ptrSupport;
      p10.maxP2pBytes = p10.maxCollBytes = INT_MAX;
    } else {
      props.name = p10.name;
      props.ptrSupport = p10.ptrSupport;
    }
    props.maxP2pBytes = p10.maxP2pBytes;
    props.maxCollBytes = p10.maxCollBytes;
  }
  if (probe != nullptr && v11_->finalize != nullptr) v11_->finalize(probe);
  if (rc != ncclSuccess) return absl::UnavailableError(absl::StrFormat("%s: getProperties failed (%d)", path_, rc));
  if ((props.ptrSupport & NCCL_PTR_HOST) == 0) {
    return absl::UnavailableError(absl::StrFormat("%s: device 0 does not support host memory", path_));
  }
  device_.name = props.name != nullptr ? props.name : "";
  device_.ptr_support = props.ptrSupport;
  size_t max_bytes = props.maxP2pBytes;
  if (props.maxCollBytes != 0 && props.maxCollBytes < max_bytes) max_bytes = props.maxCollBytes;
  device_.max_message_bytes = max_bytes == 0 ? static_cast<size_t>(INT_MAX) : max_bytes;
  return absl::OkStatus();
}

absl::StatusOr<void*> NetPlugin::InitContext(uint64_t comm_id, int traffic_class) {
  if (v11_ == nullptr) return nullptr;
  ncclNetCommConfig_v11_t config{traffic_class};
  void* ctx = nullptr;
  TRIRACE_RETURN_IF_ERROR(PluginStatus(v11_->init(&ctx, comm_id, &config, PluginLogger, nullptr), "init"));
  return ctx;
}

void NetPlugin::FinalizeContext(void* ctx) {
  if (v11_ != nullptr && ctx != nullptr && v11_->finalize != nullptr) v11_->finalize(ctx);
}

absl::Status NetPlugin::Listen(void* ctx, void* handle, void** listen_comm) {
  ncclResult_t rc = v11_   ? v11_->listen(ctx, dev_, handle, listen_comm)
                    : v10_ ? v10_->listen(dev_, handle, listen_comm)
                    : v9_  ? v9_->listen(dev_, handle, listen_comm)
                           : v8_->listen(dev_, handle, listen_comm);
  return PluginStatus(rc, "listen");
}

absl::Status NetPlugin::Connect(void* ctx, int traffic_class, void* handle, void** send_comm) {
  ncclNetDeviceHandle_v11_t* dev_comm = nullptr;
  ncclNetCommConfig_v10_t config{traffic_class};
  ncclResult_t rc = v11_   ? v11_->connect(ctx, dev_, handle, send_comm, &dev_comm)
                    : v10_ ? v10_->connect(dev_, &config, handle, send_comm, &dev_comm)
                    : v9_  ? v9_->connect(dev_, handle, send_comm, &dev_comm)
                           : v8_->connect(dev_, handle, send_comm, &dev_comm);
  return PluginStatus(rc, "connect");
}

absl::Status NetPlugin::Accept(void* listen_comm, void** recv_comm) {
  ncclNetDeviceHandle_v11_t* dev_comm = nullptr;
  ncclResult_t rc = v11_   ? v11_->accept(listen_comm, recv_comm, &dev_comm)
                    : v10_ ? v10_->accept(listen_comm, recv_comm, &dev_comm)
                    : v9_  ? v9_->accept(listen_comm, recv_comm, &dev_comm)
                           : v8_->accept(listen_comm, recv_comm, &dev_comm);
  return PluginStatus(rc, "accept");
}

absl::Status NetPlugin::RegMr(void* comm, void* data, size_t size, void** mhandle) {
  ncclResult_t rc = v11_   ? v11_->regMr(comm, data, size, NCCL_PTR_HOST, mhandle)
                    : v10_ ? v10_->regMr(comm, data, size, NCCL_PTR_HOST, mhandle)
                    : v9_  ? v9_->regMr(comm, data, size, NCCL_PTR_HOST, mhandle)
                           : v8_->regMr(comm, data, size, NCCL_PTR_HOST, mhandle);
  return PluginStatus(rc, "regMr");
}

void NetPlugin::DeregMr(void* comm, void* mhandle) {
  if (v11_) v11_->deregMr(comm, mhandle);
  else if (v10_) v10_->deregMr(comm, mhandle);
  else if (v9_) v9_->deregMr(comm, mhandle);
  else v8_->deregMr(comm, mhandle);
}

absl::Status NetPlugin::Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                              void** request) {
  ncclResult_t rc;
  if (v11_) rc = v11_->isend(send_comm, data, size, tag, mhandle, nullptr, request);
  else if (v10_) rc = v10_->isend(send_comm, data, size, tag, mhandle, nullptr, request);
  else if (v9_) rc = v9_->isend(send_comm, data, size, tag, mhandle, request);
  else rc = v8_->isend(send_comm, data, static_cast<int>(size), tag, mhandle, request);
  return PluginStatus(rc, "isend");
}

absl::Status NetPlugin::Irecv(void* recv_comm, void* data, size_t size, int tag, void* mhandle,
                              void** request) {
  ncclResult_t rc;
  void* phandle = nullptr;
  if (v11_) rc = v11_->irecv(recv_comm, 1, &data, &size, &tag, &mhandle, &phandle, request);
  else if (v10_) rc = v10_->irecv(recv_comm, 1, &data, &size, &tag, &mhandle, &phandle, request);
  else if (v9_) rc = v9_->irecv(recv_comm, 1, &data, &size, &tag, &mhandle, request);
  else {
    int isize = static_cast<int>(size);
    rc = v8_->irecv(recv_comm, 1, &data, &isize, &tag, &mhandle, request);
  }
  return PluginStatus(rc, "irecv");
}

absl::Status NetPlugin::Test(void* request, bool* done, size_t* size) {
  int d = 0;
  int s = 0;
  ncclResult_t rc = v11_   ? v11_->test(request, &d, &s)
                    : v10_ ? v10_->test(request, &d, &s)
                    : v9_  ? v9_->test(request, &d, &s)
                           : v8_->test(request, &d, &s);
  *done = d != 0;
  if (size != nullptr) *size = static_cast<size_t>(s);
  return PluginStatus(rc, "test");
}

void NetPlugin::SetTransferKind(void* ctx, int nccl_func) {
  if (v11_ == nullptr || v11_->setNetAttr == nullptr || ctx == nullptr) return;
  ncclNetAttr_v11_t attr;
  attr.sendCommAttr = {NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF};
  attr.recvCommAttr = attr.sendCommAttr;
  attr.op = 1u << nccl_func;
  attr.algo = static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF);
  attr.proto = static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF);
  v11_->setNetAttr(ctx, &attr);
}

void NetPlugin::CloseSend(void* comm) {
  if (v11_) v11_->closeSend(comm);
  else if (v10_) v10_->closeSend(comm);
  else if (v9_) v9_->closeSend(comm);
  else v8_->closeSend(comm);
}

void NetPlugin::CloseRecv(void* comm) {
  if (v11_) v11_->closeRecv(comm);
  else if (v10_) v10_->closeRecv(comm);
  else if (v9_) v9_->closeRecv(comm);
  else v8_->closeRecv(comm);
}

void NetPlugin::CloseListen(void* comm) {
  if (v11_) v11_->closeListen(comm);
  else if (v10_) v10_->closeListen(comm);
  else if (v9_) v9_->closeListen(comm);
  else v8_->closeListen(comm);
}

}  // namespace trirace::hostccl
