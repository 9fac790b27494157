// spec_file.h: the shim's reader of TRIRACE_TOPO_FILE (JSON specs only),
// and the format detection every reader shares.
#include "topology/discovery/spec_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/subprocess.h"
#include "topology/discovery/json_spec.h"
#include "topology/discovery/load.h"

namespace trirace::topo {
namespace {

using ::testing::HasSubstr;

std::string Data(const char* name) { return std::string(TRIRACE_TOPO_TEST_DATA) + "/" + name; }

TEST(SpecFileTest, FormatsAreToldByContent) {
  EXPECT_EQ(*DetectTopologyFormat("\xEF\xBB\xBF  {\"hosts\": []}", "a"), TopologyFormat::kJsonSpec);
  EXPECT_EQ(*DetectTopologyFormat("<?xml version=\"1.0\"?>\n<!-- x -->\n<system version=\"1\"/>", "b"),
            TopologyFormat::kNcclXml);
  EXPECT_EQ(*DetectTopologyFormat("<topology version=\"2.0\">", "c"), TopologyFormat::kHwlocXml);
  EXPECT_THAT(DetectTopologyFormat("", "d").status().message(), HasSubstr("d: empty file"));
  EXPECT_THAT(DetectTopologyFormat("<html>", "e").status().message(), HasSubstr("e: XML with root <html>"));
  EXPECT_THAT(DetectTopologyFormat("hosts: 2", "f").status().message(), HasSubstr("not a topology file"));
}

TEST(SpecFileTest, TheShimReadsSpecsAndSaysHowToConvertXml) {
  absl::StatusOr<System> spec = LoadTopologySpec(Data("two_hosts_2rail.json"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->hosts.size(), 2u);
  EXPECT_EQ(spec->hosts[1].nics[1].rail, 1) << "AssignNics ran";
  for (const char* xml : {"cloud_2gpu_2nic.xml", "cloud_2gpu_2nic.hwloc.xml"}) {
    absl::StatusOr<System> sys = LoadTopologySpec(Data(xml));
    ASSERT_FALSE(sys.ok());
    EXPECT_EQ(sys.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(sys.status().message(), HasSubstr("trirace topo --from " + Data(xml) + " --spec > spec.json"));
  }
  EXPECT_EQ(LoadTopologySpec("/nonexistent.json").status().code(), absl::StatusCode::kNotFound);
}

TEST(SpecFileTest, AnXmlConvertedToASpecLoadsInTheShimAsTheSameModel) {
  absl::StatusOr<System> xml = LoadTopologyFile(Data("pcie_8gpu_4nic.xml"), "node0");
  ASSERT_TRUE(xml.ok()) << xml.status();
  const std::string dir = testing_support::MakeTempDir("trirace-spec-file");
  std::ofstream(dir + "/spec.json") << ToJsonSpec(*xml);
  absl::StatusOr<System> spec = LoadTopologySpec(dir + "/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->hosts.size(), 1u);
  const Host& a = xml->hosts[0];
  const Host& b = spec->hosts[0];
  EXPECT_EQ(b.key, "node0");
  ASSERT_EQ(b.gpus.size(), a.gpus.size());
  ASSERT_EQ(b.nics.size(), a.nics.size());
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    EXPECT_EQ(b.gpus[i].pci, a.gpus[i].pci);
    EXPECT_EQ(b.nics[b.gpus[i].nic].name, a.nics[a.gpus[i].nic].name) << "GPU " << i << " keeps its NIC";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trirace::topo
