// trirace run's choice of network transport (tools/trirace/net_choice.h):
// the decision over every case, its invariants over all combinations of
// inputs, and the gathering of its inputs from the environment and from fake
// sysfs trees built here.
#include "tools/trirace/net_choice.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/env_guard.h"
#include "common/params.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"

namespace trirace::tools {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kOurs[] = "/opt/trirace/lib/libnccl-net-trirace.so";

// The changes as a map: name -> value, nullopt for unset.
using EnvMap = std::map<std::string, std::optional<std::string>>;

EnvMap AsMap(const std::vector<EnvChange>& changes) {
  EnvMap m;
  for (const EnvChange& c : changes) m[c.name] = c.value;
  return m;
}

// Inputs built up readably.
struct In {
  NetInputs in;
  explicit In(NetChoice requested) {
    in.requested = requested;
    in.our_plugin = kOurs;
  }
  In& Plugin(const std::string& v) { in.user_plugin = v; return *this; }
  In& Inner(const std::string& v) { in.user_inner = v; return *this; }
  In& Net(const std::string& v) { in.nccl_net = v; return *this; }
  In& IbDisabled() { in.ib_disabled = true; return *this; }
  In& Rdma() { in.active_rdma = true; return *this; }
  In& NoPlugin() { in.our_plugin.clear(); return *this; }
};

struct Case {
  const char* name;
  NetInputs in;
  NetChoice choice;
  EnvMap env;
  std::vector<std::string> why;  // substrings of the reason
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class NetChoiceDecideTest : public ::testing::TestWithParam<Case> {};

TEST_P(NetChoiceDecideTest, ChoosesAndSaysWhy) {
  const Case& c = GetParam();
  const absl::StatusOr<NetDecision> d = DecideNet(c.in);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(NetChoiceName(d->choice), NetChoiceName(c.choice)) << d->why;
  EXPECT_EQ(AsMap(d->env), c.env) << d->why;
  for (const std::string& part : c.why) EXPECT_THAT(d->why, HasSubstr(part));
  EXPECT_EQ(NetLine(*d), "net: " + std::string(NetChoiceName(c.choice)) + " (" + d->why + ")");
}

const std::string kOursStr = kOurs;
const EnvMap kTcpEnv = {{"NCCL_NET_PLUGIN", kOursStr}};
const EnvMap kNoChange = {};

INSTANTIATE_TEST_SUITE_P(
    Auto, NetChoiceDecideTest,
    ::testing::Values(
        Case{"NothingNoRdmaIsTcp", In(NetChoice::kAuto).in, NetChoice::kTcp, kTcpEnv,
             {"no RDMA device with an ACTIVE port: NCCL would use sockets anyway"}},
        Case{"ActiveRdmaIsNative", In(NetChoice::kAuto).Rdma().in, NetChoice::kNative, kNoChange,
             {"an RDMA port is ACTIVE: NCCL keeps its own IB transport", "NIC port counters"}},
        Case{"IbDisabledIsTcp", In(NetChoice::kAuto).Rdma().IbDisabled().in, NetChoice::kTcp, kTcpEnv,
             {"NCCL_IB_DISABLE=1: NCCL would use sockets anyway"}},
        Case{"NcclNetSocketIsTcpAndNamesOurNet", In(NetChoice::kAuto).Rdma().Net("Socket").in, NetChoice::kTcp,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"NCCL_NET", "TriRace"}},
             {"NCCL_NET=Socket: NCCL would use sockets anyway", "NCCL_NET=Socket -> TriRace"}},
        Case{"NcclNetSocketAnyCase", In(NetChoice::kAuto).Net("socket").in, NetChoice::kTcp,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"NCCL_NET", "TriRace"}}, {"NCCL_NET=socket"}},
        Case{"NcclNetSocketBeatsAnExternalPlugin", In(NetChoice::kAuto).Plugin("ofi").Net("Socket").in,
             NetChoice::kTcp, {{"NCCL_NET_PLUGIN", kOursStr}, {"NCCL_NET", "TriRace"}},
             {"NCCL_NET_PLUGIN=ofi replaced"}},
        Case{"NcclNetIbIsNative", In(NetChoice::kAuto).Rdma().Net("IB").in, NetChoice::kNative, kNoChange,
             {"NCCL_NET=IB forces NCCL's IB transport", "NIC port counters"}},
        Case{"NcclNetIbWithoutRdmaWarns", In(NetChoice::kAuto).Net("IB").in, NetChoice::kNative, kNoChange,
             {"NCCL will find no IB net"}},
        Case{"NcclNetIbKeepsAnExternalPlugin", In(NetChoice::kAuto).Rdma().Plugin("ofi").Net("IB").in,
             NetChoice::kNative, kNoChange, {"forces NCCL's IB transport"}},
        Case{"ExternalPluginIsWrapped", In(NetChoice::kAuto).Plugin("ofi").in, NetChoice::kWrap,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", "ofi"}},
             {"NCCL_NET_PLUGIN=ofi: TriRace's plugin wraps it and counts its bytes"}},
        Case{"ExternalPluginBeatsRdma", In(NetChoice::kAuto).Rdma().Plugin("libnccl-net.so").in, NetChoice::kWrap,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", "libnccl-net.so"}},
             {"NCCL_NET_PLUGIN=libnccl-net.so"}},
        Case{"ExternalPluginsNetNameBecomesOurs", In(NetChoice::kAuto).Plugin("ofi").Net("AWS Libfabric").in,
             NetChoice::kWrap,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", "ofi"}, {"NCCL_NET", "TriRace"}},
             {"NCCL_NET=AWS Libfabric -> TriRace"}},
        Case{"ExternalPluginReplacesAnotherInner", In(NetChoice::kAuto).Plugin("ofi").Inner("sharp").in,
             NetChoice::kWrap, {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", "ofi"}},
             {"TRIRACE_NET_INNER=sharp replaced"}},
        Case{"OurPluginByNameWithRdmaIsNativeAndUnset", In(NetChoice::kAuto).Rdma().Plugin("trirace").in,
             NetChoice::kNative, {{"NCCL_NET_PLUGIN", std::nullopt}}, {"NCCL_NET_PLUGIN=trirace unset"}},
        Case{"OurPluginByPathIsNotExternal", In(NetChoice::kAuto).Plugin(kOurs).in, NetChoice::kTcp, kTcpEnv,
             {"NCCL would use sockets anyway"}},
        Case{"OurPluginElsewhereIsNotExternal",
             In(NetChoice::kAuto).Plugin("/other/lib/libnccl-net-trirace.so").in, NetChoice::kTcp, kTcpEnv, {}},
        Case{"OurPluginWithAnInnerIsWrap", In(NetChoice::kAuto).Plugin("trirace").Inner("ofi").in,
             NetChoice::kWrap, {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", "ofi"}},
             {"TRIRACE_NET_INNER=ofi: TriRace's plugin wraps it"}},
        Case{"InnerNamingOursIsUnsetForTcp", In(NetChoice::kAuto).Inner("trirace").in, NetChoice::kTcp,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", std::nullopt}},
             {"TRIRACE_NET_INNER=trirace unset"}},
        Case{"PluginNoneWithRdmaStays", In(NetChoice::kAuto).Rdma().Plugin("none").in, NetChoice::kNative,
             kNoChange, {"NCCL keeps its own IB transport"}},
        Case{"PluginNoneWithoutRdmaIsReplaced", In(NetChoice::kAuto).Plugin("none").in, NetChoice::kTcp, kTcpEnv,
             {"NCCL_NET_PLUGIN=none replaced"}},
        Case{"AnotherNetWithoutAPluginIsLeftToNccl", In(NetChoice::kAuto).Net("AWS Libfabric").in,
             NetChoice::kNative, kNoChange, {"NCCL_NET=AWS Libfabric names a net of a plugin NCCL finds itself"}},
        Case{"OurNetNameWithRdmaIsUnset", In(NetChoice::kAuto).Rdma().Net("TriRace").in, NetChoice::kNative,
             {{"NCCL_NET", std::nullopt}}, {"NCCL_NET=TriRace unset"}},
        Case{"OurNetNameWithoutRdmaStays", In(NetChoice::kAuto).Net("TriRace").in, NetChoice::kTcp, kTcpEnv, {}},
        Case{"OurPluginMissingLeavesEverything", In(NetChoice::kAuto).NoPlugin().in, NetChoice::kNative, kNoChange,
             {"net plugin libnccl-net-trirace.so not found", "link occupancy will come from NIC counters"}},
        Case{"OurPluginMissingKeepsAnExternal", In(NetChoice::kAuto).NoPlugin().Plugin("ofi").in,
             NetChoice::kNative, kNoChange, {"not found"}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Explicit, NetChoiceDecideTest,
    ::testing::Values(
        Case{"TcpWithoutRdma", In(NetChoice::kTcp).in, NetChoice::kTcp, kTcpEnv, {"as requested"}},
        Case{"TcpOverActiveRdmaSaysSo", In(NetChoice::kTcp).Rdma().in, NetChoice::kTcp, kTcpEnv,
             {"as requested: inter-node traffic goes over TCP sockets, not the ACTIVE RDMA port"}},
        Case{"TcpReplacesAnExternalAndUnsetsInner", In(NetChoice::kTcp).Plugin("ofi").Inner("ofi").in,
             NetChoice::kTcp, {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", std::nullopt}},
             {"NCCL_NET_PLUGIN=ofi replaced", "TRIRACE_NET_INNER=ofi unset"}},
        Case{"TcpOverridesNcclNetIb", In(NetChoice::kTcp).Rdma().Net("IB").in, NetChoice::kTcp,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"NCCL_NET", "TriRace"}}, {"NCCL_NET=IB -> TriRace"}},
        Case{"WrapAnExternal", In(NetChoice::kWrap).Rdma().Plugin("ofi").in, NetChoice::kWrap,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", "ofi"}},
             {"as requested: TriRace's plugin wraps NCCL_NET_PLUGIN=ofi and counts its bytes"}},
        Case{"WrapOverridesNcclNetIb", In(NetChoice::kWrap).Plugin("ofi").Net("IB").in, NetChoice::kWrap,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", "ofi"}, {"NCCL_NET", "TriRace"}}, {}},
        Case{"WrapAnInner", In(NetChoice::kWrap).Inner("/opt/ofi/libnccl-net.so").in, NetChoice::kWrap,
             {{"NCCL_NET_PLUGIN", kOursStr}, {"TRIRACE_NET_INNER", "/opt/ofi/libnccl-net.so"}},
             {"TRIRACE_NET_INNER=/opt/ofi/libnccl-net.so"}},
        Case{"NativeWithoutRdmaUsesSockets", In(NetChoice::kNative).in, NetChoice::kNative, kNoChange,
             {"as requested; no RDMA device with an ACTIVE port: NCCL will use its socket transport",
              "interface counters"}},
        Case{"NativeWithIbDisabledUsesSockets", In(NetChoice::kNative).Rdma().IbDisabled().in, NetChoice::kNative,
             kNoChange, {"NCCL_IB_DISABLE=1: NCCL will use its socket transport"}},
        Case{"NativeWithRdmaKeepsIb", In(NetChoice::kNative).Rdma().in, NetChoice::kNative, kNoChange,
             {"as requested; NCCL keeps its own IB transport", "NIC port counters"}},
        Case{"NativeUnsetsOurPlugin", In(NetChoice::kNative).Rdma().Plugin(kOurs).in, NetChoice::kNative,
             {{"NCCL_NET_PLUGIN", std::nullopt}}, {"unset"}},
        Case{"NativeKeepsAnExternal", In(NetChoice::kNative).Plugin("ofi").in, NetChoice::kNative, kNoChange,
             {"NCCL uses NCCL_NET_PLUGIN=ofi as set, without TriRace counting its bytes"}},
        Case{"NativeWithoutOurPlugin", In(NetChoice::kNative).NoPlugin().in, NetChoice::kNative, kNoChange,
             {"NCCL will use its socket transport"}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// The refusals: what is missing, named.
struct Refusal {
  const char* name;
  NetInputs in;
  absl::StatusCode code;
  std::vector<std::string> message;
};

void PrintTo(const Refusal& r, std::ostream* os) { *os << r.name; }

class NetChoiceRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(NetChoiceRefusalTest, NamesWhatIsMissing) {
  const Refusal& r = GetParam();
  const absl::StatusOr<NetDecision> d = DecideNet(r.in);
  ASSERT_FALSE(d.ok()) << NetLine(*d);
  EXPECT_EQ(d.status().code(), r.code) << d.status();
  for (const std::string& part : r.message) EXPECT_THAT(d.status().message(), HasSubstr(part));
}

INSTANTIATE_TEST_SUITE_P(
    All, NetChoiceRefusalTest,
    ::testing::Values(
        Refusal{"WrapWithNothingToWrap", In(NetChoice::kWrap).Rdma().in, absl::StatusCode::kInvalidArgument,
                {"--net wrap needs another net plugin to wrap and none is set (NCCL_NET_PLUGIN is unset)",
                 "set NCCL_NET_PLUGIN (or TRIRACE_NET_INNER)", "NCCL_NET_PLUGIN=ofi"}},
        Refusal{"WrapOurOwnPlugin", In(NetChoice::kWrap).Plugin("trirace").in, absl::StatusCode::kInvalidArgument,
                {"NCCL_NET_PLUGIN=trirace is TriRace's own plugin"}},
        Refusal{"WrapNone", In(NetChoice::kWrap).Plugin("none").in, absl::StatusCode::kInvalidArgument,
                {"(NCCL_NET_PLUGIN=none)"}},
        Refusal{"WrapWithoutOurPlugin", In(NetChoice::kWrap).Plugin("ofi").NoPlugin().in,
                absl::StatusCode::kNotFound,
                {"--net wrap needs the net plugin libnccl-net-trirace.so, which is not built or installed"}},
        Refusal{"TcpWithoutOurPlugin", In(NetChoice::kTcp).NoPlugin().in, absl::StatusCode::kNotFound,
                {"--net tcp needs the net plugin libnccl-net-trirace.so"}}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.name); });

// Every combination of request, NCCL_NET_PLUGIN and NCCL_NET, each over
// every RDMA state, TRIRACE_NET_INNER and plugin availability: the rules'
// invariants.
class NetChoiceInvariantTest
    : public ::testing::TestWithParam<std::tuple<NetChoice, std::string, std::string>> {};

TEST_P(NetChoiceInvariantTest, HoldForEveryMachineState) {
  const auto& [requested, plugin, net] = GetParam();
  for (const bool rdma : {false, true}) {
    for (const bool disabled : {false, true}) {
      for (const std::string inner : {"", "sharp", "trirace"}) {
        for (const bool found : {true, false}) {
          In b(requested);
          b.Plugin(plugin).Net(net).Inner(inner);
          if (rdma) b.Rdma();
          if (disabled) b.IbDisabled();
          if (!found) b.NoPlugin();
          const NetInputs& in = b.in;
          SCOPED_TRACE(testing::Message() << "rdma " << rdma << " disabled " << disabled << " inner \"" << inner
                                          << "\" found " << found);
          const bool external_plugin = !plugin.empty() && plugin != "none" && plugin != "trirace";
          const bool external = external_plugin || inner == "sharp";
          const absl::StatusOr<NetDecision> d = DecideNet(in);
          if (requested == NetChoice::kWrap && !external) {
            EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
            continue;
          }
          if ((requested == NetChoice::kWrap || requested == NetChoice::kTcp) && !found) {
            EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
            continue;
          }
          ASSERT_TRUE(d.ok()) << d.status();
          EXPECT_NE(d->choice, NetChoice::kAuto);
          if (requested != NetChoice::kAuto) { EXPECT_EQ(d->choice, requested); }
          EXPECT_FALSE(d->why.empty());
          EXPECT_THAT(d->why, Not(HasSubstr("\n")));
          const EnvMap env = AsMap(d->env);
          EXPECT_EQ(env.size(), d->env.size()) << "each variable changed once";
          if (!found && requested == NetChoice::kAuto) {
            EXPECT_TRUE(env.empty()) << "nothing to point NCCL at: everything as the user set it";
            EXPECT_EQ(d->choice, NetChoice::kNative);
            continue;
          }
          switch (d->choice) {
            case NetChoice::kTcp:
              EXPECT_EQ(env.at("NCCL_NET_PLUGIN"), kOursStr);
              EXPECT_EQ(env.count("TRIRACE_NET_INNER"), inner.empty() ? 0u : 1u);
              if (!inner.empty()) { EXPECT_EQ(env.at("TRIRACE_NET_INNER"), std::nullopt); }
              break;
            case NetChoice::kWrap:
              EXPECT_EQ(env.at("NCCL_NET_PLUGIN"), kOursStr);
              EXPECT_EQ(env.at("TRIRACE_NET_INNER"), external_plugin ? plugin : "sharp");
              break;
            case NetChoice::kNative:
              if (env.count("NCCL_NET_PLUGIN") > 0) { EXPECT_EQ(env.at("NCCL_NET_PLUGIN"), std::nullopt); }
              EXPECT_EQ(env.count("NCCL_NET_PLUGIN"), plugin == "trirace" ? 1u : 0u);
              EXPECT_EQ(env.count("TRIRACE_NET_INNER"), 0u);
              break;
            case NetChoice::kAuto:
              break;
          }
          // NCCL must be able to select what it is pointed at.
          const bool ours_loaded = d->choice != NetChoice::kNative;
          const bool net_forced = !net.empty() && net != "TriRace";
          if (ours_loaded) {
            EXPECT_EQ(env.count("NCCL_NET"), net_forced ? 1u : 0u);
            if (net_forced) { EXPECT_EQ(env.at("NCCL_NET"), "TriRace"); }
          } else {
            EXPECT_EQ(env.count("NCCL_NET"), net == "TriRace" ? 1u : 0u);
          }
          if (requested == NetChoice::kAuto) {
            // The rules, in order.
            NetChoice want = NetChoice::kTcp;
            if (net == "Socket") {
              want = NetChoice::kTcp;
            } else if (net == "IB" || (net == "AWS Libfabric" && !external)) {
              want = NetChoice::kNative;
            } else if (external) {
              want = NetChoice::kWrap;
            } else if (rdma && !disabled) {
              want = NetChoice::kNative;
            }
            EXPECT_EQ(NetChoiceName(d->choice), NetChoiceName(want)) << d->why;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, NetChoiceInvariantTest,
    ::testing::Combine(::testing::Values(NetChoice::kAuto, NetChoice::kTcp, NetChoice::kWrap, NetChoice::kNative),
                       ::testing::Values("", "ofi", "trirace", "none"),
                       ::testing::Values("", "Socket", "IB", "AWS Libfabric", "TriRace")),
    [](const auto& info) {
      std::string name = std::string(NetChoiceName(std::get<0>(info.param))) + "_plugin_" +
                         (std::get<1>(info.param).empty() ? "unset" : std::get<1>(info.param)) + "_net_" +
                         (std::get<2>(info.param).empty() ? "unset" : std::get<2>(info.param));
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(NetChoiceNamesTest, ParseAndPrint) {
  for (NetChoice c : {NetChoice::kAuto, NetChoice::kTcp, NetChoice::kWrap, NetChoice::kNative}) {
    EXPECT_EQ(ParseNetChoice(NetChoiceName(c)), c);
  }
  EXPECT_EQ(ParseNetChoice("NATIVE"), NetChoice::kNative);
  EXPECT_EQ(ParseNetChoice("ib"), std::nullopt);
  EXPECT_EQ(ParseNetChoice(""), std::nullopt);
  EXPECT_EQ(NetChoicesAccepted(), "one of auto, tcp, wrap, native");
}

TEST(NetChoiceNamesTest, WhatCountsAsOurPlugin) {
  EXPECT_TRUE(IsTriracePlugin("trirace", ""));
  EXPECT_TRUE(IsTriracePlugin("TriRace", ""));
  EXPECT_TRUE(IsTriracePlugin("libnccl-net-trirace.so", ""));
  EXPECT_TRUE(IsTriracePlugin("/usr/lib/libnccl-net-trirace.so", ""));
  EXPECT_TRUE(IsTriracePlugin("/build/lib/custom.so", "/build/lib/custom.so"));
  EXPECT_FALSE(IsTriracePlugin("", kOurs));
  EXPECT_FALSE(IsTriracePlugin("ofi", kOurs));
  EXPECT_FALSE(IsTriracePlugin("libnccl-net.so", kOurs));
  EXPECT_FALSE(IsTriracePlugin("/opt/trirace-ofi/libnccl-net-ofi.so", kOurs));
}

TEST(NetChoiceNamesTest, ApplyEnvChangesSetsAndUnsets) {
  EnvGuard guard;
  guard.Set("TRIRACE_NET_CHOICE_TEST_A", "old").Set("TRIRACE_NET_CHOICE_TEST_B", "gone");
  ApplyEnvChanges({{"TRIRACE_NET_CHOICE_TEST_A", "new"}, {"TRIRACE_NET_CHOICE_TEST_B", std::nullopt}});
  EXPECT_STREQ(std::getenv("TRIRACE_NET_CHOICE_TEST_A"), "new");
  EXPECT_EQ(std::getenv("TRIRACE_NET_CHOICE_TEST_B"), nullptr);
}

// ---- Gathering the inputs ----

// A fake /sys with RDMA devices under class/infiniband and netdevs under
// class/net, the way sysfs lays them out.
class FakeSys {
 public:
  FakeSys() : root_(testing_support::MakeTempDir("trirace-net-choice-sys-")) {
    fs::create_directories(root_ + "/class/net");
  }
  ~FakeSys() { fs::remove_all(root_); }
  FakeSys(const FakeSys&) = delete;
  FakeSys& operator=(const FakeSys&) = delete;
  const std::string& root() const { return root_; }

  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text << "\n";
  }
  // A PCI function; returns its folder under the root.
  std::string Pci(const std::string& busid) {
    const std::string dir = "devices/pci0000:00/" + busid;
    Write(dir + "/class", "0x020000");
    Write(dir + "/numa_node", "0");
    return dir;
  }
  void Netdev(const std::string& name, const std::string& device_dir, const std::string& state) {
    Write("class/net/" + name + "/operstate", state);
    Write("class/net/" + name + "/type", "1");
    Write("class/net/" + name + "/speed", "100000");
    if (!device_dir.empty()) fs::create_symlink(root_ + "/" + device_dir, root_ + "/class/net/" + name + "/device");
  }
  void RdmaPort(const std::string& dev, const std::string& device_dir, int port, const std::string& state,
                const std::string& layer) {
    const std::string p = "class/infiniband/" + dev + "/ports/" + std::to_string(port);
    Write(p + "/state", state);
    Write(p + "/link_layer", layer);
    Write(p + "/rate", "200 Gb/sec (4X HDR)");
    const std::string link = root_ + "/class/infiniband/" + dev + "/device";
    if (!fs::exists(link)) fs::create_symlink(root_ + "/" + device_dir, link);
  }

 private:
  std::string root_;
};

enum class Tree { kNoRdma, kActiveMlx5, kDownOnly, kRoce };

struct TreeCase {
  Tree tree;
  const char* name;
  bool active;
  NetChoice auto_choice;
};

void Build(Tree tree, FakeSys& sys) {
  sys.Netdev("lo", "", "unknown");
  switch (tree) {
    case Tree::kNoRdma:
      sys.Netdev("eth0", sys.Pci("0000:00:03.0"), "up");
      break;
    case Tree::kActiveMlx5: {
      sys.Netdev("eth0", sys.Pci("0000:00:03.0"), "up");
      const std::string hca = sys.Pci("0000:84:00.0");
      sys.RdmaPort("mlx5_0", hca, 1, "4: ACTIVE", "InfiniBand");
      sys.RdmaPort("mlx5_0", hca, 2, "1: DOWN", "InfiniBand");
      break;
    }
    case Tree::kDownOnly: {
      sys.Netdev("eth0", sys.Pci("0000:00:03.0"), "up");
      const std::string hca = sys.Pci("0000:84:00.0");
      sys.RdmaPort("mlx5_0", hca, 1, "1: DOWN", "InfiniBand");
      sys.RdmaPort("mlx5_1", sys.Pci("0000:85:00.0"), 1, "2: INIT", "InfiniBand");
      break;
    }
    case Tree::kRoce: {
      const std::string nic = sys.Pci("0000:17:00.0");
      sys.RdmaPort("mlx5_0", nic, 1, "4: ACTIVE", "Ethernet");
      sys.Netdev("ens1f0", nic, "up");
      sys.Write(nic + "/net/ens1f0/ifindex", "3");
      break;
    }
  }
}

void PrintTo(const TreeCase& c, std::ostream* os) { *os << c.name; }

class NetChoiceGatherTest : public ::testing::TestWithParam<TreeCase> {};

TEST_P(NetChoiceGatherTest, SeesTheActiveRdmaPortsOfTheTree) {
  const TreeCase& c = GetParam();
  FakeSys sys;
  Build(c.tree, sys);
  const NetInputs in = GatherNetInputs(NetChoice::kAuto, NetEnv{}, kOurs, sys.root());
  EXPECT_EQ(in.active_rdma, c.active);
  EXPECT_EQ(in.our_plugin, kOurs);
  const absl::StatusOr<NetDecision> d = DecideNet(in);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(NetChoiceName(d->choice), NetChoiceName(c.auto_choice)) << d->why;
}

TEST_P(NetChoiceGatherTest, ReadsTheTreeNamedByTheSysfsRootParam) {
  const TreeCase& c = GetParam();
  FakeSys sys;
  Build(c.tree, sys);
  EnvGuard guard;
  guard.Set("TRIRACE_SYSFS_ROOT", sys.root()).Apply();
  EXPECT_EQ(ParamString(ParamId::kSysfsRoot), sys.root());
  const NetInputs in = GatherNetInputs(NetChoice::kAuto, NetEnv{}, kOurs, ParamString(ParamId::kSysfsRoot));
  EXPECT_EQ(in.active_rdma, c.active);
}

INSTANTIATE_TEST_SUITE_P(Trees, NetChoiceGatherTest,
                         ::testing::Values(TreeCase{Tree::kNoRdma, "NoRdma", false, NetChoice::kTcp},
                                           TreeCase{Tree::kActiveMlx5, "ActiveMlx5", true, NetChoice::kNative},
                                           TreeCase{Tree::kDownOnly, "DownPortsOnly", false, NetChoice::kTcp},
                                           TreeCase{Tree::kRoce, "Roce", true, NetChoice::kNative}),
                         [](const ::testing::TestParamInfo<TreeCase>& info) { return std::string(info.param.name); });

TEST(NetChoiceGatherEnvTest, CopiesTheEnvironmentAndParsesIbDisable) {
  const NetEnv env{.nccl_net_plugin = "ofi", .nccl_net = " IB ", .nccl_ib_disable = "1", .net_inner = "sharp"};
  const NetInputs in = GatherNetInputs(NetChoice::kWrap, env, "", "/nonexistent");
  EXPECT_EQ(in.requested, NetChoice::kWrap);
  EXPECT_EQ(in.user_plugin, "ofi");
  EXPECT_EQ(in.user_inner, "sharp");
  EXPECT_EQ(in.nccl_net, "IB");
  EXPECT_TRUE(in.ib_disabled);
  EXPECT_FALSE(in.active_rdma) << "a missing tree has no RDMA port";
  EXPECT_EQ(in.our_plugin, "");
  for (const auto& [text, disabled] : std::vector<std::pair<std::string, bool>>{
           {"", false}, {"0", false}, {"2", true}, {"yes", false}, {" 1 ", true}}) {
    NetEnv e;
    e.nccl_ib_disable = text;
    EXPECT_EQ(GatherNetInputs(NetChoice::kAuto, e, kOurs, "/nonexistent").ib_disabled, disabled) << text;
  }
}

TEST(NetChoiceGatherEnvTest, ReadNetEnvReadsNcclVariablesAndTheInnerParam) {
  EnvGuard guard;
  guard.Set("NCCL_NET_PLUGIN", "ofi")
      .Set("NCCL_NET", "Socket")
      .Set("NCCL_IB_DISABLE", "1")
      .Set("TRIRACE_NET_INNER", "/opt/x/libnccl-net.so")
      .Apply();
  const NetEnv env = ReadNetEnv();
  EXPECT_EQ(env.nccl_net_plugin, "ofi");
  EXPECT_EQ(env.nccl_net, "Socket");
  EXPECT_EQ(env.nccl_ib_disable, "1");
  EXPECT_EQ(env.net_inner, "/opt/x/libnccl-net.so");

  EnvGuard unset;
  unset.Unset("NCCL_NET_PLUGIN").Unset("NCCL_NET").Unset("NCCL_IB_DISABLE").Unset("TRIRACE_NET_INNER").Apply();
  const NetEnv none = ReadNetEnv();
  EXPECT_EQ(none.nccl_net_plugin, "");
  EXPECT_EQ(none.nccl_net, "");
  EXPECT_EQ(none.nccl_ib_disable, "");
  EXPECT_EQ(none.net_inner, "");
}

TEST(NetChoiceGatherEnvTest, SysfsRootDefaultsToSys) {
  EnvGuard guard;
  guard.Unset("TRIRACE_SYSFS_ROOT").Apply();
  EXPECT_EQ(ParamString(ParamId::kSysfsRoot), "/sys");
  EXPECT_EQ(Params::Spec(ParamId::kSysfsRoot).name, "TRIRACE_SYSFS_ROOT");
}

}  // namespace
}  // namespace trirace::tools
