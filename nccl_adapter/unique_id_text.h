// ncclUniqueId as text: how rank programs hand the id to each other on a
// command line or a pipe ("uid <hex>"). Lower-case hex, two digits a byte,
// the whole 128-byte id. Header-only, so rank programs built with nothing
// but nccl.h use the same code.
//
// Thread safety: pure functions.
#ifndef TRIRACE_NCCL_ADAPTER_UNIQUE_ID_TEXT_H_
#define TRIRACE_NCCL_ADAPTER_UNIQUE_ID_TEXT_H_

#include <string>
#include <string_view>

#include "nccl.h"

namespace trirace {

inline std::string UniqueIdToHex(const ncclUniqueId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * sizeof(id.internal));
  for (unsigned char c : id.internal) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

// False (and *id untouched) unless `hex` is exactly a whole id in hex.
inline bool UniqueIdFromHex(std::string_view hex, ncclUniqueId* id) {
  if (hex.size() != 2 * sizeof(id->internal)) return false;
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  ncclUniqueId out;
  for (size_t i = 0; i < sizeof(out.internal); ++i) {
    const int hi = digit(hex[2 * i]);
    const int lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.internal[i] = static_cast<char>(hi * 16 + lo);
  }
  *id = out;
  return true;
}

}  // namespace trirace

#endif  // TRIRACE_NCCL_ADAPTER_UNIQUE_ID_TEXT_H_
