// Fuzz target: the simulator's trace reader (sim/workloads/replay.h), what
// `trirace sim --replay DIR` does with the shim's traces. The input is the
// folder's content: split at each line "%%" (at most four parts), part i
// becomes trace.<i>.json of a fresh folder, so one input is one rank's
// trace or the traces of a small job (comms are matched across files).
//
// An error must be InvalidArgument, start with "--replay ", name the folder
// or the file it is about and say what was expected. A workload that is
// accepted must be a sane program: one rank per file, ValidateWorkload
// passes (streams, waits, comms, members and peers in range), every root in
// its comm, stamps 0..iterations in order, and no more ops than the input
// could describe.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/program/program.h"
#include "sim/workloads/replay.h"

namespace {

namespace fs = std::filesystem;
using trirace::sim::OpKind;
using trirace::sim::RankProgram;
using trirace::sim::Workload;

constexpr size_t kMaxFiles = 4;
constexpr const char kSeparator[] = "\n%%\n";

fs::path* g_dir = nullptr;

[[noreturn]] void Fail(const std::string& why) {
  std::fprintf(stderr, "replay_fuzz: %s\n", why.c_str());
  std::abort();
}

std::vector<std::string> Split(const std::string& input) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (parts.size() + 1 < kMaxFiles) {
    const size_t at = input.find(kSeparator, start);
    if (at == std::string::npos) break;
    parts.push_back(input.substr(start, at - start));
    start = at + sizeof(kSeparator) - 1;
  }
  parts.push_back(input.substr(start));
  return parts;
}

void CheckError(const absl::Status& s, size_t files) {
  const std::string m(s.message());
  if (s.code() != absl::StatusCode::kInvalidArgument) Fail("error of code " + s.ToString() + ", expected InvalidArgument");
  if (!absl::StartsWith(m, "--replay ")) Fail("error does not start with --replay: " + m);
  bool named = absl::StrContains(m, g_dir->string());
  for (size_t i = 0; i < files && !named; ++i) named = absl::StrContains(m, absl::StrCat("trace.", i, ".json"));
  if (!named) Fail("error names neither the folder nor a file: " + m);
  if (!absl::StrContains(m, "expected")) Fail("error does not say what was expected: " + m);
}

void CheckProgram(const Workload& w, size_t files, size_t input_bytes) {
  std::string error;
  if (!trirace::sim::ValidateWorkload(w, &error)) Fail("accepted trace gives an invalid workload: " + error);
  if (w.ranks.size() != files) Fail(absl::StrCat(w.ranks.size(), " ranks from ", files, " files"));
  if (w.iterations < 1 || w.warmup < 0 || w.warmup >= w.iterations) Fail("iterations out of range");
  for (size_t r = 0; r < w.ranks.size(); ++r) {
    const RankProgram& p = w.ranks[r];
    // Each op event of the trace is at least ~20 bytes of JSON and gives a
    // handful of stream ops; a blow-up beyond that is a bug.
    if (p.ops.size() > 16 + 8 * input_bytes || p.calls.size() > input_bytes) Fail("more ops than the input holds");
    int last_stamp = -1;
    for (const trirace::sim::StreamOp& op : p.ops) {
      if (op.kind == OpKind::kCompute && op.duration_ns < 0) Fail("negative compute");
      if (op.kind == OpKind::kStamp) {
        if (op.stamp <= last_stamp) Fail(absl::StrCat("rank ", r, ": stamp ", op.stamp, " after ", last_stamp));
        last_stamp = op.stamp;
      }
      if (op.kind != OpKind::kComm) continue;
      for (int k = op.first_call; k < op.first_call + op.call_count; ++k) {
        const trirace::sim::NcclCall& c = p.calls[size_t(k)];
        const int size = int(w.comms[size_t(c.comm)].ranks.size());
        if (trirace::HasRoot(c.func) && (c.peer < -1 || c.peer >= size)) {
          Fail(absl::StrCat("rank ", r, ": root ", c.peer, " of a comm of ", size));
        }
      }
    }
    if (p.ops.empty() || p.ops.front().kind != OpKind::kStamp || p.ops.front().stamp != 0 ||
        last_stamp != w.iterations) {
      Fail(absl::StrCat("rank ", r, ": stamps do not run from 0 to ", w.iterations));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::error_code ec;
  const fs::path base = fs::temp_directory_path(ec);
  g_dir = new fs::path((ec ? fs::path("/tmp") : base) / absl::StrCat("trirace-replay-fuzz-", getpid()));
  fs::create_directories(*g_dir, ec);
  if (ec) Fail("cannot make " + g_dir->string() + ": " + ec.message());
  std::atexit([] { fs::remove_all(*g_dir); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = Split(std::string(reinterpret_cast<const char*>(data), size));
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(*g_dir, ec)) fs::remove(e.path(), ec);
  for (size_t i = 0; i < parts.size(); ++i) {
    std::ofstream(*g_dir / absl::StrCat("trace.", i, ".json"), std::ios::binary) << parts[i];
  }
  const absl::StatusOr<Workload> w = trirace::sim::ReplayWorkload(g_dir->string());
  static const bool verbose = std::getenv("TRIRACE_FUZZ_VERBOSE") != nullptr;
  if (verbose) {
    std::fprintf(stderr, "%s\n", w.ok() ? absl::StrCat("accepted: ", w->ranks.size(), " ranks, ", w->comms.size(),
                                                       " comms, ", w->iterations, " iterations").c_str()
                                         : std::string(w.status().message()).c_str());
  }
  if (w.ok()) {
    CheckProgram(*w, parts.size(), size);
  } else {
    CheckError(w.status(), parts.size());
  }
  return 0;
}
