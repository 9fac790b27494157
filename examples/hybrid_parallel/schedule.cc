#include "schedule.h"

#include <algorithm>

namespace hybrid {
namespace {

// One 1F1B pass over micro-batches [first, first + count) of a stage.
void OneFOneB(int stages, int stage, int64_t first, int64_t count, std::vector<Action>* out) {
  const int64_t warmup = std::min<int64_t>(stages - stage - 1, count);
  const int64_t steady = count - warmup;
  int64_t f = first, b = first;
  for (int64_t i = 0; i < warmup; ++i, ++f) {
    out->push_back({Step::kRecvForward, f, -1});
    out->push_back({Step::kForward, f, -1});
    out->push_back({Step::kSendForward, f, -1});
  }
  if (steady > 0) out->push_back({Step::kRecvForward, f, -1});
  for (int64_t i = 0; i < steady; ++i, ++f, ++b) {
    out->push_back({Step::kForward, f, -1});
    out->push_back({Step::kSendForwardRecvBackward, f, b});
    out->push_back({Step::kBackward, -1, b});
    if (i == steady - 1) {
      out->push_back({Step::kSendBackward, -1, b});
    } else {
      out->push_back({Step::kSendBackwardRecvForward, f + 1, b});
    }
  }
  for (int64_t i = 0; i < warmup; ++i, ++b) {
    out->push_back({Step::kRecvBackward, -1, b});
    out->push_back({Step::kBackward, -1, b});
    out->push_back({Step::kSendBackward, -1, b});
  }
}

// Inserts the iteration markers into a pass that spans several iterations:
// Begin(i) before the first action that touches iteration i's data, End(i)
// after the action that follows the backward of i's last micro-batch (its
// send).
std::vector<Action> AddIterationMarkers(const std::vector<Action>& in, int micro_batches,
                                        int iterations) {
  std::vector<Action> out;
  int next_begin = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const Action& a = in[k];
    if (a.fwd >= 0 && a.fwd / micro_batches >= next_begin && next_begin < iterations) {
      out.push_back({Step::kIterationBegin, -1, -1, next_begin++});
    }
    out.push_back(a);
    const bool after_last_backward = k > 0 && in[k - 1].step == Step::kBackward &&
                                     (in[k - 1].bwd + 1) % micro_batches == 0;
    if (after_last_backward) {
      out.push_back({Step::kIterationEnd, -1, -1, static_cast<int>(in[k - 1].bwd / micro_batches)});
    }
  }
  return out;
}

}  // namespace

std::vector<Action> StageSchedule(const Config& c, int stage) {
  const int stages = c.total_stages();
  const int64_t m = c.micro_batches;
  std::vector<Action> out;
  if (c.schedule == Schedule::k1F1B) {
    for (int it = 0; it < c.iterations; ++it) {
      std::vector<Action> pass;
      OneFOneB(stages, stage, it * m, m, &pass);
      out.push_back({Step::kIterationBegin, -1, -1, it});
      out.insert(out.end(), pass.begin(), pass.end());
      out.push_back({Step::kIterationEnd, -1, -1, it});
    }
    return out;
  }
  std::vector<Action> pass;
  OneFOneB(stages, stage, 0, m * c.iterations, &pass);
  return AddIterationMarkers(pass, c.micro_batches, c.iterations);
}

const char* StepName(Step s) {
  switch (s) {
    case Step::kIterationBegin: return "iteration_begin";
    case Step::kRecvForward: return "recv_forward";
    case Step::kForward: return "forward";
    case Step::kSendForward: return "send_forward";
    case Step::kSendForwardRecvBackward: return "send_forward_recv_backward";
    case Step::kBackward: return "backward";
    case Step::kSendBackwardRecvForward: return "send_backward_recv_forward";
    case Step::kRecvBackward: return "recv_backward";
    case Step::kSendBackward: return "send_backward";
    case Step::kIterationEnd: return "iteration_end";
  }
  return "?";
}

std::string ActionText(const Action& a) {
  std::string s = StepName(a.step);
  if (a.iteration >= 0) s += " it=" + std::to_string(a.iteration);
  if (a.fwd >= 0) s += " f=" + std::to_string(a.fwd);
  if (a.bwd >= 0) s += " b=" + std::to_string(a.bwd);
  return s;
}

}  // namespace hybrid
