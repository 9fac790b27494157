// Stable hashes: the same value on every rank, host and run, for ids that
// ranks must agree on (communicator ids, tokens) and for wire checksums.
// FNV-1a, 64 and 32 bits, over bytes; the 64-bit form chains, so a hash of
// several fields is Fnv1a64(b, nb, Fnv1a64(a, na)).
//
//   uint64_t id = Fnv1a64Text(text);                   // a string
//   uint64_t h = Fnv1a64Value(parent_id);              // one value's bytes
//   h = Fnv1a64Value(split_index, h);                  // chained
//
// Not for hash tables (absl::Hash is faster and salted) and not
// cryptographic. Header-only, so programs built without trirace_common (test
// rank programs) use the same one.
//
// Thread safety: pure functions.
#ifndef TRIRACE_COMMON_HASH_H_
#define TRIRACE_COMMON_HASH_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace trirace {

inline constexpr uint64_t kFnv1a64Offset = 14695981039346656037ull;
inline constexpr uint64_t kFnv1a64Prime = 1099511628211ull;
inline constexpr uint32_t kFnv1a32Offset = 2166136261u;
inline constexpr uint32_t kFnv1a32Prime = 16777619u;

// FNV-1a 64 of `n` bytes at `data`, continuing from `h`.
inline uint64_t Fnv1a64(const void* data, size_t n, uint64_t h = kFnv1a64Offset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnv1a64Prime;
  return h;
}

// The bytes of `text` (named apart from the overload above, which a string
// literal and a hash would otherwise pick).
inline uint64_t Fnv1a64Text(std::string_view text, uint64_t h = kFnv1a64Offset) {
  return Fnv1a64(text.data(), text.size(), h);
}

// The bytes of one value with no padding (an integer, an id).
template <typename T>
inline uint64_t Fnv1a64Value(const T& value, uint64_t h = kFnv1a64Offset) {
  static_assert(std::is_trivially_copyable_v<T> && std::has_unique_object_representations_v<T>,
                "hash values whose bytes are all significant");
  return Fnv1a64(&value, sizeof(value), h);
}

// FNV-1a 32 of `n` bytes at `data` (wire checksums).
inline uint32_t Fnv1a32(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t h = kFnv1a32Offset;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnv1a32Prime;
  return h;
}

}  // namespace trirace

#endif  // TRIRACE_COMMON_HASH_H_
