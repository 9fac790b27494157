/*
 * hostccl/stream.h: host streams and events, the CPU stand-in for CUDA
 * streams that hostccl's NCCL API runs on.
 *
 * hostccl (libnccl.so.2 built from this project) implements the NCCL 2.28
 * API for host memory. Every `cudaStream_t` passed to an NCCL call must be a
 * host stream created here (or NULL, the process's default host stream);
 * anything else is rejected with ncclInvalidArgument. The types are the CUDA
 * typedefs so NCCL signatures stay unchanged; the handles are hostccl objects,
 * never real CUDA streams or events.
 *
 * Semantics (modelled on a GPU):
 *  - Work on one stream runs in the order it was enqueued; different streams
 *    run concurrently (each stream has its own worker thread, started on the
 *    first enqueue, so idle streams cost no thread and hundreds per process
 *    are fine).
 *  - Every enqueue call returns before the work runs. NCCL calls enqueue onto
 *    their stream exactly like on a GPU.
 *  - NULL is the default host stream: a regular stream (it does not
 *    synchronise with other streams, like cudaStreamPerThread), valid for
 *    every call here and for every NCCL call.
 *  - An event is complete when the work enqueued before its last
 *    hostcclEventRecord has run; an event never recorded is complete.
 *
 * Every function returns ncclSuccess on success, ncclInvalidArgument (with a
 * WARN naming the argument) for a NULL output pointer or a handle that is not
 * a live hostccl stream/event (hostcclStreamCheck without the WARN); the two
 * Query calls return ncclInProgress while work is pending.
 *
 * Thread safety: every function may be called from any thread at any time.
 * Destroying a stream or event while another thread still passes it is a
 * caller error (as in CUDA) and is reported as ncclInvalidArgument when
 * detected.
 *
 * Detection: a program (or the TriRace shim) can tell hostccl from the real
 * NCCL by looking up `hostcclStreamCreate` in the loaded libnccl.so.2.
 */
#ifndef HOSTCCL_STREAM_H_
#define HOSTCCL_STREAM_H_

#include <stdint.h>

#include <cuda_runtime.h>
#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a host stream. *stream receives the handle. */
ncclResult_t hostcclStreamCreate(cudaStream_t* stream);

/* Destroys a stream. Returns at once; work already enqueued still runs and
 * the stream's resources are released when it has (as cudaStreamDestroy).
 * The default stream (NULL) cannot be destroyed. */
ncclResult_t hostcclStreamDestroy(cudaStream_t stream);

/* Blocks until all work enqueued on `stream` before this call has run. */
ncclResult_t hostcclStreamSynchronize(cudaStream_t stream);

/* ncclSuccess when `stream` is NULL or a live host stream, ncclInvalidArgument
 * otherwise. The one call here that logs nothing for a bad handle: for a
 * layer that checks a stream it was handed before using it (the TriRace
 * shim), so that the NCCL call the stream was meant for reports it once. */
ncclResult_t hostcclStreamCheck(cudaStream_t stream);

/* ncclSuccess when `stream` is idle, ncclInProgress while work is pending. */
ncclResult_t hostcclStreamQuery(cudaStream_t stream);

/* Creates an event (complete until first recorded). */
ncclResult_t hostcclEventCreate(cudaEvent_t* event);

/* Captures the work enqueued on `stream` so far: the event completes when
 * that work has run. Re-recording replaces the captured point. */
ncclResult_t hostcclEventRecord(cudaEvent_t event, cudaStream_t stream);

/* ncclSuccess when the last recorded point has been reached, ncclInProgress
 * otherwise. */
ncclResult_t hostcclEventQuery(cudaEvent_t event);

/* Blocks until the last recorded point has been reached. */
ncclResult_t hostcclEventSynchronize(cudaEvent_t event);

/* Destroys an event. Streams already waiting on it keep working. */
ncclResult_t hostcclEventDestroy(cudaEvent_t event);

/* Work enqueued on `stream` after this call waits until `event` reaches the
 * point recorded at the time of this call (as cudaStreamWaitEvent). */
ncclResult_t hostcclStreamWaitEvent(cudaStream_t stream, cudaEvent_t event);

/* Enqueues fn(user_data), run on the stream's worker thread in stream order
 * (as cudaLaunchHostFunc). fn must not call hostcclStreamSynchronize on its
 * own stream. */
ncclResult_t hostcclLaunchHostFunc(cudaStream_t stream, void (*fn)(void*), void* user_data);

/* Runs fn(user_data) on `stream` in order, as a kernel: it takes no time on
 * the stream's device clock (see hostcclStreamCompute), so work after it
 * starts when the work before it ended, however late the worker ran it. For
 * a program whose kernels do their data work on the host and model their
 * duration with hostcclStreamCompute; a host function that waits for
 * something outside the stream must use hostcclLaunchHostFunc, whose end is
 * the real time it returned. Same rules for fn as hostcclLaunchHostFunc. */
ncclResult_t hostcclLaunchKernelFunc(cudaStream_t stream, void (*fn)(void*), void* user_data);

/* Emulated compute: the stream is busy for `microseconds` (the worker
 * sleeps, it does not burn a CPU), like a kernel of that duration. As on a
 * GPU, it starts when it is enqueued or when the work before it on the
 * stream ends, whichever is later, so the worker's wake-up latency does not
 * add up along back-to-back kernels. */
ncclResult_t hostcclStreamCompute(cudaStream_t stream, uint64_t microseconds);

/* Gate: work enqueued on `stream` after this call waits until
 * (int32_t)(*word - value) >= 0, i.e. *word >= value compared cyclically as
 * CU_STREAM_WAIT_VALUE_GEQ does. Another thread opens the gate with an atomic
 * store (e.g. __atomic_store_n(word, value, __ATOMIC_RELEASE)); no wake-up
 * call is needed: the worker polls with a back-off (the gate is seen
 * within about 100 us, within 1 ms once it has been closed for 100 ms, so
 * hundreds of idle gated streams stay cheap). `word` must stay valid until
 * the wait has passed.
 * The host analogue of cuStreamWaitValue32. */
ncclResult_t hostcclStreamWaitValue32(cudaStream_t stream, const volatile uint32_t* word,
                                      uint32_t value);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOSTCCL_STREAM_H_ */
