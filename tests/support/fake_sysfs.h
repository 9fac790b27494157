// A fake /sys/class/net for tests of readers of interface counters.
#ifndef TRIRACE_TESTS_SUPPORT_FAKE_SYSFS_H_
#define TRIRACE_TESTS_SUPPORT_FAKE_SYSFS_H_

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "support/subprocess.h"

namespace testing_support {

// A fake /sys/class/net with statistics files that can be rewritten in place
// (same inode, as sysfs counters are).
class FakeSysfs {
 public:
  FakeSysfs() : root_(MakeTempDir("trirace-sysfs-")) {}
  ~FakeSysfs() { std::filesystem::remove_all(root_); }
  void Set(const std::string& iface, uint64_t tx, uint64_t rx) {
    std::filesystem::create_directories(root_ + "/" + iface + "/statistics");
    Write(root_ + "/" + iface + "/statistics/tx_bytes", tx);
    Write(root_ + "/" + iface + "/statistics/rx_bytes", rx);
  }
  void WriteRaw(const std::string& path, const std::string& text) {
    const int fd = ::open((root_ + "/" + path).c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  const std::string& root() const { return root_; }

 private:
  static void Write(const std::string& path, uint64_t v) {
    const std::string text = std::to_string(v) + "\n";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  std::string root_;
};

}  // namespace testing_support

#endif  // TRIRACE_TESTS_SUPPORT_FAKE_SYSFS_H_
