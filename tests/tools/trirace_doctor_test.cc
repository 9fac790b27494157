// `trirace doctor`, run as a child process: the verdict it gives for the
// cases the shim decides on (the real NCCL, CUDA_DEVICE_MAX_CONNECTIONS, the
// requested mode), its exit status, and the JSON contract. hostccl stands in
// for the real NCCL (it has a device backend on this machine).
#include <filesystem>
#include <fstream>
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
                                         "SLURM_NTASKS", "NCCL_NET_PLUGIN", "NCCL_NET", "NCCL_SOCKET_IFNAME",
                                         "TRIRACE_NET_IFNAME", "TRIRACE_NET_CLASS_PRIORITY"};

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

// A `tc qdisc show` dump in a fresh folder, for --qdiscs.
class QdiscDump {
 public:
  explicit QdiscDump(const std::string& text) : dir_(testing_support::MakeTempDir("trirace-doctor-qdisc-")) {
    std::ofstream(path()) << text;
  }
  ~QdiscDump() { std::filesystem::remove_all(dir_); }
  std::string path() const { return dir_ + "/qdiscs.txt"; }

 private:
  std::string dir_;
};

const char kSystemdHost[] =
    "qdisc noqueue 0: dev lo root refcnt 2\n"
    "qdisc mq 0: dev eth0 root\n"
    "qdisc fq_codel 0: dev eth0 parent :1 limit 10240p flows 1024 quantum 1514\n";
const char kPrioHost[] =
    "qdisc noqueue 0: dev lo root refcnt 2\n"
    "qdisc pfifo_fast 0: dev eth0 root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n";

struct ClassOrderCase {
  std::string name;
  const char* qdiscs;
  EnvList env;
  bool marks;
  std::string order;
};

class TriraceDoctorClassOrderTest : public ::testing::TestWithParam<ClassOrderCase> {};

TEST_P(TriraceDoctorClassOrderTest, SaysWhereTheClassOrderIsEnforcedAndWhy) {
  const QdiscDump dump(GetParam().qdiscs);
  EnvList env = {{"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY}, {"TRIRACE_MODE", "schedule"}, {"WORLD_SIZE", "8"}};
  env.insert(env.end(), GetParam().env.begin(), GetParam().env.end());
  auto r = Doctor({"--json", "--qdiscs", dump.path()}, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["class_order"]["text"], GetParam().order);
  EXPECT_EQ(j["traffic_class"]["wire_class_priority"].get<bool>(), GetParam().marks);
  EXPECT_THAT(j["verdict"]["line"].get<std::string>(), HasSubstr(", class order: " + GetParam().order));
  auto text = Doctor({"--qdiscs", dump.path()}, env);
  EXPECT_THAT(text.out, HasSubstr("order      class order: " + GetParam().order));
}

INSTANTIATE_TEST_SUITE_P(
    Hosts, TriraceDoctorClassOrderTest,
    ::testing::Values(
        ClassOrderCase{"SystemdHostGatesAlone", kSystemdHost, {}, false,
                       "gate only (no queue honours the marks: eth0: fq_codel (under mq))"},
        ClassOrderCase{"PriorityQdiscIsTheNetwork", kPrioHost, {}, true,
                       "network (the hosts' queues honour the marks: eth0: pfifo_fast)"},
        ClassOrderCase{"AnAdministratorVouchesForTheFabric", kSystemdHost, {{"TRIRACE_NET_CLASS_PRIORITY", "on"}},
                       true, "network (TRIRACE_NET_CLASS_PRIORITY=on)"},
        ClassOrderCase{"MarksTurnedOff", kPrioHost, {{"TRIRACE_NET_CLASS_PRIORITY", "off"}}, false,
                       "gate only (TRIRACE_NET_CLASS_PRIORITY=off)"},
        ClassOrderCase{"AnotherPolicySetsNoMarks", kPrioHost, {{"TRIRACE_POLICY", "priority"}}, false,
                       "gate only (the priority policy sets no class marks)"}),
    [](const ::testing::TestParamInfo<ClassOrderCase>& info) { return info.param.name; });

TEST(TriraceDoctorTest, NativeRdmaSaysTheFabricsQosCannotBeSeenFromAHost) {
  const std::string sys = testing_support::MakeTempDir("trirace-doctor-sys-");
  const std::string port = sys + "/class/infiniband/mlx5_0/ports/1";
  std::filesystem::create_directories(port);
  std::ofstream(port + "/state") << "4: ACTIVE\n";
  std::ofstream(port + "/link_layer") << "InfiniBand\n";
  const QdiscDump dump(kPrioHost);
  auto r = Doctor({"--json", "--qdiscs", dump.path()}, {{"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY},
                                                       {"TRIRACE_MODE", "schedule"}, {"TRIRACE_SYSFS_ROOT", sys}});
  std::filesystem::remove_all(sys);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_THAT(j["net"]["text"].get<std::string>(), HasSubstr("native"));
  EXPECT_THAT(j["class_order"]["note"].get<std::string>(), HasSubstr("NCCL's own RDMA transport carries the bytes"));
}

TEST(TriraceDoctorTest, AQdiscDumpThatDoesNotParseIsAUsageError) {
  const QdiscDump dump("qdisc pfifo_fast 0: dev eth0 root\nnot a qdisc line\n");
  auto r = Doctor({"--qdiscs", dump.path()}, {{"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY}});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("--qdiscs " + dump.path() + ": tc qdisc show, line 2"));
  auto missing = Doctor({"--qdiscs", "/nonexistent/qdiscs.txt"}, {{"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY}});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--qdiscs /nonexistent/qdiscs.txt: cannot be read"));
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

// The message names the flag, the value and what is accepted (CLI11's own
// range check printed the largest double in full).
TEST(TriraceDoctorTest, ABadRankIsAUsageError) {
  for (const char* rank : {"-1", "abc", "1.5", "2147483648", ""}) {
    auto r = Doctor({"--rank", rank}, {});
    EXPECT_EQ(r.exit_code, 2) << rank << ": " << r.out << r.err;
    EXPECT_EQ(r.err, std::string("trirace doctor: --rank \"") + rank +
                         "\" is not valid: expected an integer from 0 to 2147483647 (see trirace doctor --help)\n");
    EXPECT_EQ(r.out, "") << rank;
  }
}

}  // namespace
}  // namespace trirace
