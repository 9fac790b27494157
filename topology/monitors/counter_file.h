// CounterFile: a sysfs counter file kept open and re-read from offset 0 —
// one pread(2) per sample. The RAII handle the monitors share.
//
// Thread safety: Read() is const and uses pread: safe from several threads.
#ifndef TRIRACE_TOPOLOGY_MONITORS_COUNTER_FILE_H_
#define TRIRACE_TOPOLOGY_MONITORS_COUNTER_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace trirace::topo {

class CounterFile {
 public:
  // Opens `path`; the error names it and errno.
  static absl::StatusOr<CounterFile> Open(std::string path);

  CounterFile(CounterFile&& o) noexcept;
  CounterFile& operator=(CounterFile&& o) noexcept;
  CounterFile(const CounterFile&) = delete;
  CounterFile& operator=(const CounterFile&) = delete;
  ~CounterFile();

  // The decimal value in the file now. DataLoss when it holds no number.
  absl::StatusOr<uint64_t> Read() const;
  const std::string& path() const { return path_; }

 private:
  CounterFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void Reset();

  int fd_ = -1;
  std::string path_;
};

}  // namespace trirace::topo

#endif  // TRIRACE_TOPOLOGY_MONITORS_COUNTER_FILE_H_
