// Bad input to the annotation API with the real shim (issue #41;
// docs/reliability.md, "Faults and bad input"): every bad argument is an
// error code with exactly one WARN naming the field, its value and the
// accepted range, and changes nothing; overlapping iterations as
// PipeDream-2BW runs them are accepted without a warning. From C++
// (tests/annotation/annotation_misuse.cc) and from the Python package
// (python/trirace, which checks its arguments itself before the shim sees
// them), in TRIRACE_MODE=schedule over hostccl (the shim fully running).
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "support/subprocess.h"
#include "trirace/trirace.h"

namespace {

using ::testing::HasSubstr;
using testing_support::ProcessResult;
using testing_support::RunProcess;

const std::vector<std::string> kUnset = {"LD_PRELOAD", "TRIRACE_MODE", "TRIRACE_TRACE", "TRIRACE_DEBUG",
                                         "TRIRACE_DEBUG_FILE", "TRIRACE_POLICY", "PYTHONPATH"};

std::vector<std::pair<std::string, std::string>> ShimEnv() {
  return {{"LD_PRELOAD", SHIM_PATH},
          {"TRIRACE_MODE", "schedule"},
          {"TRIRACE_NCCL_LIBRARY", HOSTCCL_LIBRARY},
          {"TRIRACE_DEBUG", "WARN"}};
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class AnnotationBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(HOSTCCL_LIBRARY)) GTEST_SKIP() << "hostccl is not built: " << HOSTCCL_LIBRARY;
  }
};

TEST_F(AnnotationBadInputTest, BadFieldsRolesAndIterationsAreRefusedWithOneWarningEach) {
  const ProcessResult r = RunProcess({ANNOTATION_MISUSE}, ShimEnv(), kUnset, 60000);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_THAT(r.out, HasSubstr("version=1 active=1")) << r.err;
  ASSERT_THAT(r.out, HasSubstr("\ndone\n"));
  std::map<std::string, int> rc;
  const std::regex line(R"(^(\S+) rc=(-?\d+))");
  std::istringstream out(r.out);
  for (std::string l; std::getline(out, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) rc[m[1]] = std::stoi(m[2]);
  }
  std::map<std::string, std::vector<std::string>> warns;
  std::istringstream err(r.err);
  std::string label;
  for (std::string l; std::getline(err, l);) {
    if (l.rfind("mark ", 0) == 0) {
      label = l.substr(5);
      warns[label];
    } else if (!label.empty() && l.find(" TriRace WARN ") != std::string::npos) {
      warns[label].push_back(l);
    }
  }
  // One refused call: TRIRACE_ERR_INVALID and one WARN holding `text`.
  auto refused = [&](const std::string& label, const std::string& text) {
    EXPECT_EQ(rc[label], TRIRACE_ERR_INVALID) << label;
    ASSERT_EQ(warns[label].size(), 1u) << label << ":\n" << r.err;
    EXPECT_THAT(warns[label][0], HasSubstr(text)) << label;
  };
  auto accepted = [&](const std::string& label) {
    EXPECT_EQ(rc[label], TRIRACE_OK) << label;
    EXPECT_TRUE(warns[label].empty()) << label << ": " << warns[label].front();
  };
  accepted("outer-push");
  refused("push-layer-neg2", "trirace_push_tag: layer=-2 is not accepted (accepted: 0..2147483647, or TRIRACE_UNSET");
  refused("push-layer-min", "layer=-2147483648 is not accepted");
  refused("push-stage-neg7", "stage=-7 is not accepted");
  refused("push-microbatch-min", "micro_batch=-2147483648 is not accepted");
  refused("push-phase-3", "phase=3 is not accepted (accepted: 0..2");
  refused("push-phase-max", "phase=2147483647 is not accepted");
  refused("push-class-4", "traffic_class=4 is not accepted (accepted: 0..3");
  refused("push-class-neg5", "traffic_class=-5 is not accepted");
  refused("push-priority-min", "priority=-2147483648 is not accepted (accepted: -2147483647..2147483647");
  refused("push-iteration-neg2", "iteration=-2 is not accepted (accepted: 0..9223372036854775807");
  refused("push-iteration-min", "iteration=-9223372036854775808 is not accepted");
  refused("push-null", "trirace_push_tag: tag is NULL");
  ASSERT_EQ(warns["scope-bad"].size(), 1u) << "a refused TagScope warns once and pops nothing";
  EXPECT_THAT(warns["scope-bad"][0], HasSubstr("layer=-3 is not accepted"));
  for (const char* ok : {"push-top", "pop-top", "push-priority-low", "pop-priority-low"}) accepted(ok);
  for (const char* role : {"-1", "5", "-2147483648", "2147483647"}) {
    refused(std::string("role") + role, std::string("trirace_set_comm_role: role ") + role +
                                            " is not a trirace_role_t (accepted: 0..4)");
    refused(std::string("new-role") + role, std::string("trirace_set_new_comm_role: role ") + role);
  }
  refused("role-unknown-comm", "comm 0x1000 is not a communicator the shim knows");
  refused("begin-neg1", "trirace_iteration_begin: iteration=-1 is not accepted (accepted: 0..9223372036854775807)");
  refused("begin-min", "iteration=-9223372036854775808 is not accepted");
  refused("end-neg3", "trirace_iteration_end: iteration=-3 is not accepted");
  accepted("overlap");  // 2BW: k+1 begins before k ends, without a warning
  accepted("begin-max");
  accepted("end-max");
  EXPECT_EQ(rc["end-never-begun"], TRIRACE_ERR_UNBALANCED);
  ASSERT_EQ(warns["end-never-begun"].size(), 1u);
  EXPECT_THAT(warns["end-never-begun"][0], HasSubstr("trirace_iteration_end(77): iteration 77 is not open"));
  // Popped on another thread: that thread's stack is empty; the owner's pop works.
  EXPECT_THAT(r.out, HasSubstr("other-thread-pop rc=3 pushed=0 popped_here=0"));
  ASSERT_EQ(warns["other-thread-pop"].size(), 1u);
  EXPECT_THAT(warns["other-thread-pop"][0], HasSubstr("trirace_pop_tag: called with no tag pushed on this thread"));
  // Nothing refused was pushed: the outer tag is the one left, then the stack is empty.
  accepted("outer-pop");
  EXPECT_EQ(rc["empty-pop"], TRIRACE_ERR_UNBALANCED);
  EXPECT_EQ(rc["empty-pop-again"], TRIRACE_ERR_UNBALANCED);
  EXPECT_EQ(Count(r.err, "trirace_pop_tag: called with no tag pushed"), 1) << "unbalanced pops warn once, then count";
}

// The Python wrapper refuses bad values itself (ValueError/TypeError naming
// the field and the range) before calling the shim; the shim's table,
// called directly through ctypes, refuses them too.
TEST_F(AnnotationBadInputTest, ThePythonWrapperRefusesBadValuesAndAcceptsOverlappingIterations) {
  const std::string snippet = R"PY(
import ctypes, json, threading, trirace
from trirace import _native
out = {}
def refused(name, **fields):
    try:
        trirace.push_tag(**fields)
        out[name] = 'accepted'
    except (ValueError, TypeError) as e:
        out[name] = str(e)
refused('layer', layer=-2)
refused('layer_huge', layer=2**31)
refused('priority', priority=-2**31)
refused('iteration', iteration=-5)
refused('phase', phase='sideways')
refused('class', traffic_class=7)
try:
    trirace.iteration_begin(-1)
    out['begin'] = 'accepted'
except ValueError as e:
    out['begin'] = str(e)
out['top'] = trirace.push_tag(layer=2**31 - 1, priority=-2**31 + 1, iteration=2**63 - 1)
out['top_pop'] = trirace.pop_tag()
raw = _native.Tag(layer=-9, stage=-1, micro_batch=-1, phase=-1, iteration=-1, traffic_class=-1, priority=-1)
out['raw'] = _native.api().push_tag(raw)
out['empty_pop'] = trirace.pop_tag()
box = {}
t = threading.Thread(target=lambda: box.update(pushed=trirace.push_tag(stage=1)))
t.start(); t.join()
out['other_thread_pop'] = trirace.pop_tag()
codes = []
for k in range(4):
    codes.append(trirace.iteration_begin(k))
    if k:
        codes.append(trirace.iteration_end(k - 1))
codes.append(trirace.iteration_end(3))
out['overlap'] = codes
with trirace.iteration(10):
    with trirace.tag(layer=0, phase='backward'):
        pass
print(json.dumps(out))
)PY";
  std::vector<std::pair<std::string, std::string>> env = ShimEnv();
  env.push_back({"PYTHONPATH", std::string(TRIRACE_SOURCE_DIR) + "/python"});
  const ProcessResult r = RunProcess({"python3", "-c", snippet}, env, kUnset, 60000);
  if (r.exit_code == 127) GTEST_SKIP() << "no python3: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json out = nlohmann::json::parse(r.out.substr(r.out.rfind('{')));
  EXPECT_THAT(out["layer"].get<std::string>(), HasSubstr("layer=-2 is out of range [0, 2147483647]"));
  EXPECT_THAT(out["layer_huge"].get<std::string>(), HasSubstr("layer=2147483648 is out of range"));
  EXPECT_THAT(out["priority"].get<std::string>(), HasSubstr("priority=-2147483648 is out of range [-2147483647,"));
  EXPECT_THAT(out["iteration"].get<std::string>(), HasSubstr("iteration=-5 is out of range [0, 9223372036854775807]"));
  EXPECT_THAT(out["phase"].get<std::string>(), HasSubstr("phase='sideways' is not accepted"));
  EXPECT_THAT(out["class"].get<std::string>(), HasSubstr("traffic_class=7 is not accepted"));
  EXPECT_THAT(out["begin"].get<std::string>(), HasSubstr("iteration=-1 is out of range"));
  EXPECT_EQ(out["top"], TRIRACE_OK);
  EXPECT_EQ(out["top_pop"], TRIRACE_OK);
  EXPECT_EQ(out["raw"], TRIRACE_ERR_INVALID);
  EXPECT_EQ(out["empty_pop"], TRIRACE_ERR_UNBALANCED);
  EXPECT_EQ(out["other_thread_pop"], TRIRACE_ERR_UNBALANCED);
  EXPECT_EQ(out["overlap"], nlohmann::json(std::vector<int>(8, TRIRACE_OK)));
  // The shim's own lines: the raw push, and the first unbalanced pop.
  EXPECT_EQ(Count(r.err, " TriRace WARN "), 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("trirace_push_tag: layer=-9 is not accepted"));
  EXPECT_THAT(r.err, HasSubstr("trirace_pop_tag: called with no tag pushed"));
}

}  // namespace
