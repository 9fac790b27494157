// The exported host stream API (hostccl/stream.h).
#include <chrono>

#include "absl/status/status.h"
#include "hostccl/stream.h"
#include "hostccl/src/api_util.h"
#include "hostccl/src/host_stream.h"

using namespace trirace::hostccl;  // NOLINT: the C ABI lives in the global namespace

extern "C" {

TRIRACE_EXPORT ncclResult_t hostcclStreamCreate(cudaStream_t* stream) {
  if (stream == nullptr) return ApiResult("hostcclStreamCreate", absl::InvalidArgumentError("stream is NULL"));
  *stream = RegisterStream(std::make_shared<HostStream>());
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclStreamDestroy(cudaStream_t stream) {
  absl::StatusOr<std::shared_ptr<HostStream>> s = UnregisterStream(stream);
  if (!s.ok()) return ApiResult("hostcclStreamDestroy", s.status());
  (*s)->Close();
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclStreamSynchronize(cudaStream_t stream) {
  absl::StatusOr<std::shared_ptr<HostStream>> s = LookupStream(stream, "stream");
  if (!s.ok()) return ApiResult("hostcclStreamSynchronize", s.status());
  (*s)->WaitReached((*s)->LastTicket());
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclStreamCheck(cudaStream_t stream) {
  return LookupStream(stream, "stream").ok() ? ncclSuccess : ncclInvalidArgument;  // no WARN: see stream.h
}

TRIRACE_EXPORT ncclResult_t hostcclStreamQuery(cudaStream_t stream) {
  absl::StatusOr<std::shared_ptr<HostStream>> s = LookupStream(stream, "stream");
  if (!s.ok()) return ApiResult("hostcclStreamQuery", s.status());
  return (*s)->Reached((*s)->LastTicket()) ? ncclSuccess : ncclInProgress;
}

TRIRACE_EXPORT ncclResult_t hostcclEventCreate(cudaEvent_t* event) {
  if (event == nullptr) return ApiResult("hostcclEventCreate", absl::InvalidArgumentError("event is NULL"));
  *event = RegisterEvent(std::make_shared<HostEvent>());
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclEventRecord(cudaEvent_t event, cudaStream_t stream) {
  absl::StatusOr<std::shared_ptr<HostEvent>> e = LookupEvent(event, "event");
  if (!e.ok()) return ApiResult("hostcclEventRecord", e.status());
  absl::StatusOr<std::shared_ptr<HostStream>> s = LookupStream(stream, "stream");
  if (!s.ok()) return ApiResult("hostcclEventRecord", s.status());
  (*e)->Record(*s);
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclEventQuery(cudaEvent_t event) {
  absl::StatusOr<std::shared_ptr<HostEvent>> e = LookupEvent(event, "event");
  if (!e.ok()) return ApiResult("hostcclEventQuery", e.status());
  return (*e)->Complete() ? ncclSuccess : ncclInProgress;
}

TRIRACE_EXPORT ncclResult_t hostcclEventSynchronize(cudaEvent_t event) {
  absl::StatusOr<std::shared_ptr<HostEvent>> e = LookupEvent(event, "event");
  if (!e.ok()) return ApiResult("hostcclEventSynchronize", e.status());
  (*e)->Wait();
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclEventDestroy(cudaEvent_t event) {
  absl::StatusOr<std::shared_ptr<HostEvent>> e = UnregisterEvent(event);
  return ApiResult("hostcclEventDestroy", e.status());
}

TRIRACE_EXPORT ncclResult_t hostcclStreamWaitEvent(cudaStream_t stream, cudaEvent_t event) {
  absl::StatusOr<std::shared_ptr<HostStream>> s = LookupStream(stream, "stream");
  if (!s.ok()) return ApiResult("hostcclStreamWaitEvent", s.status());
  absl::StatusOr<std::shared_ptr<HostEvent>> e = LookupEvent(event, "event");
  if (!e.ok()) return ApiResult("hostcclStreamWaitEvent", e.status());
  (*s)->EnqueueWaitEvent(**e);
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclLaunchHostFunc(cudaStream_t stream, void (*fn)(void*), void* user_data) {
  absl::StatusOr<std::shared_ptr<HostStream>> s = LookupStream(stream, "stream");
  if (!s.ok()) return ApiResult("hostcclLaunchHostFunc", s.status());
  if (fn == nullptr) return ApiResult("hostcclLaunchHostFunc", absl::InvalidArgumentError("fn is NULL"));
  (*s)->Enqueue([fn, user_data] { fn(user_data); });
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclLaunchKernelFunc(cudaStream_t stream, void (*fn)(void*), void* user_data) {
  absl::StatusOr<std::shared_ptr<HostStream>> s = LookupStream(stream, "stream");
  if (!s.ok()) return ApiResult("hostcclLaunchKernelFunc", s.status());
  if (fn == nullptr) return ApiResult("hostcclLaunchKernelFunc", absl::InvalidArgumentError("fn is NULL"));
  (*s)->EnqueueKernelFunc([fn, user_data] { fn(user_data); });
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclStreamCompute(cudaStream_t stream, uint64_t microseconds) {
  absl::StatusOr<std::shared_ptr<HostStream>> s = LookupStream(stream, "stream");
  if (!s.ok()) return ApiResult("hostcclStreamCompute", s.status());
  (*s)->EnqueueCompute(std::chrono::microseconds(microseconds));
  return ncclSuccess;
}

TRIRACE_EXPORT ncclResult_t hostcclStreamWaitValue32(cudaStream_t stream, const volatile uint32_t* word,
                                                     uint32_t value) {
  absl::StatusOr<std::shared_ptr<HostStream>> s = LookupStream(stream, "stream");
  if (!s.ok()) return ApiResult("hostcclStreamWaitValue32", s.status());
  if (word == nullptr) return ApiResult("hostcclStreamWaitValue32", absl::InvalidArgumentError("word is NULL"));
  EnqueueWaitValue32(**s, word, value);
  return ncclSuccess;
}

}  // extern "C"
