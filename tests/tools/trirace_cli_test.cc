// The `trirace` command, run as a child process.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/params.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "support/subprocess.h"

namespace trirace {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_support::RunProcess;

std::map<std::string, std::string> ParseEnvOutput(const std::string& out) {
  std::map<std::string, std::string> env;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    size_t eq = line.find('=');
    if (eq != absl::string_view::npos) env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return env;
}

// A throwaway install prefix: bin/trirace plus whichever libraries a test
// wants in lib/ (copies of a harmless test library).
class FakePrefix {
 public:
  explicit FakePrefix(bool with_shim, bool with_plugin) : root_(testing_support::MakeTempDir("trirace-prefix-")) {
    fs::create_directories(root_ / "bin");
    fs::create_directories(root_ / "lib");
    fs::copy_file(TRIRACE_EXE, exe());
    if (with_shim) fs::copy_file(FAKE_PROVIDER, root_ / "lib" / "libtrirace.so");
    if (with_plugin) fs::copy_file(FAKE_PROVIDER, root_ / "lib" / "libnccl-net-trirace.so");
  }
  ~FakePrefix() { fs::remove_all(root_); }
  std::string exe() const { return (root_ / "bin" / "trirace").string(); }
  std::string lib(const char* name) const { return (root_ / "lib" / name).string(); }

 private:
  fs::path root_;
};

TEST(TriraceCliTest, VersionPrintsTheProjectVersion) {
  auto r = RunProcess({TRIRACE_EXE, "version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("trirace 0."));
  EXPECT_THAT(r.out, HasSubstr("NCCL headers 2."));
}

TEST(TriraceCliTest, VersionFlagPrintsWhatTheVersionCommandPrints) {
  auto command = RunProcess({TRIRACE_EXE, "version"});
  ASSERT_EQ(command.exit_code, 0) << command.err;
  auto flag = RunProcess({TRIRACE_EXE, "--version"});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(flag.out, command.out);
  EXPECT_EQ(flag.err, "");
  auto top = RunProcess({TRIRACE_EXE, "--help"});
  EXPECT_THAT(top.out, HasSubstr("--version"));
}

TEST(TriraceCliTest, EnvPrintsEveryRegisteredParamWithValueAndSource) {
  auto r = RunProcess({TRIRACE_EXE, "env"}, {{"TRIRACE_MODE", "schedule"}}, {"TRIRACE_POLICY"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const ParamSpec& spec : Params::Specs()) {
    EXPECT_THAT(r.out, HasSubstr(std::string(spec.name))) << "missing from trirace env";
    EXPECT_THAT(r.out, HasSubstr(std::string(spec.description)));
  }
  std::istringstream lines(r.out);
  std::string line;
  bool saw_mode = false, saw_policy = false;
  while (std::getline(lines, line)) {
    std::vector<std::string> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cols.size() < 4) continue;
    if (cols[0] == "TRIRACE_MODE") {
      saw_mode = true;
      EXPECT_EQ(cols[1], "schedule");
      EXPECT_EQ(cols[2], "environment");
      EXPECT_EQ(cols[3], "observe");
    }
    if (cols[0] == "TRIRACE_POLICY") {
      saw_policy = true;
      EXPECT_EQ(cols[1], "trirace");
      EXPECT_EQ(cols[2], "default");
    }
  }
  EXPECT_TRUE(saw_mode && saw_policy) << r.out;
}

// `trirace env` is read by users, who do not know the scheduler's rule
// numbers or the issue tracker: a rule is named only after the plain words,
// as "rule R14 in docs/scheduler.md".
TEST(TriraceCliTest, EnvDescriptionsUseNoBareRuleTagsOrIssueNumbers) {
  auto r = RunProcess({TRIRACE_EXE, "env"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = std::regex_replace(r.out, std::regex(R"(rule R[0-9]+ in docs/scheduler\.md)"), "");
  std::smatch tag;
  EXPECT_FALSE(std::regex_search(text, tag, std::regex(R"(\bR[0-9]+\b|#[0-9]+)"))) << tag.str(0) << " in\n" << r.out;
}

TEST(TriraceCliTest, EnvWarnsAboutABadValueOnStderr) {
  auto r = RunProcess({TRIRACE_EXE, "env"}, {{"TRIRACE_DEBUG", "LOUD"}});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("TriRace WARN INIT TRIRACE_DEBUG=\"LOUD\" is not valid: expected one of NONE, WARN, INFO, TRACE"));
}

TEST(TriraceCliTest, RunSetsPreloadPluginAndModeInTheChild) {
  FakePrefix prefix(/*with_shim=*/true, /*with_plugin=*/true);
  // An empty sysfs: no RDMA port, so auto picks the TCP plugin on any machine.
  const std::string sys = testing_support::MakeTempDir("trirace-cli-sys");
  auto r = RunProcess({prefix.exe(), "run", "--mode", "schedule", "--policy=fifo", "--", "env"},
                      {{"LD_PRELOAD", ""}, {"TRIRACE_SYSFS_ROOT", sys}},
                      {"NCCL_NET_PLUGIN", "TRIRACE_MODE", "TRIRACE_POLICY", "NCCL_NET", "TRIRACE_NET_INNER"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto env = ParseEnvOutput(r.out);
  EXPECT_EQ(env["LD_PRELOAD"], prefix.lib("libtrirace.so"));
  EXPECT_EQ(env["NCCL_NET_PLUGIN"], prefix.lib("libnccl-net-trirace.so"));
  EXPECT_EQ(env["TRIRACE_MODE"], "schedule");
  EXPECT_EQ(env["TRIRACE_POLICY"], "fifo");
  EXPECT_THAT(r.err, HasSubstr("trirace run: net: tcp ("));
  std::filesystem::remove_all(sys);
}

TEST(TriraceCliTest, RunKeepsExistingPreloadsAndWrapsAUserPlugin) {
  FakePrefix prefix(true, true);
  auto r = RunProcess({prefix.exe(), "run", "env"},
                      {{"LD_PRELOAD", FAKE_PROVIDER}, {"NCCL_NET_PLUGIN", "aws-ofi"}, {"TRIRACE_MODE", "off"}},
                      {"NCCL_NET", "TRIRACE_NET_INNER"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto env = ParseEnvOutput(r.out);
  EXPECT_EQ(env["LD_PRELOAD"], prefix.lib("libtrirace.so") + ":" + FAKE_PROVIDER);
  EXPECT_EQ(env["NCCL_NET_PLUGIN"], prefix.lib("libnccl-net-trirace.so"));
  EXPECT_EQ(env["TRIRACE_NET_INNER"], "aws-ofi") << "the user's plugin carries the bytes, TriRace's counts them";
  EXPECT_EQ(env["TRIRACE_MODE"], "off");
  EXPECT_THAT(r.err, HasSubstr("trirace run: net: wrap (NCCL_NET_PLUGIN=aws-ofi"));
}

TEST(TriraceCliTest, RunRefusesWhenTheShimIsNotBuilt) {
  FakePrefix prefix(/*with_shim=*/false, /*with_plugin=*/false);
  auto r = RunProcess({prefix.exe(), "run", "--", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("the shim libtrirace.so is not built or installed"));
}

TEST(TriraceCliTest, RunRejectsBadFlagValuesAndMissingCommand) {
  FakePrefix prefix(true, true);
  auto bad_mode = RunProcess({prefix.exe(), "run", "--mode", "fast", "--", "true"});
  EXPECT_EQ(bad_mode.exit_code, 2);
  EXPECT_THAT(bad_mode.err, HasSubstr("--mode \"fast\" is not valid: expected one of off, observe, schedule"));
  auto unknown = RunProcess({prefix.exe(), "run", "--speed", "1", "--", "true"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown option \"--speed\""));
  auto none = RunProcess({prefix.exe(), "run", "--mode", "off"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("no command given"));
  auto missing = RunProcess({prefix.exe(), "run", "--", "/nonexistent/program"});
  EXPECT_EQ(missing.exit_code, 127);
}

TEST(TriraceCliTest, RunPassesEverythingFromTheCommandOnUntouched) {
  FakePrefix prefix(true, true);
  // After CMD, run's own flags, `--` and --help belong to the program.
  auto r = RunProcess({prefix.exe(), "run", "--mode", "off", "printf", "%s|", "--mode", "x", "--", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "--mode|x|--|--help|");
  auto last = RunProcess({prefix.exe(), "run", "--mode", "off", "--mode=schedule", "--", "env"}, {},
                         {"TRIRACE_MODE"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_EQ(ParseEnvOutput(last.out)["TRIRACE_MODE"], "schedule");
  auto no_value = RunProcess({prefix.exe(), "run", "--policy"});
  EXPECT_EQ(no_value.exit_code, 2);
  EXPECT_THAT(no_value.err, HasSubstr("--policy needs a value"));
}

TEST(TriraceCliTest, DemoRejectsBadFlagsAndSaysWhatIsMissingOutsideABuildTree) {
  FakePrefix prefix(true, true);
  auto reps = RunProcess({prefix.exe(), "demo", "--reps", "0"});
  EXPECT_EQ(reps.exit_code, 2);
  EXPECT_THAT(reps.err, HasSubstr("--reps \"0\": expected an integer from 1 to 50"));
  auto unknown = RunProcess({prefix.exe(), "demo", "--fast"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown option \"--fast\""));
  // The fake prefix has the libraries but not the example: nothing to build it with.
  auto missing = RunProcess({prefix.exe(), "demo"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("bin/hybrid_parallel"));
  EXPECT_THAT(missing.err, HasSubstr("is not a build tree to build them in"));
}

std::string TopoData(const char* name) { return std::string(TRIRACE_TOPO_TEST_DATA) + "/" + name; }

TEST(TriraceCliTest, TopoJsonGivesEachGpuItsNicAndRail) {
  auto r = RunProcess({TRIRACE_EXE, "topo", "--from", TopoData("two_hosts_2rail.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("fabric").at("kind"), "rail_optimized");
  ASSERT_EQ(doc.at("hosts").size(), 2u);
  for (size_t h = 0; h < 2; ++h) {
    const nlohmann::json& host = doc["hosts"][h];
    EXPECT_EQ(host.at("key"), h == 0 ? "node0" : "node1");
    ASSERT_EQ(host.at("gpus").size(), 2u);
    ASSERT_EQ(host.at("nics").size(), 2u);
    for (const nlohmann::json& nic : host["nics"]) {
      for (const char* key : {"name", "pci", "rail", "gbps"}) EXPECT_TRUE(nic.contains(key)) << key << " in " << nic;
      EXPECT_EQ(nic["gbps"], 200);
    }
    for (size_t g = 0; g < 2; ++g) {
      const nlohmann::json& gpu = host["gpus"][g];
      for (const char* key : {"pci", "numa", "nic_pci", "rail"}) EXPECT_TRUE(gpu.contains(key)) << key << " in " << gpu;
      // One switch per GPU + NIC pair: GPU g uses NIC g, rail g, on its NUMA node.
      EXPECT_EQ(gpu["rail"], g) << gpu;
      EXPECT_EQ(gpu["nic_pci"], host["nics"][g]["pci"]) << gpu;
      EXPECT_EQ(host["nics"][g]["rail"], g);
      EXPECT_EQ(gpu["numa"], g);
      EXPECT_EQ(gpu["path"], "PIX");
    }
  }
}

TEST(TriraceCliTest, TopoPrintsTheTreeAndThePaths) {
  auto tree = RunProcess({TRIRACE_EXE, "topo", "--from", TopoData("two_hosts_2rail.json")});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_THAT(tree.out, HasSubstr("fabric: rail_optimized\n"));
  EXPECT_THAT(tree.out, HasSubstr("host node1: 2 NUMA node(s), 2 GPU(s), 2 NIC(s)\n"));
  EXPECT_THAT(tree.out, HasSubstr("  numa 1\n    switch 0000:90:00.0 (256 Gbit/s up)\n"
                                  "      gpu1 0000:91:00.0 dev 1 -> mlx5_1 (rail 1, PIX)\n"
                                  "      nic mlx5_1 0000:92:00.0: rail 1, 200 Gbit/s, ib\n"));
  EXPECT_THAT(tree.out, HasSubstr("  sources: json-spec (pci, gpus, nvlink, nics, nic rates)\n"));

  auto paths = RunProcess({TRIRACE_EXE, "topo", "--from", TopoData("two_hosts_2rail.json"), "--paths"});
  ASSERT_EQ(paths.exit_code, 0) << paths.err;
  EXPECT_THAT(paths.out, HasSubstr("  gpu1 0000:91:00.0 uses mlx5_1 (rail 1)\n"
                                   "    -> node1 gpu1: nic-tx:node0/mlx5_1 (200 Gbit/s), nic-rx:node1/mlx5_1 (200 Gbit/s)\n"));

  // One host (an NCCL XML): the peer is GPU 0 of the same host.
  auto xml = RunProcess({TRIRACE_EXE, "topo", "--from", TopoData("pcie_8gpu_4nic.xml"), "--paths"});
  ASSERT_EQ(xml.exit_code, 0) << xml.err;
  EXPECT_THAT(xml.out, HasSubstr("    -> gpu0: none (the same GPU)\n"));
  EXPECT_THAT(xml.out, HasSubstr("  gpu1 "));
  EXPECT_THAT(xml.out, HasSubstr("    -> gpu0: pcie-up:localhost/"));
}

TEST(TriraceCliTest, TopoDiscoversThisMachine) {
  // Keyed TRIRACE_HOST_ID, as the shim keys this host.
  auto tree = RunProcess({TRIRACE_EXE, "topo"}, {{"TRIRACE_HOST_ID", "bench-node-7"}});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_THAT(tree.out, StartsWith("fabric: single_switch\nhost bench-node-7: "));
  EXPECT_THAT(tree.out, HasSubstr("\n  sources: "));
  auto json = RunProcess({TRIRACE_EXE, "topo", "--json"}, {{"TRIRACE_HOST_ID", "bench-node-7"}});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  ASSERT_EQ(doc.at("hosts").size(), 1u);
  const nlohmann::json& host = doc["hosts"][0];
  EXPECT_EQ(host.at("key"), "bench-node-7");
  const auto notes = doc.at("notes").get<std::vector<std::string>>();
  // What is missing is a note, never an error: no GPU on the CI machines, a
  // NIC or a note saying there is none.
  if (host.at("gpus").empty()) {
    EXPECT_THAT(notes, ::testing::Contains("no GPU found"));
    EXPECT_THAT(tree.out, HasSubstr("\n  note: no GPU found\n"));
  }
  if (host.at("nics").empty()) {
    EXPECT_THAT(notes, ::testing::Contains("no NIC with a PCI device found"));
  } else {
    EXPECT_THAT(tree.out, HasSubstr("    nic "));
  }
  for (const nlohmann::json& nic : host["nics"]) {
    for (const char* key : {"name", "pci", "rail", "gbps", "link_layer"}) {
      EXPECT_TRUE(nic.contains(key)) << key << " in " << nic;
    }
  }
  for (const std::string& note : notes) EXPECT_THAT(tree.out, HasSubstr("  note: " + note + "\n"));
  auto paths = RunProcess({TRIRACE_EXE, "topo", "--paths"});
  EXPECT_EQ(paths.exit_code, 0) << paths.err;
  EXPECT_THAT(paths.out, StartsWith("paths from host "));
}

// hwloc is optional at run time: an install without its module (or without
// libhwloc) discovers from sysfs and says why; an hwloc XML is then an error
// naming the file and the module, the other formats still load.
TEST(TriraceCliTest, TopoWithoutTheHwlocModuleUsesSysfsAndSaysSo) {
  FakePrefix prefix(/*with_shim=*/false, /*with_plugin=*/false);
  auto tree = RunProcess({prefix.exe(), "topo"});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_THAT(tree.out, ::testing::ContainsRegex("\n  note: hwloc: (built without hwloc|hwloc module not loaded: "
                                                 "[^\n]*); the PCIe tree comes from sysfs\n"));
  auto xml = RunProcess({prefix.exe(), "topo", "--from", TopoData("cloud_2gpu_2nic.hwloc.xml")});
  EXPECT_NE(xml.exit_code, 0);
  EXPECT_THAT(xml.err, HasSubstr("cloud_2gpu_2nic.hwloc.xml: an hwloc XML export"));
  auto nccl = RunProcess({prefix.exe(), "topo", "--from", TopoData("cloud_2gpu_2nic.xml")});
  EXPECT_EQ(nccl.exit_code, 0) << nccl.err;
}

TEST(TriraceCliTest, TopoDrawsThePicture) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz's dot is not installed";
  const std::string dir = testing_support::MakeTempDir("trirace-topo-png");
  const std::string png = dir + "/two_hosts.png";
  auto r = RunProcess({TRIRACE_EXE, "topo", "--from", TopoData("two_hosts_2rail.json"), "--png", png});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + png + "\n");
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  EXPECT_EQ(std::string(magic, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto both = RunProcess({TRIRACE_EXE, "topo", "--png", png, "--json"});
  EXPECT_EQ(both.exit_code, 2);
  auto unwritable = RunProcess({TRIRACE_EXE, "topo", "--from", TopoData("two_hosts_2rail.json"), "--png",
                                "/nonexistent/dir/x.png"});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_THAT(unwritable.err, HasSubstr("dot failed writing /nonexistent/dir/x.png"));
  std::filesystem::remove_all(dir);
}

TEST(TriraceCliTest, TopoHelpNamesEveryFileKindFromReads) {
  auto r = RunProcess({TRIRACE_EXE, "topo", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t from = r.out.find("  --from FILE");
  ASSERT_NE(from, std::string::npos) << r.out;
  const std::string line = r.out.substr(from, r.out.find('\n', from) - from);
  for (const char* kind : {"NCCL topology XML", "hwloc XML", "TriRace JSON spec"}) {
    EXPECT_THAT(line, HasSubstr(kind));
  }
}

TEST(TriraceCliTest, TopoNeedsAReadableFile) {
  auto missing = RunProcess({TRIRACE_EXE, "topo", "--from", "/nonexistent/topo.json"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "trirace topo: /nonexistent/topo.json: no such file\n");
  auto not_topo = RunProcess({TRIRACE_EXE, "topo", "--from", TopoData("../CMakeLists.txt")});
  EXPECT_EQ(not_topo.exit_code, 1);
  EXPECT_THAT(not_topo.err, HasSubstr("not a topology file TriRace reads"));
  auto both = RunProcess({TRIRACE_EXE, "topo", "--from", TopoData("two_hosts_2rail.json"), "--json", "--paths"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("--json excludes --paths"));
}

TEST(TriraceCliTest, HelpForEveryCommandAndUnknownCommand) {
  for (const char* cmd : {"version", "env", "run", "net-top", "demo", "topo"}) {
    auto r = RunProcess({TRIRACE_EXE, cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_THAT(r.out, HasSubstr(std::string("usage: trirace ") + cmd));
  }
  auto top = RunProcess({TRIRACE_EXE, "--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("commands:"));
  auto help = RunProcess({TRIRACE_EXE, "help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, top.out);
  auto none = RunProcess({TRIRACE_EXE});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("commands:"));
  auto extra = RunProcess({TRIRACE_EXE, "version", "run"});
  EXPECT_EQ(extra.exit_code, 2);
  EXPECT_THAT(extra.err, HasSubstr("unexpected argument \"run\""));
  auto bad = RunProcess({TRIRACE_EXE, "frobnicate"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("unknown command \"frobnicate\""));
}

// The command names under "commands:" in `trirace --help`.
std::vector<std::string> HelpCommands(const std::string& help) {
  std::vector<std::string> names;
  const size_t at = help.find("\ncommands:\n");
  if (at == std::string::npos) return names;
  std::istringstream lines(help.substr(at + 11));
  std::string line;
  while (std::getline(lines, line) && absl::StartsWith(line, "  ")) {
    names.push_back(std::vector<std::string>(absl::StrSplit(line, ' ', absl::SkipEmpty()))[0]);
  }
  return names;
}

// The command names of the README's "The `trirace` command" block, in order.
std::vector<std::string> ReadmeCommands() {
  std::ifstream in(TRIRACE_README);
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const size_t section = readme.find("## The `trirace` command\n\n```\n");
  if (section == std::string::npos) return {};
  const size_t begin = readme.find("```\n", section) + 4;
  std::vector<std::string> names;
  for (absl::string_view line : absl::StrSplit(readme.substr(begin, readme.find("```", begin) - begin), '\n')) {
    if (!absl::ConsumePrefix(&line, "trirace ")) continue;
    names.emplace_back(line.substr(0, line.find(' ')));
  }
  return names;
}

// A new user reads the README's list next to `trirace --help`: the same
// commands in the same order. sim and doctor come with their modules, so a
// build without one lists the others.
TEST(TriraceCliTest, TheReadmeListsTheCommandsOfTheHelp) {
  auto top = RunProcess({TRIRACE_EXE, "--help"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  const std::vector<std::string> help = HelpCommands(top.out);
  ASSERT_FALSE(help.empty()) << top.out;
  std::vector<std::string> readme = ReadmeCommands();
  ASSERT_FALSE(readme.empty()) << "no command block in " << TRIRACE_README;
  const std::set<std::string> listed(help.begin(), help.end());
  readme.erase(std::remove_if(readme.begin(), readme.end(),
                              [&](const std::string& c) { return (c == "sim" || c == "doctor") && !listed.count(c); }),
               readme.end());
  EXPECT_EQ(readme, help) << top.out;
}

}  // namespace
}  // namespace trirace
