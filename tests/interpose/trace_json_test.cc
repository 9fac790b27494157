#include "interpose/trace/trace_json.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace trirace::interpose {
namespace {

TraceRecord Op(uint64_t seq, int64_t start, int64_t end) {
  TraceRecord r;
  r.kind = RecordKind::kOp;
  r.func = NcclFunc::kAllReduce;
  r.comm_index = 1;
  r.seq = seq;
  r.count = 256;
  r.bytes = 1024;
  r.datatype = ncclFloat32;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

nlohmann::json Render(const std::vector<TraceRecord>& records, const std::vector<const CommState*>& comms) {
  TraceJson json(42, 1'000'000'000);
  std::string out = TraceJson::Header();
  for (const auto& r : records) json.AppendRecord(r, &out);
  json.AppendFooter(comms, "rank 0 host:42", {{"dropped_events", "0"}}, &out);
  return nlohmann::json::parse(out);
}

TEST(TraceJsonTest, AnOpIsASliceWithItsArguments) {
  TraceRecord r = Op(3, 5'000, 7'500);
  r.tag.layer = 2;
  r.group_id = 9;
  nlohmann::json j = Render({r}, {});
  const auto& e = j["traceEvents"][0];
  EXPECT_EQ(e["ph"], "X");
  EXPECT_EQ(e["name"], "AllReduce");
  EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1'000'005.0);  // (wall offset + start) in us
  EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2.5);
  EXPECT_EQ(e["pid"], 42);
  EXPECT_EQ(e["tid"], kLanesPerComm);
  EXPECT_EQ(e["args"]["seq"], 3);
  EXPECT_EQ(e["args"]["bytes"], 1024);
  EXPECT_EQ(e["args"]["group"], 9);
  EXPECT_EQ(e["args"]["tag"]["layer"], 2);
  EXPECT_FALSE(e["args"]["tag"].contains("stage"));
  EXPECT_FALSE(e["args"].contains("gate_wait_us"));  // not gated
  EXPECT_EQ(j["displayTimeUnit"], "ns");
  EXPECT_EQ(j["otherData"]["dropped_events"], "0");
}

TEST(TraceJsonTest, OverlappingOpsOfOneCommGoToSeparateLanes) {
  CommState s;
  s.index = 1;
  s.rank = 0;
  s.nranks = 2;
  nlohmann::json j = Render({Op(0, 0, 100), Op(1, 50, 150), Op(2, 160, 200)}, {&s});
  const auto& ev = j["traceEvents"];
  EXPECT_EQ(ev[0]["tid"], kLanesPerComm);
  EXPECT_EQ(ev[1]["tid"], kLanesPerComm + 1);  // started before op 0 ended
  EXPECT_EQ(ev[2]["tid"], kLanesPerComm);      // lane 0 free again
  int named = 0;
  for (const auto& e : ev) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      ++named;
      EXPECT_NE(e["args"]["name"].get<std::string>().find("comm 1"), std::string::npos);
    }
  }
  EXPECT_EQ(named, 2);
}

TEST(TraceJsonTest, GatedFieldsAppearWhenSet) {
  TraceRecord r = Op(0, 0, 10'000);
  r.gate_wait_ns = 4'000;
  r.run_ns = 6'000;
  r.release_reason = 2;
  r.chunk_index = 1;
  r.chunk_count = 4;
  nlohmann::json j = Render({r}, {});
  const auto& a = j["traceEvents"][0]["args"];
  EXPECT_DOUBLE_EQ(a["gate_wait_us"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(a["run_us"].get<double>(), 6.0);
  EXPECT_EQ(a["release_reason"], 2);
  EXPECT_EQ(a["release"], "priority");
  EXPECT_EQ(a["chunk"], 1);
  EXPECT_EQ(a["chunks"], 4);
}

TEST(TraceJsonTest, ATuningChangeIsACounterAndAnInstantWithItsEvidence) {
  TraceRecord r;
  r.kind = RecordKind::kTuning;
  r.start_ns = r.end_ns = 2'000;
  r.tuning.link = 3;
  r.tuning.window_scale = 1.25f;
  r.tuning.credit_scale = 0.7f;
  r.tuning.p2p_slowdown = 1.5f;
  r.tuning.samples = 4;
  r.tuning.utilisation = 0.5f;
  r.tuning.held_gap = 0.25f;
  r.tuning.held_beside = 0.125f;
  r.tuning.why = "p2p-slowed";
  nlohmann::json j = Render({r}, {});
  const auto& counter = j["traceEvents"][0];
  EXPECT_EQ(counter["ph"], "C");
  EXPECT_EQ(counter["name"], "tuning link 3");
  EXPECT_DOUBLE_EQ(counter["args"]["window_scale"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(counter["args"]["credit_scale"].get<double>(), 0.7);
  const auto& instant = j["traceEvents"][1];
  EXPECT_EQ(instant["ph"], "i");
  EXPECT_EQ(instant["name"], "tuning link 3: p2p-slowed");
  EXPECT_EQ(instant["args"]["why"], "p2p-slowed");
  EXPECT_EQ(instant["args"]["samples"], 4);
  EXPECT_DOUBLE_EQ(instant["args"]["p2p_slowdown"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(instant["args"]["held_beside"].get<double>(), 0.125);
  EXPECT_EQ(counter["ts"], instant["ts"]);
}

TEST(TraceJsonTest, QuotesEscapeControlCharacters) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(JsonQuote("host\xff"), "\"host\xef\xbf\xbd\"") << "bytes that are not UTF-8 become U+FFFD";
}

}  // namespace
}  // namespace trirace::interpose
