// The checks of `trirace doctor`: what TriRace will do on this node (or in
// this launched rank), found before a job starts, with the functions the
// shim itself decides with (interpose/start_verdict.h), so the two cannot
// disagree.
//
//   DoctorReport r = Examine();
//   r.verdict.mode == r.verdict.requested  // the requested mode can run
//
// Examine() loads the real NCCL library and the shim with dlopen (RTLD_LOCAL:
// nothing is interposed in this process), reads sysfs, NVML and the
// occupancy sources, and changes nothing.
//
// Thread safety: Examine() reads and loads process-wide state; call it from
// one thread.
#ifndef TRIRACE_TOOLS_TRIRACE_DOCTOR_H_
#define TRIRACE_TOOLS_TRIRACE_DOCTOR_H_

#include <string>
#include <utility>
#include <vector>

#include "common/qdisc.h"
#include "interpose/start_verdict.h"

namespace trirace::tools {

struct DoctorReport {
  // The shim: where it is, whether it loads (every NEEDED library found),
  // and whether this process has it preloaded.
  std::string shim_path;   // "" when not built or installed
  bool shim_loads = false;
  std::string shim_error;  // why it does not load
  bool shim_preloaded = false;

  // The libnccl a job would load, found as the shim finds it.
  bool nccl_found = false;
  std::string nccl_path, nccl_how, nccl_error;
  int nccl_version = 0;

  // The device backend the shim would gate on ("cuda", "host"), or why none.
  bool device_ok = false;
  std::string device;

  // This host as topology/ sees it.
  std::vector<std::string> gpus;  // "gpu0 0000:3b:00.0 -> mlx5_0 (rail 0)"
  std::vector<std::string> nics;  // "mlx5_0 400 Gbit/s, rail 0"
  std::vector<std::string> topology_notes;
  std::string nic;  // the interface this process sends through (TRIRACE_NIC or the default route)

  // The net transport NCCL will use under `trirace run --net auto`.
  bool net_ok = false;
  std::string net;  // NetLine(), or the error

  // The occupancy source TRIRACE_OCCUPANCY names, on `nic`.
  bool occupancy_readable = false;
  std::string occupancy;  // what is read, or why nothing is

  // What the shim would run, and why.
  interpose::StartVerdict verdict;
  int nranks = 0;  // the launcher's WORLD_SIZE / SLURM_NTASKS ..., 0 when unknown

  // TRIRACE_COMM_TRAFFIC_CLASS per role, and whether the shim applies it.
  std::vector<std::pair<std::string, std::string>> role_classes;  // role -> "184" or "NCCL's default"
  bool classes_applied = false;
  bool wire_class_priority = false;  // the net plugin's class priority (NetClassPriorityEnabled)
  // Where schedule mode enforces the class order (ClassOrderText in
  // interpose/start_verdict.h) and the qdiscs judged for it; a note where
  // NCCL's own RDMA transport carries the bytes.
  std::string class_order;
  std::string class_order_note;
};

// `other_host`: judge these qdiscs (another node's, trirace doctor
// --qdiscs) instead of this host's for the class marks.
DoctorReport Examine(const MarksFinding* other_host = nullptr);

// Whether the mode TRIRACE_MODE asks for can run: the exit status of
// `trirace doctor` is 0 exactly then.
bool RequestedModeRuns(const DoctorReport& report);

}  // namespace trirace::tools

#endif  // TRIRACE_TOOLS_TRIRACE_DOCTOR_H_
