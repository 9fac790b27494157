#include "testbed_fixture.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace trirace::testbed {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

std::vector<std::string> NetnsNames() {
  auto r = testing_support::RunProcess({"ip", "netns", "list"}, {}, {}, 30000);
  std::vector<std::string> names;
  for (const std::string& line : Split(r.out, '\n')) names.push_back(line.substr(0, line.find(' ')));
  return names;
}

std::vector<std::string> NetnsWithPrefix(const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& n : NetnsNames()) {
    if (n.rfind(prefix, 0) == 0) out.push_back(n);
  }
  return out;
}

std::string QdiscStats(const std::string& ns, const std::string& dev) {
  std::vector<std::string> argv = {"tc"};
  if (!ns.empty()) argv.insert(argv.end(), {"-n", ns});
  argv.insert(argv.end(), {"-s", "qdisc", "show", "dev", dev});
  return testing_support::RunProcess(argv, {}, {}, 30000).out;
}

long long QdiscSentBytes(const std::string& stats) {
  std::smatch m;
  static const std::regex kSent("Sent ([0-9]+) bytes");
  return std::regex_search(stats, m, kSent) ? std::stoll(m[1]) : -1;
}

std::string CallerNamespaceState() {
  using testing_support::RunProcess;
  return RunProcess({"ip", "-o", "link", "show"}).out + RunProcess({"ip", "-o", "addr", "show"}).out +
         RunProcess({"ip", "route", "show"}).out + RunProcess({"tc", "qdisc", "show"}).out;
}

testing_support::ProcessResult Script(const std::vector<std::string>& args, int timeout_ms) {
  std::vector<std::string> argv = {TESTBED_SH};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing_support::RunProcess(argv, {}, {}, timeout_ms);
}

void TestbedTest::UpOrSkip(const std::vector<std::string>& flags, Testbed* tb) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "the test bed needs root (network namespaces, veth, tc)";
  }
  std::vector<std::string> args = {"up", "--owner", std::to_string(getpid())};
  args.insert(args.end(), flags.begin(), flags.end());
  auto r = Script(args);
  if (r.exit_code == kExitNotRoot || r.exit_code == kExitNoSupport) {
    GTEST_SKIP() << "testbed.sh up exited " << r.exit_code << ": " << r.err;
  }
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  static const std::regex kLine("TESTBED name=(\\S+) hosts=([0-9]+) ifname=\\S+ addrs=(\\S*)");
  if (!std::regex_search(r.out, m, kLine)) {
    ADD_FAILURE() << "no TESTBED line in: " << r.out << r.err;
    return;
  }
  tb->name = m[1];
  tb->hosts = std::stoi(m[2]);
  tb->addrs = Split(m[3], ',');
  made_.push_back(tb->name);
}

RunOutcome TestbedTest::Run(const Testbed& tb, const std::vector<std::string>& flags,
                            const std::vector<std::string>& cmd, int timeout_ms) {
  RunOutcome o;
  o.out_dir = testing_support::MakeTempDir("testbed-run");
  dirs_.push_back(o.out_dir);
  std::vector<std::string> args = {"run", "--name", tb.name, "--out", o.out_dir};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--");
  args.insert(args.end(), cmd.begin(), cmd.end());
  o.process = Script(args, timeout_ms);
  for (int r = 0;; ++r) {
    const std::string base = o.out_dir + "/rank-" + std::to_string(r);
    if (!std::filesystem::exists(base + ".out")) break;
    o.rank_out.push_back(ReadFile(base + ".out"));
    o.rank_err.push_back(ReadFile(base + ".err"));
  }
  return o;
}

void TestbedTest::TearDown() {
  for (const std::string& name : made_) {
    auto r = Script({"down", "--name", name});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(NetnsWithPrefix(name + "-"), std::vector<std::string>{}) << "left behind by " << name;
  }
  for (const std::string& d : dirs_) std::filesystem::remove_all(d);
}

}  // namespace trirace::testbed
