#include "sim/workloads/models.h"

namespace trirace::sim {
namespace {

const std::vector<ModelSpec>& Models() {
  static const std::vector<ModelSpec> models = {
      {"bert-large", 24, 1024, 16, 512, 30522},
      {"gpt2-xl", 48, 1600, 25, 1024, 50257},
      {"gpt-1.3b", 24, 2048, 16, 2048, 50257},
      {"gpt-7b", 32, 4096, 32, 2048, 50257},
  };
  return models;
}

}  // namespace

std::vector<std::string> BuiltinModelNames() {
  std::vector<std::string> names;
  for (const ModelSpec& m : Models()) names.push_back(m.name);
  return names;
}

std::optional<ModelSpec> BuiltinModel(const std::string& name) {
  for (const ModelSpec& m : Models()) {
    if (m.name == name) return m;
  }
  return std::nullopt;
}

GpuProfile DefaultGpuProfile(const std::string& cluster_name) {
  if (cluster_name == "dgx-h100") return {450, 2700};
  if (cluster_name == "pcie-2nic") return {150, 1500};
  return {100, 1000};
}

}  // namespace trirace::sim
