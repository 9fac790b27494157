#include "topology/discovery/spec_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "topology/affinity.h"
#include "topology/discovery/json_spec.h"

namespace trirace::topo {
namespace {

constexpr absl::string_view kAccepted =
    "accepted: a TriRace JSON spec (docs/topology.md), an NCCL topology XML (root <system>) or an hwloc XML "
    "export (root <topology>)";

absl::StatusOr<std::string> ReadTopologyTextImpl(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(absl::StrCat(path, ": permission denied"));
    return SystemError(absl::StrCat("opening ", path), err);
  }
  std::string text;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": a directory, expected a topology file"));
  }
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int err = errno;
      close(fd);
      return SystemError(absl::StrCat("reading ", path), err);
    }
  }
  close(fd);
  return text;
}

// The name of the first element of XML `text` (past the declaration,
// comments and a DOCTYPE), or "" when there is none.
std::string RootElement(absl::string_view text) {
  for (;;) {
    text = absl::StripLeadingAsciiWhitespace(text);
    if (!absl::ConsumePrefix(&text, "<")) return "";
    absl::string_view close = ">";
    if (absl::StartsWith(text, "?")) {
      close = "?>";
    } else if (absl::StartsWith(text, "!--")) {
      close = "-->";
    } else if (!absl::StartsWith(text, "!")) {
      size_t end = 0;
      while (end < text.size() && !absl::ascii_isspace(text[end]) && text[end] != '>' && text[end] != '/') ++end;
      return std::string(text.substr(0, end));
    }
    const size_t end = text.find(close);
    if (end == absl::string_view::npos) return "";
    text.remove_prefix(end + close.size());
  }
}

}  // namespace

absl::StatusOr<std::string> ReadTopologyText(const std::string& path) { return ReadTopologyTextImpl(path); }

absl::StatusOr<TopologyFormat> DetectTopologyFormat(absl::string_view text, const std::string& path) {
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");  // a UTF-8 byte-order mark some editors write
  const absl::string_view body = absl::StripLeadingAsciiWhitespace(text);
  if (body.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": empty file (", kAccepted, ")"));
  if (body.front() == '{') return TopologyFormat::kJsonSpec;
  if (body.front() != '<') {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a topology file TriRace reads (", kAccepted, ")"));
  }
  const std::string root = RootElement(body);
  if (root == "system") return TopologyFormat::kNcclXml;
  if (root == "topology") return TopologyFormat::kHwlocXml;
  return absl::InvalidArgumentError(absl::StrCat(path, ": XML with root <", root.empty() ? "?" : root,
                                                 ">, not a topology file TriRace reads (", kAccepted, ")"));
}

absl::StatusOr<System> LoadTopologySpec(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTopologyText(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<TopologyFormat> format = DetectTopologyFormat(*text, path);
  if (!format.ok()) return format.status();
  if (*format != TopologyFormat::kJsonSpec) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": an ", *format == TopologyFormat::kNcclXml ? "NCCL topology XML" : "hwloc XML export",
        "; here a TriRace JSON spec is needed: convert it with `trirace topo --from ", path, " --spec > spec.json`"));
  }
  absl::StatusOr<System> sys = ParseJsonSpec(*text, path);
  if (!sys.ok()) return sys.status();
  for (Host& h : sys->hosts) AssignNics(h);
  return sys;
}

}  // namespace trirace::topo
