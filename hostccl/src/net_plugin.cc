#include "hostccl/src/net_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
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
    auto plugin = std::unique_ptr<NetPlugin>(new NetPlugin());
    absl::StatusOr<net::NetPlugin> loaded = net::LoadNetPlugin({file});
    if (!loaded.ok()) {
      errors.push_back(std::string(loaded.status().message()));
      continue;
    }
    plugin->loaded_ = *std::move(loaded);
    plugin->api_ = plugin->loaded_.api.get();
    plugin->path_ = file;
    plugin->name_ = plugin->api_->name();
    plugin->version_ = plugin->api_->version();
    if (absl::Status s = plugin->Initialize(); !s.ok()) {
      errors.push_back(std::string(s.message()));
      plugin->loaded_.Unload();
      continue;
    }
    TRIRACE_INFO(INIT, "hostccl: net plugin '%s' (ncclNetPlugin_v%d) from %s", plugin->name_, plugin->version_,
                 plugin->path_);
    return plugin.release();
  }
  return absl::FailedPreconditionError(absl::StrCat("hostccl: no usable net plugin (", described,
                                                    "); tried: ", absl::StrJoin(errors, "; ")));
}

absl::Status NetPlugin::Initialize() {
  int ndev = 0;
  void* probe = nullptr;
  ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
  ncclResult_t rc = api_->Init(&probe, 0, &config, PluginLogger, nullptr);
  if (rc == ncclSuccess) rc = api_->Devices(&ndev);
  if (rc != ncclSuccess) return absl::UnavailableError(absl::StrFormat("%s: init failed (%d)", path_, rc));
  if (ndev <= 0) return absl::UnavailableError(absl::StrFormat("%s: plugin '%s' has no devices", path_, name_));
  ncclNetProperties_v11_t props{};
  rc = api_->GetProperties(dev_, &props);
  if (probe != nullptr) api_->Finalize(probe);
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
  ncclNetCommConfig_v11_t config{traffic_class};
  void* ctx = nullptr;
  TRIRACE_RETURN_IF_ERROR(PluginStatus(api_->Init(&ctx, comm_id, &config, PluginLogger, nullptr), "init"));
  return ctx;
}

void NetPlugin::FinalizeContext(void* ctx) {
  if (ctx != nullptr) api_->Finalize(ctx);
}

absl::Status NetPlugin::Listen(void* ctx, void* handle, void** listen_comm) {
  return PluginStatus(api_->Listen(ctx, dev_, handle, listen_comm), "listen");
}

absl::Status NetPlugin::Connect(void* ctx, int traffic_class, void* handle, void** send_comm) {
  ncclNetDeviceHandle_v11_t* dev_comm = nullptr;
  ncclNetCommConfig_v11_t config{traffic_class};
  return PluginStatus(api_->Connect(ctx, dev_, &config, handle, send_comm, &dev_comm), "connect");
}

absl::Status NetPlugin::Accept(void* listen_comm, void** recv_comm) {
  ncclNetDeviceHandle_v11_t* dev_comm = nullptr;
  return PluginStatus(api_->Accept(listen_comm, recv_comm, &dev_comm), "accept");
}

absl::Status NetPlugin::RegMr(void* comm, void* data, size_t size, void** mhandle) {
  return PluginStatus(api_->RegMr(comm, data, size, NCCL_PTR_HOST, mhandle), "regMr");
}

void NetPlugin::DeregMr(void* comm, void* mhandle) { api_->DeregMr(comm, mhandle); }

absl::Status NetPlugin::Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                              void** request) {
  return PluginStatus(api_->Isend(send_comm, data, size, tag, mhandle, nullptr, request), "isend");
}

absl::Status NetPlugin::Irecv(void* recv_comm, void* data, size_t size, int tag, void* mhandle,
                              void** request) {
  void* phandle = nullptr;
  return PluginStatus(api_->Irecv(recv_comm, 1, &data, &size, &tag, &mhandle, &phandle, request), "irecv");
}

absl::Status NetPlugin::Test(void* request, bool* done, size_t* size) {
  int d = 0;
  int s = 0;
  const ncclResult_t rc = api_->Test(request, &d, &s);
  *done = d != 0;
  if (size != nullptr) *size = static_cast<size_t>(s);
  return PluginStatus(rc, "test");
}

void NetPlugin::SetTransferFunc(void* ctx, int nccl_func) {
  if (ctx == nullptr) return;
  ncclNetAttr_v11_t attr;
  attr.sendCommAttr = {NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF};
  attr.recvCommAttr = attr.sendCommAttr;
  attr.op = 1u << nccl_func;
  attr.algo = static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF);
  attr.proto = static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF);
  api_->SetNetAttr(ctx, &attr);
}

void NetPlugin::CloseSend(void* comm) { api_->CloseSend(comm); }
void NetPlugin::CloseRecv(void* comm) { api_->CloseRecv(comm); }
void NetPlugin::CloseListen(void* comm) { api_->CloseListen(comm); }

}  // namespace trirace::hostccl
