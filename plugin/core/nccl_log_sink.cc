#include "plugin/core/nccl_log_sink.h"

#include <atomic>
#include <string>

#include "common/logging.h"

namespace trirace::net {
namespace {

std::atomic<ncclDebugLogger_t> g_logger{nullptr};

void Sink(void* ctx, LogLevel level, Subsys subsys, const char* file, int line,
          absl::string_view message) {
  auto logger = reinterpret_cast<ncclDebugLogger_t>(ctx);
  ncclDebugLogLevel nccl_level = level == LogLevel::kWARN   ? NCCL_LOG_WARN
                                 : level == LogLevel::kINFO ? NCCL_LOG_INFO
                                                            : NCCL_LOG_TRACE;
  unsigned long flags = subsys == Subsys::kINIT ? NCCL_INIT | NCCL_NET : NCCL_NET;
  std::string text = "TriRace " + std::string(message);
  logger(nccl_level, flags, file, line, "%s", text.c_str());
}

}  // namespace

void InstallNcclLogSink(ncclDebugLogger_t logger) {
  ncclDebugLogger_t expected = nullptr;
  if (logger != nullptr && g_logger.compare_exchange_strong(expected, logger)) {
    log::SetSink(&Sink, reinterpret_cast<void*>(logger));
  }
}

}  // namespace trirace::net
