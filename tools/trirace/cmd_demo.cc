// trirace demo: the end-to-end speed-up in one command. Builds what the
// benchmark needs when this command runs from a build tree, then runs
// bench/e2e/run_e2e.sh on the `contention` preset (on the network-namespace
// test bed when root, on loopback otherwise) with traces and pictures.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "commands.h"

namespace trirace::tools {
namespace {

namespace fs = std::filesystem;

// What run_e2e.sh needs from the build tree, with the CMake target of each.
struct Needed {
  const char* path;  // relative to the build tree
  const char* target;
};
constexpr Needed kNeeded[] = {
    {"bin/hybrid_parallel", "hybrid_parallel"},
    {"bin/e2e_bound", "e2e_bound"},
    {"lib/libtrirace.so", "trirace_shim"},
    {"lib/libnccl-net-trirace.so", "nccl_net_trirace"},
};

// Runs argv to completion; returns its exit status (127 when it cannot start).
int RunAndWait(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "trirace demo: cannot run \"%s\": %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The build tree this command belongs to: the parent of its bin/ folder.
fs::path BuildTree() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path().parent_path();
}

// Builds the missing pieces with CMake when `tree` is a configured build
// tree; false (after saying what is missing) when they cannot be had.
bool EnsureBuilt(const fs::path& tree) {
  std::vector<std::string> targets;
  std::string missing;
  for (const Needed& n : kNeeded) {
    if (fs::exists(tree / n.path)) continue;
    targets.push_back(n.target);
    missing += std::string(missing.empty() ? "" : ", ") + (tree / n.path).string();
  }
  if (targets.empty()) return true;
  if (!fs::exists(tree / "CMakeCache.txt")) {
    std::fprintf(stderr, "trirace demo: missing %s, and %s is not a build tree to build them in\n",
                 missing.c_str(), tree.c_str());
    return false;
  }
  std::printf("trirace demo: building %s\n", missing.c_str());
  std::fflush(stdout);
  std::vector<std::string> cmd = {"cmake", "--build", tree.string(), "--target"};
  cmd.insert(cmd.end(), targets.begin(), targets.end());
  if (RunAndWait(cmd) != 0) {
    std::fprintf(stderr,
                 "trirace demo: building %s failed; the build needs the modules "
                 "scheduler;plugin;hostccl;interpose;examples;bench (TRIRACE_MODULES)\n",
                 missing.c_str());
    return false;
  }
  return true;
}

// Runs bench/e2e/run_e2e.sh on `preset` and returns its exit status.
int RunDemo(const std::string& reps, const std::string& out, const std::string& preset, bool loopback) {
  const fs::path script = fs::path(TRIRACE_SOURCE_DIR) / "bench" / "e2e" / "run_e2e.sh";
  if (!fs::exists(script)) {
    std::fprintf(stderr, "trirace demo: %s is missing: the demo runs from a source checkout's build tree\n",
                 script.c_str());
    return 1;
  }
  const fs::path tree = BuildTree();
  if (tree.empty() || !EnsureBuilt(tree)) return 1;

  if (!loopback && geteuid() != 0) {
    std::printf(
        "trirace demo: not root: no network-namespace test bed, so the ranks run on loopback,\n"
        "which has no contention: the figures show the modes' overhead, not a speed-up\n");
    loopback = true;
  }
  std::vector<std::string> cmd = {"bash", script.string(), "--build", tree.string(), "--preset", preset,
                                  "--reps", reps, "--trace"};
  if (loopback) cmd.push_back("--loopback");
  if (!out.empty()) cmd.insert(cmd.end(), {"--out", out});
  // 8 iterations (2 warm-up) instead of the preset's 10: the demo's 12 runs
  // stay within about two minutes on two cores.
  cmd.insert(cmd.end(), {"--", "--iterations", "8"});
  std::fflush(stdout);
  const int rc = RunAndWait(cmd);
  if (rc != 0) std::fprintf(stderr, "trirace demo: %s exited %d\n", script.c_str(), rc);
  return rc;
}

}  // namespace

Command AddDemoCommand(CLI::App& trirace) {
  struct State {
    std::string reps = "2", out, preset = "contention";
    bool loopback = false;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = trirace.add_subcommand(
      "demo", "the end-to-end speed-up: the contention preset under every mode, with pictures");
  cmd->add_option_function<std::string>(
         "--reps",
         [state](const std::string& value) {
           int n = 0;
           if (!absl::SimpleAtoi(value, &n) || n < 1 || n > 50) {
             RejectValue("--reps \"" + value + "\": expected an integer from 1 to 50");
           }
           state->reps = value;
         },
         "repetitions per mode, 1 to 50")
      ->type_name("N")
      ->default_str(state->reps);
  cmd->add_option("--out", state->out, "output folder (default: a fresh folder under $TMPDIR or /tmp)")
      ->type_name("DIR");
  cmd->add_flag("--loopback", state->loopback, "run on loopback even as root");
  cmd->add_option("--preset", state->preset,
                  "another preset of bench/e2e (contention, megatron, sparse, no-contention)")
      ->type_name("P")
      ->capture_default_str();
  cmd->footer(
      "Runs examples/hybrid_parallel's `contention` preset (pipeline P2P and data-parallel\n"
      "all-reduce on the same host NICs) under TRIRACE_MODE=off, the fifo, priority and\n"
      "trirace policies, wire (class priority on the wire alone) and gate (the scheduler\n"
      "alone), alternating run by run, and prints the median iteration time per\n"
      "mode, the speed-up over off and the lower bound, then the paths of the traces and\n"
      "the pictures. As root the ranks run on the network-namespace test bed (4 hosts x 2\n"
      "ranks, shaped uplinks); otherwise on loopback, which has no contention (the figures\n"
      "then only show the modes' overhead). Missing programs are built first when this\n"
      "command runs from a build tree.");
  return {cmd, [state] { return RunDemo(state->reps, state->out, state->preset, state->loopback); }};
}

}  // namespace trirace::tools
