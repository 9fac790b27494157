// Group semantics (ncclGroupStart / ncclGroupEnd), per calling thread.
//
// Outside a group every call is a group of one. Inside, calls are collected
// and issued together at the outermost GroupEnd:
//  - deferred jobs (communicator creation and splits called in the group)
//    run first, concurrently, one thread each, so one thread can create the
//    communicators of several ranks;
//  - the operations become one Launch per communicator (collectives in call
//    order, then all its send/receives concurrently), submitted to the
//    communicators' executors;
//  - each stream involved gets one task that first lets every launch on it
//    start and only then waits for them all, so launches on several
//    communicators sharing one stream never wait on each other.
// An argument error inside a group is returned by that call and again by
// GroupEnd, and the group's operations are dropped (nothing runs).
//
// Thread safety: the state is thread-local.
#ifndef TRIRACE_HOSTCCL_SRC_GROUP_H_
#define TRIRACE_HOSTCCL_SRC_GROUP_H_

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "hostccl/src/algorithms.h"
#include "hostccl/src/comm.h"
#include "hostccl/src/host_stream.h"

namespace trirace::hostccl {

bool InGroup();
void GroupStart();
absl::Status GroupEnd();

// Adds one operation on `stream` for `core`.
absl::Status EnqueueOp(std::shared_ptr<CommCore> core, const OpDesc& op, std::shared_ptr<HostStream> stream);
// Runs `job` now, or at GroupEnd inside a group.
absl::Status RunOrDefer(std::function<absl::Status()> job);
// Remembers an argument error so GroupEnd fails (inside a group).
void NoteGroupError(const absl::Status& s);

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_GROUP_H_
