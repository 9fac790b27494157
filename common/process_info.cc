#include "common/process_info.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace trirace {

const std::string& HostName() {
  static const std::string name = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0) return std::string("unknown-host");
    std::string s(buf);
    if (size_t dot = s.find('.'); dot != std::string::npos) s.resize(dot);
    return s.empty() ? std::string("unknown-host") : s;
  }();
  return name;
}

int ThreadId() {
  thread_local const int tid = static_cast<int>(syscall(SYS_gettid));
  return tid;
}

std::string ExpandPathPattern(absl::string_view pattern, const PatternValues& values) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out.push_back(pattern[i]);
      continue;
    }
    const char c = pattern[i + 1];
    if (c == 'h') {
      out += values.host;
    } else if (c == 'p') {
      absl::StrAppend(&out, values.pid);
    } else if (c == 'r' && values.rank.has_value()) {
      absl::StrAppend(&out, *values.rank);
    } else if (c == '%') {
      out.push_back('%');
    } else {
      out.push_back('%');
      out.push_back(c);
    }
    ++i;
  }
  return out;
}

std::string ExpandPathPattern(absl::string_view pattern, std::optional<int> rank) {
  return ExpandPathPattern(pattern, PatternValues{HostName(), static_cast<int>(getpid()), rank});
}

}  // namespace trirace
