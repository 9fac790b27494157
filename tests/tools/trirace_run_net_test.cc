// `trirace run --net`, the real command run as a child process: the network
// transport it picks on fake sysfs trees (TRIRACE_SYSFS_ROOT), the one line
// it prints, and the environment the program gets.
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"

namespace trirace {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing_support::EnvList;
using testing_support::RunProcess;

// A throwaway install prefix: bin/trirace, lib/libtrirace.so and, when
// asked, lib/libnccl-net-trirace.so (copies of a harmless test library).
class Prefix {
 public:
  explicit Prefix(bool with_plugin) : root_(testing_support::MakeTempDir("trirace-run-net-")) {
    fs::create_directories(root_ / "bin");
    fs::create_directories(root_ / "lib");
    fs::copy_file(TRIRACE_EXE, root_ / "bin" / "trirace");
    fs::copy_file(FAKE_PROVIDER, root_ / "lib" / "libtrirace.so");
    if (with_plugin) fs::copy_file(FAKE_PROVIDER, root_ / "lib" / "libnccl-net-trirace.so");
  }
  ~Prefix() { fs::remove_all(root_); }
  Prefix(const Prefix&) = delete;
  Prefix& operator=(const Prefix&) = delete;
  std::string exe() const { return (root_ / "bin" / "trirace").string(); }
  std::string plugin() const { return (root_ / "lib" / "libnccl-net-trirace.so").string(); }

 private:
  fs::path root_;
};

// A fake sysfs tree of one of four machines.
enum class Machine { kNoRdma, kActiveMlx5, kDownOnly, kRoce };

class FakeSys {
 public:
  explicit FakeSys(Machine m) : root_(testing_support::MakeTempDir("trirace-run-net-sys-")) {
    Write("class/net/eth0/operstate", "up");
    Write("class/net/eth0/type", "1");
    switch (m) {
      case Machine::kNoRdma:
        break;
      case Machine::kActiveMlx5:
        Port("mlx5_0", 1, "4: ACTIVE", "InfiniBand");
        Port("mlx5_0", 2, "1: DOWN", "InfiniBand");
        break;
      case Machine::kDownOnly:
        Port("mlx5_0", 1, "1: DOWN", "InfiniBand");
        Port("mlx5_1", 1, "2: INIT", "InfiniBand");
        break;
      case Machine::kRoce:
        Port("mlx5_0", 1, "4: ACTIVE", "Ethernet");
        break;
    }
  }
  ~FakeSys() { fs::remove_all(root_); }
  FakeSys(const FakeSys&) = delete;
  FakeSys& operator=(const FakeSys&) = delete;
  const std::string& root() const { return root_; }

 private:
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text << "\n";
  }
  void Port(const std::string& dev, int port, const std::string& state, const std::string& layer) {
    const std::string p = "class/infiniband/" + dev + "/ports/" + std::to_string(port);
    Write(p + "/state", state);
    Write(p + "/link_layer", layer);
    Write(p + "/rate", "200 Gb/sec (4X HDR)");
  }
  std::string root_;
};

// What the program prints: each variable's value, or "(unset)".
const std::vector<std::string> kShow = {
    "sh", "-c",
    "echo NCCL_NET_PLUGIN=${NCCL_NET_PLUGIN-(unset)} TRIRACE_NET_INNER=${TRIRACE_NET_INNER-(unset)} "
    "NCCL_NET=${NCCL_NET-(unset)}"};

const std::vector<std::string> kNetVars = {"NCCL_NET_PLUGIN", "TRIRACE_NET_INNER", "NCCL_NET", "NCCL_IB_DISABLE"};

// Runs `trirace run [flags] -- sh -c ...` of `prefix` on `sys` with `env`
// set and the other network variables unset.
testing_support::ProcessResult RunNet(const Prefix& prefix, const FakeSys& sys, const std::vector<std::string>& flags,
                                      const EnvList& env) {
  std::vector<std::string> argv = {prefix.exe(), "run"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), kShow.begin(), kShow.end());
  EnvList set = {{"TRIRACE_SYSFS_ROOT", sys.root()}, {"LD_PRELOAD", ""}};
  std::vector<std::string> unset;
  for (const std::string& v : kNetVars) {
    bool given = false;
    for (const auto& [name, value] : env) given = given || name == v;
    if (!given) unset.push_back(v);
  }
  set.insert(set.end(), env.begin(), env.end());
  return RunProcess(argv, set, unset);
}

struct RunCase {
  const char* name;
  Machine machine;
  std::vector<std::string> flags;
  EnvList env;
  std::string line_prefix;  // the stderr line starts so
  std::vector<std::string> why;
  std::string plugin;  // NCCL_NET_PLUGIN the program sees: "ours", "(unset)" or a value
  std::string inner;   // TRIRACE_NET_INNER
  std::string net;     // NCCL_NET
};

void PrintTo(const RunCase& c, std::ostream* os) { *os << c.name; }

class TriraceRunNetTest : public ::testing::TestWithParam<RunCase> {};

TEST_P(TriraceRunNetTest, PrintsOneLineAndSetsTheProgramsEnvironment) {
  const RunCase& c = GetParam();
  Prefix prefix(/*with_plugin=*/true);
  FakeSys sys(c.machine);
  const auto r = RunNet(prefix, sys, c.flags, c.env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(r.err, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_THAT(lines[0], StartsWith("trirace run: " + c.line_prefix)) << r.err;
  EXPECT_EQ(lines[0].back(), ')');
  for (const std::string& part : c.why) EXPECT_THAT(lines[0], HasSubstr(part));
  const std::string plugin = c.plugin == "ours" ? prefix.plugin() : c.plugin;
  EXPECT_EQ(r.out, "NCCL_NET_PLUGIN=" + plugin + " TRIRACE_NET_INNER=" + c.inner + " NCCL_NET=" + c.net + "\n");
}

INSTANTIATE_TEST_SUITE_P(
    Machines, TriraceRunNetTest,
    ::testing::Values(
        RunCase{"NoRdmaIsTcp", Machine::kNoRdma, {}, {}, "net: tcp (no RDMA device with an ACTIVE port", {},
                "ours", "(unset)", "(unset)"},
        RunCase{"DownPortsAreTcp", Machine::kDownOnly, {}, {}, "net: tcp (", {"NCCL would use sockets anyway"},
                "ours", "(unset)", "(unset)"},
        RunCase{"ActiveMlx5IsNative", Machine::kActiveMlx5, {}, {}, "net: native (an RDMA port is ACTIVE",
                {"NCCL keeps its own IB transport", "link occupancy comes from the NIC port counters"}, "(unset)",
                "(unset)", "(unset)"},
        RunCase{"RoceIsNative", Machine::kRoce, {}, {}, "net: native (", {}, "(unset)", "(unset)", "(unset)"},
        RunCase{"IbDisabledIsTcp", Machine::kActiveMlx5, {}, {{"NCCL_IB_DISABLE", "1"}},
                "net: tcp (NCCL_IB_DISABLE=1: NCCL would use sockets anyway)", {}, "ours", "(unset)", "(unset)"},
        RunCase{"NcclNetSocketIsTcpUnderOurNetName", Machine::kActiveMlx5, {}, {{"NCCL_NET", "Socket"}},
                "net: tcp (NCCL_NET=Socket", {"NCCL_NET=Socket -> TriRace"}, "ours", "(unset)", "TriRace"},
        RunCase{"ExternalPluginIsWrapped", Machine::kActiveMlx5, {}, {{"NCCL_NET_PLUGIN", "ofi"}},
                "net: wrap (NCCL_NET_PLUGIN=ofi: TriRace's plugin wraps it and counts its bytes)", {}, "ours",
                "ofi", "(unset)"},
        RunCase{"OurPluginSetByTheUserIsDroppedOnRdma", Machine::kRoce, {}, {{"NCCL_NET_PLUGIN", "trirace"}},
                "net: native (", {"NCCL_NET_PLUGIN=trirace unset"}, "(unset)", "(unset)", "(unset)"},
        RunCase{"ExplicitTcpOverRdma", Machine::kActiveMlx5, {"--net", "tcp"}, {},
                "net: tcp (as requested: inter-node traffic goes over TCP sockets, not the ACTIVE RDMA port)", {},
                "ours", "(unset)", "(unset)"},
        RunCase{"ExplicitTcpReplacesAPlugin", Machine::kNoRdma, {"--net=tcp"},
                {{"NCCL_NET_PLUGIN", "ofi"}, {"TRIRACE_NET_INNER", "ofi"}}, "net: tcp (as requested",
                {"NCCL_NET_PLUGIN=ofi replaced", "TRIRACE_NET_INNER=ofi unset"}, "ours", "(unset)", "(unset)"},
        RunCase{"ExplicitNativeWithoutRdmaSaysSockets", Machine::kNoRdma, {"--net", "native"}, {},
                "net: native (as requested; no RDMA device with an ACTIVE port: NCCL will use its socket "
                "transport",
                {}, "(unset)", "(unset)", "(unset)"},
        RunCase{"ExplicitWrapOverridesNcclNetIb", Machine::kActiveMlx5, {"--net", "WRAP"},
                {{"NCCL_NET_PLUGIN", "/opt/ofi/libnccl-net.so"}, {"NCCL_NET", "IB"}},
                "net: wrap (as requested: TriRace's plugin wraps NCCL_NET_PLUGIN=/opt/ofi/libnccl-net.so",
                {"NCCL_NET=IB -> TriRace"}, "ours", "/opt/ofi/libnccl-net.so", "TriRace"},
        RunCase{"LastNetFlagCounts", Machine::kNoRdma, {"--net", "tcp", "--net", "native"}, {}, "net: native (",
                {}, "(unset)", "(unset)", "(unset)"}),
    [](const ::testing::TestParamInfo<RunCase>& info) { return std::string(info.param.name); });

TEST(TriraceRunNetErrorsTest, WrapWithoutAPluginIsAUsageError) {
  Prefix prefix(true);
  FakeSys sys(Machine::kActiveMlx5);
  const auto r = RunNet(prefix, sys, {"--net", "wrap"}, {});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "") << "the program must not run";
  EXPECT_THAT(r.err, StartsWith("trirace run: --net wrap needs another net plugin to wrap and none is set "
                                "(NCCL_NET_PLUGIN is unset): set NCCL_NET_PLUGIN (or TRIRACE_NET_INNER)"));
  const auto ours = RunNet(prefix, sys, {"--net", "wrap"}, {{"NCCL_NET_PLUGIN", "trirace"}});
  EXPECT_EQ(ours.exit_code, 2);
  EXPECT_THAT(ours.err, HasSubstr("NCCL_NET_PLUGIN=trirace is TriRace's own plugin"));
}

TEST(TriraceRunNetErrorsTest, BadNetValueNamesTheFlagValueAndChoices) {
  Prefix prefix(true);
  FakeSys sys(Machine::kNoRdma);
  const auto bad = RunNet(prefix, sys, {"--net", "ib"}, {});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_THAT(bad.err, HasSubstr("--net \"ib\" is not valid: expected one of auto, tcp, wrap, native"));
  const auto none = RunProcess({prefix.exe(), "run", "--net"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("--net needs a value"));
}

TEST(TriraceRunNetErrorsTest, WithoutOurPluginAutoSaysSoAndExplicitTcpFails) {
  Prefix prefix(/*with_plugin=*/false);
  FakeSys sys(Machine::kNoRdma);
  const auto r = RunNet(prefix, sys, {}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "trirace run: net: native (net plugin libnccl-net-trirace.so not found: NCCL keeps its own transport; "
            "link occupancy will come from NIC counters)\n");
  EXPECT_EQ(r.out, "NCCL_NET_PLUGIN=(unset) TRIRACE_NET_INNER=(unset) NCCL_NET=(unset)\n");
  const auto kept = RunNet(prefix, sys, {}, {{"NCCL_NET_PLUGIN", "ofi"}});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_THAT(kept.out, StartsWith("NCCL_NET_PLUGIN=ofi "));
  const auto tcp = RunNet(prefix, sys, {"--net", "tcp"}, {});
  EXPECT_EQ(tcp.exit_code, 1);
  EXPECT_EQ(tcp.out, "");
  EXPECT_THAT(tcp.err, StartsWith("trirace run: --net tcp needs the net plugin libnccl-net-trirace.so, which is "
                                  "not built or installed\nlooked in:\n"));
  const auto native = RunNet(prefix, sys, {"--net", "native"}, {});
  EXPECT_EQ(native.exit_code, 0) << native.err;
  EXPECT_THAT(native.err, Not(HasSubstr("not found")));
}

TEST(TriraceRunNetErrorsTest, HelpDescribesNet) {
  const auto r = RunProcess({TRIRACE_EXE, "run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--net"));
  EXPECT_THAT(r.out, HasSubstr("one of auto, tcp, wrap, native"));
  EXPECT_THAT(r.out, HasSubstr("TRIRACE_SYSFS_ROOT"));
}

}  // namespace
}  // namespace trirace
