// Routes TriRace log lines through the logger NCCL hands to a net plugin's
// init, so they appear in NCCL_DEBUG output with NCCL's prefix and file.
// The TRIRACE_DEBUG level/subsystem filters still apply first.
//
// Thread safety: InstallNcclLogSink is thread-safe; the first logger wins
// (NCCL passes the same one to every init).
#ifndef TRIRACE_PLUGIN_CORE_NCCL_LOG_SINK_H_
#define TRIRACE_PLUGIN_CORE_NCCL_LOG_SINK_H_

#include "plugin/abi/net_abi.h"

namespace trirace::net {

void InstallNcclLogSink(ncclDebugLogger_t logger);

}  // namespace trirace::net

#endif  // TRIRACE_PLUGIN_CORE_NCCL_LOG_SINK_H_
