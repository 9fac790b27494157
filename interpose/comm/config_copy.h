// CopyConfig: the shim's own copy of a caller's ncclConfig_t, for when it
// must change a field (e.g. trafficClass per comm role) without writing to
// the caller's struct.
//
// The copy starts as NCCL_CONFIG_INITIALIZER of the nccl.h the shim was
// built with and takes the first min(caller->size, sizeof(ncclConfig_t))
// bytes of the caller's struct, so a caller built against an older nccl.h
// (a smaller struct) is never read past its end and its missing fields keep
// their "undefined" defaults; a caller built against a newer one has its
// extra fields dropped. size and version describe the copy. In observe mode
// the shim passes the caller's pointer through untouched and never calls
// this.
//
// Thread safety: a pure function.
#ifndef TRIRACE_INTERPOSE_COMM_CONFIG_COPY_H_
#define TRIRACE_INTERPOSE_COMM_CONFIG_COPY_H_

#include <optional>

#include "nccl.h"

namespace trirace::interpose {

// The copy; NCCL_CONFIG_INITIALIZER for a NULL caller. std::nullopt when
// the caller's struct is not an initialised ncclConfig_t (wrong magic or a
// size too small to hold the header): such a config must go to NCCL as it
// is, so NCCL reports the error.
std::optional<ncclConfig_t> CopyConfig(const ncclConfig_t* caller);

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_COMM_CONFIG_COPY_H_
