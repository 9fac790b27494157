// Who and where this process is: host name, pid, thread id, and the
// expansion of %h / %p / %r in file name patterns (TRIRACE_DEBUG_FILE,
// TRIRACE_TRACE).
//
// Thread safety: all functions are thread-safe.
#ifndef TRIRACE_COMMON_PROCESS_INFO_H_
#define TRIRACE_COMMON_PROCESS_INFO_H_

#include <optional>
#include <string>
#include "absl/strings/string_view.h"

namespace trirace {

// The host name up to the first '.', as NCCL prints it.
const std::string& HostName();
// The kernel thread id of the calling thread (cached per thread).
int ThreadId();

struct PatternValues {
  std::string host;
  int pid = 0;
  std::optional<int> rank;  // %r stays literal when unset
};

// Replaces %h with the host, %p with the pid, %r with the rank and %% with %.
// Any other %x is kept as written.
std::string ExpandPathPattern(absl::string_view pattern, const PatternValues& values);
// The same with this process's host and pid.
std::string ExpandPathPattern(absl::string_view pattern, std::optional<int> rank = std::nullopt);

}  // namespace trirace

#endif  // TRIRACE_COMMON_PROCESS_INFO_H_
