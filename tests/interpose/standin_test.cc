// libtrirace.so preloaded into programs that use a stand-in libnccl.so.2:
// forwarding, re-entry, RTLD_LOCAL, modes, annotations, the trace file and
// error paths.
#include <dlfcn.h>
#include <sys/stat.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"
#include "trace_file.h"
#include "trirace/trirace.h"

namespace trirace::interpose::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::MakeTempDir;
using testing_support::ProcessResult;
using testing_support::RunProcess;

using Env = std::vector<std::pair<std::string, std::string>>;

const std::vector<std::string> kUnset = {"LD_PRELOAD", "TRIRACE_MODE", "TRIRACE_TRACE", "TRIRACE_NCCL_LIBRARY",
                                         "TRIRACE_TRACE_BUFFER_MB", "TRIRACE_DEBUG", "TRIRACE_DEBUG_FILE"};

// Lines of `out` that do not depend on the shim being loaded.
std::string WithoutAnnotations(const std::string& out) {
  std::string kept;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (line.substr(0, 6) == "annot ") continue;
    kept.append(line.data(), line.size());
    kept += '\n';
  }
  return kept;
}

class StandinTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("trirace-interpose"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ProcessResult Run(const std::vector<std::string>& args, Env env, bool preload = true) {
    std::vector<std::string> argv = {NCCL_PROBE};
    argv.insert(argv.end(), args.begin(), args.end());
    if (preload) env.emplace_back("LD_PRELOAD", SHIM_PATH);
    std::vector<std::string> unset;
    for (const auto& name : kUnset) {
      bool set = false;
      for (const auto& [k, v] : env) set |= k == name;
      if (!set) unset.push_back(name);
    }
    return RunProcess(argv, env, unset, 60000);
  }
  std::string TracePath() const { return dir_ + "/trace.json"; }
  TraceFile ReadTraceOrFail() {
    TraceFile t;
    std::string error;
    EXPECT_TRUE(ReadTrace(TracePath(), &t, &error)) << error;
    return t;
  }

  std::string dir_;
};

TEST_F(StandinTest, ResultsAndReturnCodesAreIdenticalWithAndWithoutTheShim) {
  ProcessResult plain = Run({"basic", STANDIN_PATH}, {}, /*preload=*/false);
  ProcessResult shim = Run({"basic", STANDIN_PATH}, {{"TRIRACE_TRACE", TracePath()}});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(shim.exit_code, 0) << shim.err;
  EXPECT_EQ(WithoutAnnotations(plain.out), WithoutAnnotations(shim.out));
  EXPECT_THAT(plain.out, HasSubstr("result AllReduce=1"));
  EXPECT_THAT(plain.out, HasSubstr("rc AllReduce(NULL comm)=4"));  // ncclInvalidArgument, passed through
  EXPECT_THAT(plain.out, HasSubstr("rc GroupEnd(unbalanced)=5"));  // ncclInvalidUsage
  // Each call reached the library exactly once: ncclBcast's own call to
  // ncclBroadcast went through the shim and was forwarded, not duplicated.
  EXPECT_THAT(shim.out, HasSubstr("calls Bcast=1\ncalls AllGather=1"));
  EXPECT_THAT(shim.out, HasSubstr("calls Broadcast=1"));
  EXPECT_THAT(shim.out, HasSubstr("calls AllReduce=3"));
}

// A real NCCL in a folder anyone can write to is used (the job asked for
// it), with one WARN naming the folder.
TEST_F(StandinTest, AnNcclInAWorldWritableFolderIsNamedInAWarning) {
  const std::string open_dir = dir_ + "/open";
  std::filesystem::create_directory(open_dir);
  std::filesystem::permissions(open_dir, std::filesystem::perms::all);
  const std::string lib = open_dir + "/libnccl.so.2";
  std::filesystem::copy_file(STANDIN_PATH, lib);
  ProcessResult r = Run({"basic", lib}, {{"TRIRACE_MODE", "observe"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the folder " + open_dir + " is world-writable: anyone who can write there"));

  std::filesystem::permissions(open_dir, std::filesystem::perms::owner_all);
  r = Run({"basic", lib}, {{"TRIRACE_MODE", "observe"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("world-writable")));
}

TEST_F(StandinTest, TraceHoldsEveryOpInOrderWithItsTag) {
  ProcessResult r = Run({"basic", STANDIN_PATH}, {{"TRIRACE_TRACE", TracePath()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceFile t = ReadTraceOrFail();
  EXPECT_EQ(CheckPerfettoStructure(t), "");
  struct stat st {};
  ASSERT_EQ(stat(TracePath().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "a trace is the job's: only its uid reads it";

  std::vector<TraceOp> first = OpsOfComm(t, 1);
  std::vector<std::string> funcs;
  for (const auto& op : first) funcs.push_back(op.func);
  // Bcast appears once: the re-entered ncclBroadcast is not an op of its own.
  EXPECT_THAT(funcs, ElementsAre("AllReduce", "Bcast", "Send", "Recv", "AllReduce"));
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].seq, i);

  const auto& ar = first[0].args;
  EXPECT_EQ(ar["bytes"], 1024);
  EXPECT_EQ(ar["dtype"], "float32");
  EXPECT_EQ(ar["redop"], "sum");
  EXPECT_EQ(ar["class"], "DENSE");
  EXPECT_EQ(ar["tag"]["layer"], 3);
  EXPECT_EQ(ar["tag"]["phase"], TRIRACE_PHASE_BACKWARD);
  EXPECT_EQ(ar["tag"]["iteration"], 7);  // from trirace_iteration_begin
  EXPECT_EQ(first[0].group, 0u);

  // The grouped send/recv share one group id and carry the scope's tag.
  EXPECT_NE(first[2].group, 0u);
  EXPECT_EQ(first[2].group, first[3].group);
  EXPECT_EQ(first[2].args["peer"], 0);
  EXPECT_EQ(first[3].args["tag"]["micro_batch"], 2);
  EXPECT_EQ(first[3].args["tag"]["stage"], 1);
  EXPECT_FALSE(first[3].args["tag"].contains("layer"));  // popped before
  EXPECT_EQ(first[1].args["root"], 0);
  EXPECT_EQ(first[4].result, 4);  // bad dtype: the library's error, recorded

  // The split comm: annotated as expert, its AllGather on its own track.
  const int sub = CommIndexNamed(t, "expert (annotated)");
  ASSERT_GT(sub, 1);
  std::vector<TraceOp> second = OpsOfComm(t, sub);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].func, "AllGather");
  EXPECT_EQ(second[0].args["class"], "SPARSE");

  // The call on a NULL comm is on the untracked track, with its error.
  std::vector<TraceOp> untracked = OpsOfComm(t, 0);
  ASSERT_EQ(untracked.size(), 1u);
  EXPECT_EQ(untracked[0].result, 4);

  EXPECT_EQ(t.other["dropped_events"], "0");
  EXPECT_EQ(t.other["incomplete_events"], "0");
  EXPECT_THAT(t.other["comm 2"], HasSubstr("created_by=CommSplit"));
  std::vector<std::string> calls;
  for (const auto& e : t.comm_events) calls.push_back(e["name"].get<std::string>());
  EXPECT_THAT(calls, ElementsAre("CommInitRank", "CommSplit", "CommDestroy", "CommDestroy"));
}

TEST_F(StandinTest, RoleIsInferredFromTrafficWhenNotAnnotated) {
  ProcessResult r = Run({"threads", STANDIN_PATH, "1", "4"}, {{"TRIRACE_TRACE", TracePath()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceFile t = ReadTraceOrFail();
  // Two allreduces of 256 B and two allgathers: gather traffic dominates.
  EXPECT_GE(CommIndexNamed(t, "comm 1 expert (inferred)"), 1);
}

TEST_F(StandinTest, WorksWhenTheLibraryIsLoadedLocallyByTheFramework) {
  ProcessResult r = Run({"local", STANDIN_PATH, NCCL_USER_PATH},
                        {{"TRIRACE_TRACE", TracePath()}, {"TRIRACE_DEBUG", "INFO"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("user=0"));
  EXPECT_THAT(r.out, HasSubstr("calls AllReduce=1"));
  EXPECT_THAT(r.err, HasSubstr("already loaded libnccl.so.2"));
  TraceFile t = ReadTraceOrFail();
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].func, "AllReduce");
  EXPECT_EQ(t.ops[0].comm_index, 1);
}

TEST_F(StandinTest, ConcurrentThreadsOnTheirOwnCommsAreEachRecordedInOrder) {
  constexpr int kThreads = 4, kOps = 300;
  ProcessResult r = Run({"threads", STANDIN_PATH, std::to_string(kThreads), std::to_string(kOps)},
                        {{"TRIRACE_TRACE", TracePath()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < kThreads; ++i) EXPECT_THAT(r.out, HasSubstr("thread " + std::to_string(i) + " failures=0"));
  TraceFile t = ReadTraceOrFail();
  EXPECT_EQ(CheckPerfettoStructure(t), "");
  for (int c = 1; c <= kThreads; ++c) {
    std::vector<TraceOp> ops = OpsOfComm(t, c);
    ASSERT_EQ(ops.size(), static_cast<size_t>(kOps)) << "comm " << c;
    const int layer = ops[0].args["tag"]["layer"].get<int>();
    for (int i = 0; i < kOps; ++i) {
      EXPECT_EQ(ops[i].seq, static_cast<uint64_t>(i));
      EXPECT_EQ(ops[i].func, i % 2 == 0 ? "AllReduce" : "AllGather");
      EXPECT_EQ(ops[i].args["tag"]["layer"], layer);  // one thread per comm
      EXPECT_EQ(ops[i].args["tag"]["micro_batch"], i);
    }
  }
}

TEST_F(StandinTest, AFullBufferCountsEveryDroppedEvent) {
  constexpr int kOps = 60000;  // far more than 1 MiB of records
  ProcessResult r = Run({"many", STANDIN_PATH, std::to_string(kOps)},
                        {{"TRIRACE_TRACE", TracePath()}, {"TRIRACE_TRACE_BUFFER_MB", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceFile t = ReadTraceOrFail();
  const uint64_t dropped = std::stoull(t.other["dropped_events"]);
  const uint64_t records = std::stoull(t.other["records"]);
  // Every op and the two comm events are either in the file or counted.
  EXPECT_EQ(records + dropped, static_cast<uint64_t>(kOps) + 2);
  EXPECT_EQ(records, t.ops.size() + t.comm_events.size());
  if (dropped > 0) {
    EXPECT_THAT(r.err, HasSubstr("TRIRACE_TRACE_BUFFER_MB"));
  }
}

TEST_F(StandinTest, ModeOffForwardsOnlyAndWritesNoTrace) {
  ProcessResult plain = Run({"basic", STANDIN_PATH}, {}, /*preload=*/false);
  ProcessResult off = Run({"basic", STANDIN_PATH}, {{"TRIRACE_MODE", "off"}, {"TRIRACE_TRACE", TracePath()}});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(WithoutAnnotations(plain.out), WithoutAnnotations(off.out));
  EXPECT_FALSE(std::filesystem::exists(TracePath()));
}

// Over a library that is not hostccl, schedule mode needs the CUDA backend;
// without a CUDA driver it says so once and the shim observes.
TEST_F(StandinTest, ScheduleModeWithoutACudaDriverWarnsAndObserves) {
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(cuda);
    GTEST_SKIP() << "a CUDA driver is installed: schedule mode would gate on it (tests/gpu/ covers that)";
  }
  ProcessResult r = Run({"basic", STANDIN_PATH},
                        {{"TRIRACE_MODE", "schedule"}, {"TRIRACE_TRACE", TracePath()}, {"TRIRACE_DEBUG", "INFO"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("TRIRACE_MODE=schedule: no CUDA driver"));
  EXPECT_THAT(r.err, HasSubstr("running in observe mode"));
  EXPECT_THAT(r.err, HasSubstr("real NCCL 2.28.9"));
  EXPECT_THAT(r.err, HasSubstr("summary: comm 1 id"));
  TraceFile t = ReadTraceOrFail();
  ASSERT_EQ(OpsOfComm(t, 1).size(), 5u);
  for (const TraceOp& op : OpsOfComm(t, 1)) EXPECT_FALSE(op.args.contains("gate_wait_us"));
}

TEST_F(StandinTest, BadValuesWarnAndUseTheDefaults) {
  ProcessResult r = Run({"basic", STANDIN_PATH}, {{"TRIRACE_MODE", "fastest"},
                                                  {"TRIRACE_TRACE_BUFFER_MB", "lots"},
                                                  {"TRIRACE_TRACE", TracePath()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("TRIRACE_MODE=\"fastest\" is not valid"));
  EXPECT_THAT(r.err, HasSubstr("TRIRACE_TRACE_BUFFER_MB=\"lots\" is not valid"));
  TraceFile t = ReadTraceOrFail();  // observe, the default, wrote the trace
  EXPECT_EQ(OpsOfComm(t, 1).size(), 5u);
}

TEST_F(StandinTest, AnNcclOutsideTheSupportedVersionsWarnsAndIsOnlyObserved) {
  // Before 2.19, and another major; a newer 2.x minor is scheduled
  // (comm_role_creation_test.cc, NcclReleaseTest).
  for (const char* version : {"21800", "30100"}) {
    ProcessResult plain = Run({"basic", STANDIN_PATH}, {{"STANDIN_NCCL_VERSION", version}}, /*preload=*/false);
    ProcessResult r = Run({"basic", STANDIN_PATH}, {{"STANDIN_NCCL_VERSION", version},
                                                    {"TRIRACE_MODE", "schedule"},
                                                    {"TRIRACE_TRACE", TracePath()}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(WithoutAnnotations(plain.out), WithoutAnnotations(r.out));
    EXPECT_THAT(r.err, HasSubstr("observe only"));
    EXPECT_EQ(OpsOfComm(ReadTraceOrFail(), 1).size(), 5u);
  }
}

TEST_F(StandinTest, UnbalancedPopWarnsAndReturnsTheErrorCode) {
  ProcessResult r = Run({"basic", STANDIN_PATH}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("annot pop(unbalanced)=3"));  // TRIRACE_ERR_UNBALANCED
  EXPECT_THAT(r.out, HasSubstr("annot push=0"));
  EXPECT_THAT(r.out, HasSubstr("annot role=0"));
  EXPECT_THAT(r.err, HasSubstr("trirace_pop_tag: called with no tag pushed"));
}

TEST_F(StandinTest, TheShimAsTheOnlyNcclGivesAClearError) {
  ProcessResult r = Run({"version"}, {{"TRIRACE_NCCL_LIBRARY", SHIM_PATH}});
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("rc GetVersion=2"));  // ncclSystemError
  EXPECT_THAT(r.out, HasSubstr("TriRace: no real NCCL library found"));
  EXPECT_THAT(r.err, HasSubstr("no real NCCL found"));
}

TEST_F(StandinTest, ALibraryPathThatDoesNotLoadIsReported) {
  ProcessResult r = Run({"version"}, {{"TRIRACE_NCCL_LIBRARY", dir_ + "/missing/libnccl.so.2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("rc GetVersion=2"));
  EXPECT_THAT(r.err, HasSubstr("TRIRACE_NCCL_LIBRARY=\"" + dir_ + "/missing/libnccl.so.2\" does not load"));
}

TEST_F(StandinTest, AnUnwritableTracePathWarnsAndForwards) {
  ProcessResult plain = Run({"basic", STANDIN_PATH}, {}, /*preload=*/false);
  ProcessResult r = Run({"basic", STANDIN_PATH}, {{"TRIRACE_TRACE", dir_ + "/no/such/dir/t.json"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WithoutAnnotations(plain.out), WithoutAnnotations(r.out));
  EXPECT_THAT(r.err, HasSubstr("cannot create"));
}

}  // namespace
}  // namespace trirace::interpose::testing
