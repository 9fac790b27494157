#include "rendezvous.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "device.h"

namespace hybrid {
namespace {

std::runtime_error PathError(const std::string& path, const std::string& what, int err) {
  return std::runtime_error("--uid-file '" + path + "': " + what + ": " + std::strerror(err));
}

// An fd closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void Publish(const std::string& path, const ncclUniqueId& id) {
  if (access(path.c_str(), F_OK) == 0) {
    throw std::runtime_error("--uid-file '" + path +
                             "' already exists: give each run a fresh path (a stale id would "
                             "make the other ranks wait for a rank 0 that is gone)");
  }
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (fd.get() < 0) throw PathError(tmp, "cannot create", errno);
    if (write(fd.get(), &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) {
      int err = errno;
      unlink(tmp.c_str());
      throw PathError(tmp, "cannot write", err);
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    throw PathError(path, "cannot rename the id into place", err);
  }
}

bool TryRead(const std::string& path, ncclUniqueId* id) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return false;
    throw PathError(path, "cannot open", errno);
  }
  ssize_t n = read(fd.get(), id, sizeof(*id));
  if (n != static_cast<ssize_t>(sizeof(*id))) {
    throw std::runtime_error("--uid-file '" + path + "': holds " + std::to_string(n) +
                             " bytes, expected an ncclUniqueId of " + std::to_string(sizeof(*id)));
  }
  return true;
}

}  // namespace

ncclUniqueId ShareUniqueId(int rank, const std::string& path, int timeout_s) {
  ncclUniqueId id;
  if (rank == 0) {
    CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    Publish(path, id);
    return id;
  }
  // The file appears once; polling costs one failed open() per period.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  auto period = std::chrono::milliseconds(1);
  while (!TryRead(path, &id)) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("--uid-file '" + path + "': rank 0 did not write it within " +
                               std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(period);
    period = std::min(period * 2, std::chrono::milliseconds(20));
  }
  return id;
}

}  // namespace hybrid
