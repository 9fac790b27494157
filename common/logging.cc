#include "common/logging.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/params.h"
#include "common/process_info.h"

namespace trirace {
namespace {

struct SubsysEntry {
  absl::string_view name;
  Subsys bit;
};
constexpr SubsysEntry kSubsystems[] = {
    {"INIT", Subsys::kINIT},   {"NET", Subsys::kNET},
    {"SCHED", Subsys::kSCHED}, {"TOPO", Subsys::kTOPO},
    {"INTERPOSE", Subsys::kINTERPOSE}, {"TRACE", Subsys::kTRACE},
    {"ALL", Subsys::kALL},
};

// -1 until configured from Params.
std::atomic<int> g_level{-1};
std::atomic<uint32_t> g_mask{0};
// Configuration and the sink, not the write path.
ABSL_CONST_INIT absl::Mutex g_config_mutex(absl::kConstInit);
int g_fd ABSL_GUARDED_BY(g_config_mutex) = STDERR_FILENO;
log::SinkFn g_sink ABSL_GUARDED_BY(g_config_mutex) = nullptr;
void* g_sink_ctx ABSL_GUARDED_BY(g_config_mutex) = nullptr;

// Writes all of `data` to `fd`, retrying on EINTR and short writes.
void WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report a failing log write
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Applies Params to the logger; returns the problems to report once the
// configuration lock is released.
std::vector<std::string> ConfigureLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_config_mutex) {
  const Params& params = Params::GetQuiet();
  std::string problems;
  auto mask = log::ParseSubsysMask(params.Value(ParamId::kDebugSubsys).text);
  if (!mask.ok()) {
    problems = absl::StrCat("TRIRACE_DEBUG_SUBSYS: ", mask.status().message(), "; using ALL");
  }
  if (g_fd != STDERR_FILENO) {
    ::close(g_fd);
    g_fd = STDERR_FILENO;
  }
  const std::string& pattern = params.Value(ParamId::kDebugFile).text;
  std::string file_problem;
  if (!pattern.empty()) {
    const std::string path = ExpandPathPattern(pattern);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      g_fd = fd;
    } else {
      file_problem = absl::StrCat("TRIRACE_DEBUG_FILE=\"", pattern, "\": cannot open \"", path,
                                  "\": ", std::strerror(errno), "; logging to stderr");
    }
  }
  g_mask.store(mask.ok() ? *mask : static_cast<uint32_t>(Subsys::kALL), std::memory_order_relaxed);
  // The choice index is the LogLevel value: both come from param_choices.inc.
  g_level.store(params.Value(ParamId::kDebug).choice, std::memory_order_release);
  std::vector<std::string> out;
  if (!problems.empty()) out.push_back(std::move(problems));
  if (!file_problem.empty()) out.push_back(std::move(file_problem));
  return out;
}

void Report(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) {
    if (log::Enabled(LogLevel::kWARN, Subsys::kINIT)) {
      log::Write(LogLevel::kWARN, Subsys::kINIT, __FILE__, __LINE__, p);
    }
  }
}

void EnsureConfigured() {
  if (g_level.load(std::memory_order_acquire) >= 0) return;
  std::vector<std::string> problems;
  {
    absl::MutexLock lock(&g_config_mutex);
    if (g_level.load(std::memory_order_relaxed) < 0) problems = ConfigureLocked();
  }
  Report(problems);
}

}  // namespace

absl::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kNONE: return "NONE";
    case LogLevel::kWARN: return "WARN";
    case LogLevel::kINFO: return "INFO";
    case LogLevel::kTRACE: return "TRACE";
  }
  return "?";
}

absl::string_view SubsysName(Subsys subsys) {
  for (const SubsysEntry& e : kSubsystems) {
    if (e.bit == subsys) return e.name;
  }
  return "?";
}

namespace log {

absl::StatusOr<uint32_t> ParseSubsysMask(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  const bool invert = !body.empty() && body.front() == '^';
  if (invert) body.remove_prefix(1);
  uint32_t mask = 0;
  for (absl::string_view item : absl::StrSplit(body, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    bool known = false;
    for (const SubsysEntry& e : kSubsystems) {
      if (absl::EqualsIgnoreCase(item, e.name)) {
        mask |= static_cast<uint32_t>(e.bit);
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown subsystem \"", item, "\" (accepted: INIT, NET, SCHED, TOPO, INTERPOSE, TRACE, ALL)"));
    }
  }
  if (body.empty() && !invert) mask = static_cast<uint32_t>(Subsys::kALL);
  return invert ? ~mask : mask;
}

bool Enabled(LogLevel level, Subsys subsys) {
  int configured = g_level.load(std::memory_order_acquire);
  if (configured < 0) {
    EnsureConfigured();
    configured = g_level.load(std::memory_order_acquire);
  }
  return static_cast<int>(level) <= configured &&
         (g_mask.load(std::memory_order_relaxed) & static_cast<uint32_t>(subsys)) != 0;
}

namespace {

void WriteLabelled(LogLevel level, absl::string_view label, Subsys subsys, const char* file, int line,
                   absl::string_view message) {
  EnsureConfigured();
  SinkFn sink;
  void* ctx;
  int fd;
  {
    absl::MutexLock lock(&g_config_mutex);
    sink = g_sink;
    ctx = g_sink_ctx;
    fd = g_fd;
  }
  if (sink != nullptr) {
    sink(ctx, level, subsys, file, line, message);
    return;
  }
  std::string out = absl::StrCat(HostName(), ":", getpid(), ":", ThreadId(), " TriRace ", label, " ",
                                 SubsysName(subsys), " ", message);
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  WriteAll(fd, out);
}

}  // namespace

void Write(LogLevel level, Subsys subsys, const char* file, int line, absl::string_view message) {
  WriteLabelled(level, LogLevelName(level), subsys, file, line, message);
}

void WriteNote(Subsys subsys, const char* file, int line, absl::string_view message) {
  WriteLabelled(LogLevel::kWARN, "NOTE", subsys, file, line, message);
}

void SetSink(SinkFn sink, void* ctx) {
  absl::MutexLock lock(&g_config_mutex);
  g_sink = sink;
  g_sink_ctx = ctx;
}

void ReconfigureForTesting() {
  std::vector<std::string> problems;
  {
    absl::MutexLock lock(&g_config_mutex);
    problems = ConfigureLocked();
  }
  Report(problems);
}

}  // namespace log
}  // namespace trirace
