// Generated transformer workloads (sim/workloads/transformer.h): without
// communication each schedule takes its compute critical path; bad layouts
// are named.
#include "sim/workloads/transformer.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/run/compare.h"
#include "sim_test_util.h"

namespace trirace::sim {
namespace {

using ::testing::HasSubstr;

// 8 layers, no output layer (vocabulary 0), memory time ~0: a layer's
// backward is exactly twice its forward.
TrainingSpec Spec(PipelineSchedule s, int pp, int microbatches) {
  TrainingSpec t;
  t.model = {"test", 8, 1024, 8, 512, 0};
  t.pp = pp;
  t.dp = 1;
  t.schedule = s;
  t.microbatches = microbatches;
  t.iterations = 3;
  t.warmup = 1;
  t.gpu = {100, 1e9};
  return t;
}

// The forward of one layer over one micro-batch, in ns, as the generator
// rounds it.
double LayerForwardNs(const TrainingSpec& t) {
  const double tokens = double(t.micro_batch_size) * t.model.sequence;
  return double(int64_t(t.gpu.Seconds(t.model.LayerForwardFlops(tokens), t.model.LayerForwardBytes(tokens)) * 1e9));
}

double ComputeOnlyMs(const TrainingSpec& t) {
  Cluster bed = testing::ExactBed(t.ranks(), 1);
  absl::StatusOr<Workload> w = TransformerWorkload(t, bed);
  EXPECT_TRUE(w.ok()) << w.status();
  SimOptions o;
  o.unlimited_links = true;
  absl::StatusOr<ModeResult> r = Simulate(bed, *w, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r->iteration_ms_median;
}

TEST(TransformerTest, A1F1BOrGPipeIterationIsTheFillTheMicroBatchesAndTheDrain) {
  for (PipelineSchedule s : {PipelineSchedule::k1F1B, PipelineSchedule::kGPipe}) {
    const TrainingSpec t = Spec(s, 4, 8);
    const double f = 2 * LayerForwardNs(t);  // two layers per stage
    SCOPED_TRACE(PipelineScheduleName(s));
    EXPECT_NEAR(ComputeOnlyMs(t), (8 + 4 - 1) * 3 * f / 1e6, 1e-5);
  }
}

TEST(TransformerTest, InterleavingShrinksTheBubbleByTheChunks) {
  // One layer per virtual stage: (M v + P - 1) (F + B) of one chunk.
  TrainingSpec t = Spec(PipelineSchedule::kInterleaved, 4, 8);
  t.chunks = 2;
  const double f = LayerForwardNs(t);
  EXPECT_NEAR(ComputeOnlyMs(t), (8 * 2 + 4 - 1) * 3 * f / 1e6, 1e-5);
}

TEST(TransformerTest, Without2BWsFlushTheSteadyIterationIsTheMicroBatches) {
  const TrainingSpec t = Spec(PipelineSchedule::k2BW, 4, 8);
  const double f = 2 * LayerForwardNs(t);
  EXPECT_NEAR(ComputeOnlyMs(t), 8 * 3 * f / 1e6, 1e-5);
}

TEST(TransformerTest, BadLayoutsAreNamed) {
  Cluster bed = testing::ExactBed(4, 2);
  TrainingSpec t = Spec(PipelineSchedule::k1F1B, 4, 8);
  EXPECT_THAT(std::string(ValidateTraining(t, bed).message()),
              HasSubstr("--pp 4 x --dp 1 x --tp 1 = 4 GPUs, but cluster testbed has 8"));
  t.pp = 8;
  t.model.layers = 6;
  EXPECT_THAT(std::string(ValidateTraining(t, bed).message()), HasSubstr("more than the 6 layers"));
  t = Spec(PipelineSchedule::kInterleaved, 4, 6);
  t.dp = 2;
  EXPECT_THAT(std::string(ValidateTraining(t, bed).message()), HasSubstr("a multiple of --pp 4"));
  t = Spec(PipelineSchedule::k1F1B, 2, 8);
  t.dp = 1;
  t.tp = 4;
  EXPECT_THAT(std::string(ValidateTraining(t, bed).message()), HasSubstr("must divide its 2 GPUs"));
}

TEST(TransformerTest, BuiltInModelsAreTheNamedSizes) {
  for (const std::string& name : BuiltinModelNames()) {
    std::optional<ModelSpec> m = BuiltinModel(name);
    ASSERT_TRUE(m.has_value()) << name;
    SCOPED_TRACE(name);
    const std::map<std::string, double> billions = {
        {"bert-large", 0.334}, {"gpt2-xl", 1.56}, {"gpt-1.3b", 1.3}, {"gpt-7b", 6.7}};
    ASSERT_EQ(billions.count(name), 1u);
    EXPECT_NEAR(m->Params() / 1e9, billions.at(name), 0.05 * billions.at(name));
  }
  EXPECT_FALSE(BuiltinModel("gpt-5").has_value());
}

}  // namespace
}  // namespace trirace::sim
