#include "interpose/comm/config_copy.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace trirace::interpose {
namespace {

constexpr unsigned int kConfigMagic = 0xcafebeef;
// size, magic and version: what every ncclConfig_t since 2.14 starts with.
constexpr size_t kHeaderBytes = offsetof(ncclConfig_t, version) + sizeof(unsigned int);

}  // namespace

std::optional<ncclConfig_t> CopyConfig(const ncclConfig_t* caller) {
  ncclConfig_t copy = NCCL_CONFIG_INITIALIZER;
  if (caller == nullptr) return copy;
  if (caller->size < kHeaderBytes || caller->magic != kConfigMagic) return std::nullopt;
  const size_t n = std::min(caller->size, sizeof(ncclConfig_t));
  std::memcpy(&copy, caller, n);
  copy.size = sizeof(ncclConfig_t);
  copy.version = std::max<unsigned int>(caller->version, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  return copy;
}

}  // namespace trirace::interpose
