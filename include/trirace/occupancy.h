/*
 * occupancy.h: the per-host network occupancy segment written by the TriRace
 * net plugin (libnccl-net-trirace.so) and read by the scheduler and
 * `trirace net-top`.
 *
 * What is published: for every NIC the plugin uses, bytes posted and
 * completed for send and receive, bytes and requests in flight, split by
 * traffic class (trirace_class_t values; slot 0 holds traffic with no class
 * hint), and the time of the last update.
 *
 * Where: one POSIX shared-memory object per host and job, named
 * "/trirace-<uid>-<job>" (mode 0600, owned by that uid). Every process of the
 * job on the host owns one process slot in it; a reader sums the slots of
 * live processes, so each process sees the whole NIC. A slot whose process
 * died (pid gone, or the pid was reused by another process) is skipped by
 * readers and reclaimed by the next writer.
 *
 * Consistency: each slot has one writer (the publisher thread of its
 * process) and a sequence lock: `seq` is odd while the slot is written, and a
 * reader retries until it copies the slot with the same even `seq` before and
 * after. Readers therefore never see torn records. Counters are cumulative
 * since the process attached; rates come from two snapshots.
 *
 * Reader API (C, thread-compatible: one reader object per thread):
 *
 *   trirace_occ_reader_t* r = NULL;
 *   if (trirace_occ_open(NULL, &r) == 0) {        // job from TRIRACE_JOB_ID/launcher
 *     trirace_occ_snapshot_t snap;
 *     if (trirace_occ_read(r, &snap) == 0) {
 *       for (uint32_t i = 0; i < snap.num_nics; ++i)
 *         printf("%s %llu\n", snap.nics[i].name,
 *                (unsigned long long)snap.nics[i].total.send_completed_bytes);
 *     }
 *     trirace_occ_close(r);
 *   }
 *
 * Functions return 0 on success or a positive errno value (ENOENT: no
 * segment yet, EPROTO: a segment of another layout version, EPERM: owned by
 * another user). The reader maps the segment read-only and never writes it.
 * Link with the trirace_occupancy library (no other TriRace dependency).
 *
 * Layout versioning: TRIRACE_OCC_VERSION changes whenever a struct below
 * changes. A reader refuses a segment whose header magic, version or struct
 * sizes differ from its own.
 */
#ifndef TRIRACE_OCCUPANCY_H_
#define TRIRACE_OCCUPANCY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRIRACE_OCC_MAGIC 0x4f435254u /* "TRCO" little-endian */
#define TRIRACE_OCC_VERSION 1u
#define TRIRACE_OCC_MAX_PROCS 256
#define TRIRACE_OCC_MAX_NICS 16
#define TRIRACE_OCC_NAME_LEN 32
/* Slot 0: no class hint; 1..3: TRIRACE_CLASS_P2P, _SPARSE, _DENSE. */
#define TRIRACE_OCC_NUM_CLASSES 4
#define TRIRACE_OCC_JOB_LEN 64

/* Cumulative counters of one NIC (and one class). All fields are 64-bit. */
typedef struct {
  uint64_t send_posted_bytes;    /* isend sizes */
  uint64_t send_completed_bytes; /* bytes of completed sends */
  uint64_t recv_posted_bytes;    /* irecv buffer sizes */
  uint64_t recv_completed_bytes; /* bytes that arrived in completed receives */
  uint64_t send_inflight_bytes;  /* posted and not yet completed (gauge) */
  uint64_t recv_inflight_bytes;  /* posted receive buffer bytes not yet completed (gauge) */
  uint64_t send_inflight_reqs;   /* gauge */
  uint64_t recv_inflight_reqs;   /* gauge */
} trirace_occ_counters_t;

/* One NIC as seen by one process. */
typedef struct {
  char name[TRIRACE_OCC_NAME_LEN]; /* interface name, NUL-terminated */
  uint32_t speed_mbps;
  uint32_t reserved;
  trirace_occ_counters_t cls[TRIRACE_OCC_NUM_CLASSES];
} trirace_occ_nic_t;

/* One process slot. `owner_pid` 0 = free. */
typedef struct {
  uint32_t seq;              /* sequence lock: odd while written */
  int32_t owner_pid;         /* written with an atomic compare-and-swap */
  uint64_t owner_start_time; /* /proc/<pid>/stat starttime, detects pid reuse */
  uint64_t update_ns;        /* CLOCK_MONOTONIC of the last publish */
  uint32_t num_nics;
  uint32_t reserved;
  trirace_occ_nic_t nics[TRIRACE_OCC_MAX_NICS];
} trirace_occ_proc_t;

/* Segment header, followed by TRIRACE_OCC_MAX_PROCS process slots. */
typedef struct {
  uint32_t magic;   /* TRIRACE_OCC_MAGIC once initialised (written last) */
  uint32_t version; /* TRIRACE_OCC_VERSION */
  uint32_t header_bytes;
  uint32_t proc_bytes;
  uint32_t max_procs;
  uint32_t max_nics;
  uint32_t num_classes;
  uint32_t reserved;
  uint64_t create_ns; /* CLOCK_MONOTONIC when created */
  char job[TRIRACE_OCC_JOB_LEN];
} trirace_occ_header_t;

#define TRIRACE_OCC_SEGMENT_BYTES \
  (sizeof(trirace_occ_header_t) + (size_t)TRIRACE_OCC_MAX_PROCS * sizeof(trirace_occ_proc_t))

/* ---- Reader API ---------------------------------------------------------- */

/* A NIC summed over the live processes of the job. */
typedef struct {
  char name[TRIRACE_OCC_NAME_LEN];
  uint32_t speed_mbps;
  uint32_t num_procs;                            /* live processes using it */
  trirace_occ_counters_t cls[TRIRACE_OCC_NUM_CLASSES];
  trirace_occ_counters_t total;                  /* sum over the classes */
  uint64_t update_ns;                            /* newest update among them */
} trirace_occ_nic_summary_t;

typedef struct {
  uint64_t time_ns;  /* CLOCK_MONOTONIC when the snapshot was taken */
  uint32_t num_procs; /* live process slots */
  uint32_t num_nics;
  trirace_occ_nic_summary_t nics[TRIRACE_OCC_MAX_NICS];
} trirace_occ_snapshot_t;

typedef struct trirace_occ_reader trirace_occ_reader_t;

/* Writes the segment name for `job` ("/trirace-<uid>-<job>"; characters
 * outside [A-Za-z0-9._-] become '_'; NULL or "" = the default job: the
 * TRIRACE_JOB_ID environment variable, else the launcher's job id, else
 * "default"). Returns 0, or ENOSPC when `len` is too small. */
int trirace_occ_segment_name(const char* job, char* buf, size_t len);

/* Opens the segment of `job` (as above) read-only. */
int trirace_occ_open(const char* job, trirace_occ_reader_t** out);
/* Opens a segment by its full shared-memory name (starting with '/'). */
int trirace_occ_open_name(const char* shm_name, trirace_occ_reader_t** out);

/* Takes a consistent snapshot: live slots only, NICs merged by name.
 * EAGAIN (and a zeroed snapshot, never a partial sum) when a live slot
 * stayed busy; see trirace_occ_read_proc. */
int trirace_occ_read(trirace_occ_reader_t* reader, trirace_occ_snapshot_t* out);

/* trirace_occ_read, and in the same pass (from the same slot copies) the
 * part of process `pid` alone into `own` (own->num_procs is 0 when `pid`
 * has no live slot). `own` may be NULL. */
int trirace_occ_read_split(trirace_occ_reader_t* reader, int32_t pid, trirace_occ_snapshot_t* out,
                           trirace_occ_snapshot_t* own);

/* Copies slot `index` (0 .. TRIRACE_OCC_MAX_PROCS-1) consistently. Returns
 * ENOENT when the slot is free or its process is dead (also when it died
 * mid-write), EAGAIN when its live writer kept it busy for 20 ms (try
 * again). */
int trirace_occ_read_proc(trirace_occ_reader_t* reader, uint32_t index, trirace_occ_proc_t* out);

/* Unmaps and frees the reader. NULL is accepted. */
void trirace_occ_close(trirace_occ_reader_t* reader);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRIRACE_OCCUPANCY_H_ */
