// `trirace doctor`, run as a child process: the verdict it gives for the
// cases the shim decides on (the real NCCL, CUDA_DEVICE_MAX_CONNECTIONS, the
// requested mode), its exit status, and the JSON contract. hostccl stands in
// for the real NCCL (it has a device backend on this machine).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "support/subprocess.h"

namespace trirace {
namespace {

using ::testing::HasSubstr;
using testing_support::EnvList;
using testing_support::RunProcess;

const std::vector<std::string> kUnset = {"TRIRACE_MODE", "TRIRACE_POLICY", "TRIRACE_NCCL_LIBRARY", "LD_PRELOAD",
                                         "CUDA_DEVICE_MAX_CONNECTIONS", "TRIRACE_OCCUPANCY", "WORLD_SIZE",
                                         "SLURM_NTASKS", "NCCL_NET_PLUGIN", "NCCL_NET"};

testing_support::ProcessResult Doctor(std::vector<std::string> args, EnvList env) {
  args.insert(args.begin(), {TRIRACE_EXE, "doctor"});
  return RunProcess(args, env, kUnset);
}

TEST(TriraceDoctorTest, ScheduleModeOverHostcclRunsAndSaysSo) {
  auto r = Doctor({"--json"}, {{"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY}, {"TRIRACE_MODE", "schedule"},
                               {"WORLD_SIZE", "8"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["shim"]["loads"].get<bool>()) << j["shim"]["error"];
  EXPECT_FALSE(j["shim"]["preloaded"].get<bool>());
  EXPECT_TRUE(j["nccl"]["found"].get<bool>());
  EXPECT_EQ(j["nccl"]["path"].get<std::string>(), HOSTCCL_LIBRARY);
  EXPECT_TRUE(j["device"]["ok"].get<bool>());
  EXPECT_EQ(j["verdict"]["mode"], "schedule");
  EXPECT_TRUE(j["verdict"]["runs"].get<bool>());
  EXPECT_THAT(j["verdict"]["line"].get<std::string>(), HasSubstr("TriRace: schedule mode, trirace policy, 8 ranks"));
  for (const char* role : {"data-parallel", "pipeline", "tensor", "expert"}) {
    EXPECT_TRUE(j["traffic_class"]["roles"].contains(role)) << role;
  }
  EXPECT_TRUE(j["net"]["ok"].get<bool>()) << j["net"]["text"];
}

TEST(TriraceDoctorTest, OneHardwareQueueIsObserveOnlyWithTheFixAndExitsOne) {
  auto r = Doctor({}, {{"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY}, {"TRIRACE_MODE", "schedule"},
                       {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL verdict    TriRace: OBSERVE ONLY, because CUDA_DEVICE_MAX_CONNECTIONS=1"));
  EXPECT_THAT(r.out, HasSubstr("fix: unset CUDA_DEVICE_MAX_CONNECTIONS"));
}

TEST(TriraceDoctorTest, NoRealNcclNamesTheVariableAndExitsOne) {
  auto r = Doctor({"--json"}, {{"TRIRACE_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}, {"TRIRACE_MODE", "schedule"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["nccl"]["found"].get<bool>());
  EXPECT_THAT(j["nccl"]["error"].get<std::string>(), HasSubstr("TRIRACE_NCCL_LIBRARY=\"/nonexistent/libnccl.so.2\""));
  EXPECT_EQ(j["verdict"]["mode"], "off");
  EXPECT_FALSE(j["verdict"]["runs"].get<bool>());
  EXPECT_THAT(j["verdict"]["fix"].get<std::string>(), HasSubstr("TRIRACE_NCCL_LIBRARY"));
}

TEST(TriraceDoctorTest, ObserveModeAskedForRunsAndTheRankLabelsEveryLine) {
  auto r = Doctor({"--rank", "3"}, {{"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY}, {"TRIRACE_MODE", "observe"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("rank 3: ok   verdict    TriRace: observe mode (TRIRACE_MODE=observe)"));
  EXPECT_THAT(r.out, HasSubstr("(not applied in this mode)"));
  for (size_t at = 0, next; at < r.out.size(); at = next + 1) {
    next = r.out.find('\n', at);
    if (next == std::string::npos) next = r.out.size();
    EXPECT_EQ(r.out.compare(at, 8, "rank 3: "), 0) << r.out.substr(at, next - at);
  }
}

TEST(TriraceDoctorTest, ABadRankIsAUsageError) {
  auto r = Doctor({"--rank", "-1"}, {});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--rank"));
}

}  // namespace
}  // namespace trirace
