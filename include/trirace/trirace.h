/*
 * trirace.h — the TriRace annotation API (C, C++, Python ctypes).
 *
 * What it is
 *   A small set of calls a training program makes to tell TriRace what its
 *   communication is for: which layer, pipeline stage, micro-batch,
 *   iteration and phase an NCCL call belongs to, what role a communicator
 *   plays, and when an iteration begins and ends. TriRace's scheduler uses
 *   these tags to order traffic; without them it infers what it can.
 *
 * Cost and linking
 *   Nothing to link. Every call below is a static inline function that, on
 *   first use in a translation unit, looks up `trirace_get_api` with
 *   dlsym(RTLD_DEFAULT) once and caches the answer. When libtrirace.so is
 *   loaded (LD_PRELOAD, or `trirace run`), the calls reach its
 *   implementation; when it is not, they are no-ops that return
 *   TRIRACE_NOT_LOADED after one cached pointer check. The shim must be in
 *   the process before the first call (LD_PRELOAD does that); a shim loaded
 *   later is not seen by a translation unit that already looked.
 *   dlsym lives in libc from glibc 2.34 on; older systems link with -ldl.
 *   From Python: ctypes.CDLL(None).trirace_get_api(1) returns a pointer to
 *   trirace_api_v1_t (or raises AttributeError when the shim is absent).
 *
 * Semantics
 *   - Tags form a stack per thread. trirace_push_tag() pushes a copy;
 *     every NCCL call made on that thread takes the innermost tag (the
 *     top). Fields left TRIRACE_UNSET are inherited from the enclosing tag,
 *     so an inner scope may set only the micro-batch, say.
 *   - Calls inside ncclGroupStart/End carry the tag current at each call.
 *   - trirace_pop_tag() on an empty stack is harmless: the shim logs one
 *     WARN and returns TRIRACE_ERR_UNBALANCED; nothing crashes.
 *   - A tag with a field outside its range (trirace_tag_t below) is not
 *     pushed: trirace_push_tag() returns TRIRACE_ERR_INVALID and the shim
 *     logs one WARN naming the field, its value and the range. Pop only
 *     what was pushed (trirace::TagScope does).
 *   - A thread's stack is its own; a tag pushed on one thread is not seen by
 *     another.
 *   - An annotation never changes what NCCL computes, only when TriRace
 *     lets a transfer start.
 *
 * Thread safety
 *   All functions are thread-safe. The tag stack is thread-local.
 *
 * ABI
 *   TRIRACE_API_VERSION is the version of trirace_api_v1_t this header
 *   knows. A provider returns a table whose `size` is at least the fields it
 *   fills; the inline wrappers check `size` before calling a field, so a
 *   program built against a newer header runs with an older shim.
 */
#ifndef TRIRACE_TRIRACE_H_
#define TRIRACE_TRIRACE_H_

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRIRACE_API_VERSION 1

/* Return codes. */
#define TRIRACE_OK 0
#define TRIRACE_NOT_LOADED 1      /* no implementation in the process: no-op */
#define TRIRACE_ERR_INVALID 2     /* bad argument (NULL tag, unknown role) */
#define TRIRACE_ERR_UNBALANCED 3  /* pop with an empty stack, or an end without a begin */

#define TRIRACE_UNSET (-1)

typedef enum {
  TRIRACE_PHASE_UNSET = -1,
  TRIRACE_PHASE_FORWARD = 0,
  TRIRACE_PHASE_BACKWARD = 1,
  TRIRACE_PHASE_OPTIMIZER = 2
} trirace_phase_t;

typedef enum {
  TRIRACE_CLASS_UNSET = -1, /* inherit */
  TRIRACE_CLASS_AUTO = 0,   /* let TriRace decide from the comm's role and the call */
  TRIRACE_CLASS_P2P = 1,    /* pipeline activations: never held */
  TRIRACE_CLASS_SPARSE = 2, /* embedding rows, MoE tokens */
  TRIRACE_CLASS_DENSE = 3   /* gradient all-reduce: released into gaps */
} trirace_class_t;

typedef enum {
  TRIRACE_ROLE_UNKNOWN = 0,
  TRIRACE_ROLE_DATA_PARALLEL = 1,
  TRIRACE_ROLE_PIPELINE = 2,
  TRIRACE_ROLE_TENSOR = 3,
  TRIRACE_ROLE_EXPERT = 4 /* expert / sparse embedding comm */
} trirace_role_t;

/* One annotation scope. Fields set to TRIRACE_UNSET inherit. Accepted
 * values besides TRIRACE_UNSET: layer, stage, micro_batch and iteration
 * >= 0; phase 0..2; traffic_class 0..3; priority any int32_t but
 * INT32_MIN (so -1 cannot be a priority: it inherits). */
typedef struct trirace_tag {
  int32_t layer;         /* layer index, 0 = first (front) layer */
  int32_t stage;         /* pipeline stage */
  int32_t micro_batch;   /* micro-batch within the iteration */
  int32_t phase;         /* trirace_phase_t */
  int64_t iteration;     /* training step */
  int32_t traffic_class; /* trirace_class_t */
  int32_t priority;      /* larger = more urgent; TRIRACE_UNSET = inherit */
} trirace_tag_t;

#define TRIRACE_TAG_INIT \
  { TRIRACE_UNSET, TRIRACE_UNSET, TRIRACE_UNSET, TRIRACE_PHASE_UNSET, TRIRACE_UNSET, TRIRACE_CLASS_UNSET, TRIRACE_UNSET }

struct ncclComm; /* ncclComm_t is struct ncclComm* */

/* The table an implementation (libtrirace.so) provides. */
typedef struct trirace_api_v1 {
  uint32_t size;    /* bytes of this struct the provider filled */
  uint32_t version; /* provider's TRIRACE_API_VERSION */
  int (*push_tag)(const trirace_tag_t* tag);
  int (*pop_tag)(void);
  int (*set_comm_role)(struct ncclComm* comm, int role);
  int (*iteration_begin)(int64_t iteration);
  int (*iteration_end)(int64_t iteration);
  int (*scheduler_active)(void); /* 1 when gated launch is on */
  int (*set_new_comm_role)(int role, int* previous);
  int (*dense_ahead)(void); /* see trirace_dense_ahead() */
} trirace_api_v1_t;

/* Exported by libtrirace.so: the table for `version`, or NULL if that
 * version is not provided. */
typedef const trirace_api_v1_t* (*trirace_get_api_fn)(uint32_t version);
#define TRIRACE_GET_API_SYMBOL "trirace_get_api"

/* ---- inline wrappers (the API programs call) ---- */

/* The provider's table, or NULL when no shim is loaded. Resolved once per
 * translation unit; thread-safe (racing threads store the same answer). */
static inline const trirace_api_v1_t* trirace_api(void) {
  static const trirace_api_v1_t* cached;
  static int resolved;
  if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)) return __atomic_load_n(&cached, __ATOMIC_RELAXED);
#ifdef RTLD_DEFAULT
  void* sym = dlsym(RTLD_DEFAULT, TRIRACE_GET_API_SYMBOL);
#else
  void* sym = dlsym((void*)0, TRIRACE_GET_API_SYMBOL); /* glibc: RTLD_DEFAULT is 0 */
#endif
  const trirace_api_v1_t* api = NULL;
  if (sym != NULL) {
    trirace_get_api_fn get;
    *(void**)(&get) = sym; /* object-to-function pointer, as POSIX allows for dlsym */
    api = get(TRIRACE_API_VERSION);
  }
  __atomic_store_n(&cached, api, __ATOMIC_RELAXED);
  __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
  return api;
}

#define TRIRACE_API_HAS(api, field) \
  ((api) != NULL && (api)->size >= offsetof(trirace_api_v1_t, field) + sizeof((api)->field) && (api)->field != NULL)

/* Pushes a copy of *tag on the calling thread's stack. */
static inline int trirace_push_tag(const trirace_tag_t* tag) {
  const trirace_api_v1_t* api = trirace_api();
  return TRIRACE_API_HAS(api, push_tag) ? api->push_tag(tag) : TRIRACE_NOT_LOADED;
}

/* Pops the innermost tag of the calling thread. */
static inline int trirace_pop_tag(void) {
  const trirace_api_v1_t* api = trirace_api();
  return TRIRACE_API_HAS(api, pop_tag) ? api->pop_tag() : TRIRACE_NOT_LOADED;
}

/* Declares the role (trirace_role_t) of a communicator; overrides what
 * TriRace would infer from its traffic. */
static inline int trirace_set_comm_role(struct ncclComm* comm, int role) {
  const trirace_api_v1_t* api = trirace_api();
  return TRIRACE_API_HAS(api, set_comm_role) ? api->set_comm_role(comm, role) : TRIRACE_NOT_LOADED;
}

/* Sets the role (trirace_role_t) that every communicator the calling thread
 * creates from now on receives, as if trirace_set_comm_role() were called on
 * it at creation; TRIRACE_ROLE_UNKNOWN stops that. *previous (when not NULL)
 * receives the role it replaces, so a scope can restore it. This is how a
 * framework that creates communicators lazily declares their role:
 * PyTorch creates a process group's NCCL communicator at the group's first
 * collective, on the calling thread, so setting the role around that call
 * (or around new_group with eager init) names it. Knowing the role at
 * creation also lets TriRace set the comm's ncclConfig_t.trafficClass
 * (TRIRACE_COMM_TRAFFIC_CLASS). Returns TRIRACE_ERR_INVALID for a role out
 * of range (nothing changes). */
static inline int trirace_set_new_comm_role(int role, int* previous) {
  const trirace_api_v1_t* api = trirace_api();
  return TRIRACE_API_HAS(api, set_new_comm_role) ? api->set_new_comm_role(role, previous) : TRIRACE_NOT_LOADED;
}

/* Marks the start and end of a training iteration (step), numbered from
 * 0 (a negative number returns TRIRACE_ERR_INVALID and changes nothing).
 * Iterations may overlap (a pipeline schedule may begin step i+1 before
 * step i ends): an end closes the begun iteration with the same number; an
 * end whose iteration is not open returns TRIRACE_ERR_UNBALANCED. Ops whose
 * tag has no iteration take the most recently begun one. */
static inline int trirace_iteration_begin(int64_t iteration) {
  const trirace_api_v1_t* api = trirace_api();
  return TRIRACE_API_HAS(api, iteration_begin) ? api->iteration_begin(iteration) : TRIRACE_NOT_LOADED;
}
static inline int trirace_iteration_end(int64_t iteration) {
  const trirace_api_v1_t* api = trirace_api();
  return TRIRACE_API_HAS(api, iteration_end) ? api->iteration_end(iteration) : TRIRACE_NOT_LOADED;
}

/* The provider's API version, or 0 when no shim is loaded. */
static inline int trirace_api_version(void) {
  const trirace_api_v1_t* api = trirace_api();
  return api != NULL ? (int)api->version : 0;
}

/* 1 when the shim is loaded and gated launch (schedule mode) is active. */
static inline int trirace_scheduler_active(void) {
  const trirace_api_v1_t* api = trirace_api();
  return TRIRACE_API_HAS(api, scheduler_active) ? api->scheduler_active() : 0;
}

/* 1 when this process's DENSE traffic should leave ahead of the other DENSE
 * traffic on its NIC: the shim found that this rank holds the front-most
 * pipeline stage among its host's ranks of a pipeline comm, whose weights
 * the next step needs first (rule [R14], TRIRACE_FRONT_STAGE_FIRST). The
 * TriRace net plugin asks at each send and, with class priority on the
 * wire, marks such DENSE like SPARSE.
 * 0 otherwise, or when no shim is loaded. Cheap (one atomic load). */
static inline int trirace_dense_ahead(void) {
  const trirace_api_v1_t* api = trirace_api();
  return TRIRACE_API_HAS(api, dense_ahead) ? api->dense_ahead() : 0;
}

#ifdef __cplusplus
} /* extern "C" */

namespace trirace {

/* RAII scope: pushes a tag on construction and pops it on destruction.
 *   { trirace::TagScope scope(trirace::Tag().Layer(3).Phase(TRIRACE_PHASE_BACKWARD));
 *     ncclAllReduce(...); }                                                  */
class Tag {
 public:
  Tag() : tag_(TRIRACE_TAG_INIT) {}
  Tag& Layer(int32_t v) { tag_.layer = v; return *this; }
  Tag& Stage(int32_t v) { tag_.stage = v; return *this; }
  Tag& MicroBatch(int32_t v) { tag_.micro_batch = v; return *this; }
  Tag& Phase(trirace_phase_t v) { tag_.phase = v; return *this; }
  Tag& Iteration(int64_t v) { tag_.iteration = v; return *this; }
  Tag& Class(trirace_class_t v) { tag_.traffic_class = v; return *this; }
  Tag& Priority(int32_t v) { tag_.priority = v; return *this; }
  const trirace_tag_t& get() const { return tag_; }

 private:
  trirace_tag_t tag_;
};

class TagScope {
 public:
  explicit TagScope(const trirace_tag_t& tag) : pushed_(trirace_push_tag(&tag) == TRIRACE_OK) {}
  explicit TagScope(const Tag& tag) : TagScope(tag.get()) {}
  /* Pops the tag only if it was pushed (a refused one leaves the stack as it was). */
  ~TagScope() {
    if (pushed_) trirace_pop_tag();
  }
  TagScope(const TagScope&) = delete;
  TagScope& operator=(const TagScope&) = delete;

 private:
  bool pushed_;
};

/* RAII scope: communicators this thread creates inside it get `role`.
 *   { trirace::CommRoleScope scope(TRIRACE_ROLE_PIPELINE); ncclCommSplit(...); } */
class CommRoleScope {
 public:
  explicit CommRoleScope(trirace_role_t role) : previous_(TRIRACE_ROLE_UNKNOWN) {
    trirace_set_new_comm_role(role, &previous_);
  }
  ~CommRoleScope() { trirace_set_new_comm_role(previous_, NULL); }
  CommRoleScope(const CommRoleScope&) = delete;
  CommRoleScope& operator=(const CommRoleScope&) = delete;

 private:
  int previous_;
};

}  // namespace trirace
#endif /* __cplusplus */

#endif /* TRIRACE_TRIRACE_H_ */
