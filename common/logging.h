// Logging in the style of NCCL_DEBUG.
//
//   TRIRACE_DEBUG=NONE|WARN|INFO|TRACE   level (WARN by default)
//   TRIRACE_DEBUG_SUBSYS=INIT,NET,...     subsystems; ^NET,TOPO = all but those
//   TRIRACE_DEBUG_FILE=/tmp/tr.%h.%p.log  file instead of stderr (%h host, %p pid)
//
// Each line reads `host:pid:tid TriRace LEVEL SUBSYS message`. Lines are
// written with one write(2) each, so lines from several threads or
// processes sharing a file do not interleave.
//
// Usage:
//   TRIRACE_WARN(NET, "connect to %s failed: %s", addr, status.ToString());
//   TRIRACE_INFO(INIT, "NCCL %d found at %s", version, path);
//   TRIRACE_WARN_ONCE(INTERPOSE, "falling back to passthrough: %s", why);
// Arguments use absl::StrFormat syntax, checked at compile time, and are
// evaluated only when the line is enabled.
//
// A component loaded as an NCCL plugin routes its lines through NCCL's
// logger by installing a sink (SetSink); the level and subsystem filters
// above still apply first.
//
// Thread safety: all functions are thread-safe. Enabled() is two relaxed
// atomic loads after the first call.
#ifndef TRIRACE_COMMON_LOGGING_H_
#define TRIRACE_COMMON_LOGGING_H_

#include <atomic>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "common/params.h"

namespace trirace {

// LogLevel (kNONE, kWARN, kINFO, kTRACE) is TRIRACE_DEBUG's enum type,
// declared with its choices in common/param_choices.inc.

// Subsystem bits for TRIRACE_DEBUG_SUBSYS.
enum class Subsys : uint32_t {
  kINIT = 1u << 0,
  kNET = 1u << 1,
  kSCHED = 1u << 2,
  kTOPO = 1u << 3,
  kINTERPOSE = 1u << 4,
  kTRACE = 1u << 5,
  kALL = ~0u,
};

absl::string_view LogLevelName(LogLevel level);
absl::string_view SubsysName(Subsys subsys);

namespace log {

// Parses a TRIRACE_DEBUG_SUBSYS value into a mask; the error names the
// unknown subsystem and lists the accepted ones.
absl::StatusOr<uint32_t> ParseSubsysMask(absl::string_view text);

// True when a line of this level and subsystem would be written.
bool Enabled(LogLevel level, Subsys subsys);

// Writes one line (no trailing newline needed). Prefer the macros.
void Write(LogLevel level, Subsys subsys, const char* file, int line, absl::string_view message);
// Writes one line labelled NOTE where Enabled(kWARN, subsys): what every
// user should see once, that is not a problem (the shim's start-up verdict).
// A sink gets it as a kWARN line: NCCL's logger has no NOTE.
void WriteNote(Subsys subsys, const char* file, int line, absl::string_view message);

// A sink replaces the default writer (stderr or TRIRACE_DEBUG_FILE). `ctx`
// is passed back unchanged. Pass nullptr to restore the default. The sink
// must be thread-safe and must not log.
using SinkFn = void (*)(void* ctx, LogLevel level, Subsys subsys, const char* file, int line,
                        absl::string_view message);
void SetSink(SinkFn sink, void* ctx);

// Re-reads the level, subsystems and file from Params. Tests only.
void ReconfigureForTesting();

}  // namespace log
}  // namespace trirace

#define TRIRACE_LOG(level, subsys, ...)                                                   \
  do {                                                                                    \
    if (::trirace::log::Enabled(::trirace::LogLevel::k##level, ::trirace::Subsys::k##subsys)) { \
      ::trirace::log::Write(::trirace::LogLevel::k##level, ::trirace::Subsys::k##subsys,  \
                            __FILE__, __LINE__, ::absl::StrFormat(__VA_ARGS__));          \
    }                                                                                     \
  } while (0)

#define TRIRACE_WARN(subsys, ...) TRIRACE_LOG(WARN, subsys, __VA_ARGS__)
// At the default level, labelled NOTE (log::WriteNote).
#define TRIRACE_NOTE(subsys, ...)                                                              \
  do {                                                                                         \
    if (::trirace::log::Enabled(::trirace::LogLevel::kWARN, ::trirace::Subsys::k##subsys)) {   \
      ::trirace::log::WriteNote(::trirace::Subsys::k##subsys, __FILE__, __LINE__,              \
                                ::absl::StrFormat(__VA_ARGS__));                               \
    }                                                                                          \
  } while (0)
#define TRIRACE_INFO(subsys, ...) TRIRACE_LOG(INFO, subsys, __VA_ARGS__)
#define TRIRACE_TRACE(subsys, ...) TRIRACE_LOG(TRACE, subsys, __VA_ARGS__)

// Logs at `level` the first time this line is reached in the process.
#define TRIRACE_LOG_ONCE(level, subsys, ...)                          \
  do {                                                                \
    static std::atomic<bool> _trirace_logged{false};                  \
    if (!_trirace_logged.exchange(true, std::memory_order_relaxed)) { \
      TRIRACE_LOG(level, subsys, __VA_ARGS__);                        \
    }                                                                 \
  } while (0)

#define TRIRACE_WARN_ONCE(subsys, ...) TRIRACE_LOG_ONCE(WARN, subsys, __VA_ARGS__)
#define TRIRACE_INFO_ONCE(subsys, ...) TRIRACE_LOG_ONCE(INFO, subsys, __VA_ARGS__)

#endif  // TRIRACE_COMMON_LOGGING_H_
