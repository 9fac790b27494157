// A fake libnvidia-ml for the NVML discovery tests, loaded by path (the
// test passes FAKE_NVML as the library). It exports the NVML calls
// topology/discovery/nvml.cc uses, with the public API's signatures, over
// four GPUs:
//
//   gpu 07:00.0  links 0, 1 -> gpu 0f:00.0; link 2 inactive
//   gpu 0f:00.0  links 0, 1 -> gpu 07:00.0
//   gpu 47:00.0  links 0..3 -> NVSwitch c1:00.0, c2:00.0 (two each)
//   gpu 4e:00.0  links 0..2 -> NVSwitch c1:00.0; link 3 -> a CPU (IBM NPU)
//
// fake_nvml_set_scenario picks what the library does (kScenario* below);
// fake_nvml_sessions() is the number of nvmlInit_v2 calls not yet shut down.
// NVLink counters (nvmlDeviceGetFieldValues): each active link of every GPU
// has sent fake_nvml_add_traffic's running total in KiB and received twice
// that.
#include <cstdio>
#include <cstring>

namespace {

enum Scenario {
  kScenarioGpus = 0,        // the four GPUs, remote device types reported
  kScenarioNoRemoteType,    // the same, nvmlDeviceGetNvLinkRemoteDeviceType not supported
  kScenarioInitFails,       // nvmlInit_v2: driver not loaded
  kScenarioNoGpu,           // no GPU
  kScenarioNoCounters,      // the NVLink throughput fields are not supported
};

constexpr int kSuccess = 0;
constexpr int kErrorInvalidArgument = 2;
constexpr int kErrorNotSupported = 3;
constexpr int kErrorDriverNotLoaded = 9;
constexpr int kTypeGpu = 0, kTypeNpu = 1, kTypeSwitch = 2;
constexpr unsigned kFieldTx = 138, kFieldRx = 139;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX / _RX
constexpr int kValueTypeUnsignedLongLong = 3;

struct FieldValue {  // nvmlFieldValue_t
  unsigned field_id;
  unsigned scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;
  int nvml_return;
  union {
    double d;
    unsigned long long ull;
  } value;
};

struct PciInfo {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

struct Link {
  const char* remote;  // nullptr: inactive
  int type;
};

struct FakeGpu {
  const char* bus_id;
  Link links[4];
};

// Device handles are pointers into this table.
const FakeGpu kGpus[] = {
    {"00000000:07:00.0", {{"00000000:0F:00.0", kTypeGpu}, {"00000000:0F:00.0", kTypeGpu}, {nullptr, 0}, {nullptr, 0}}},
    {"00000000:0F:00.0", {{"00000000:07:00.0", kTypeGpu}, {"00000000:07:00.0", kTypeGpu}, {nullptr, 0}, {nullptr, 0}}},
    {"00000000:47:00.0",
     {{"00000000:C1:00.0", kTypeSwitch},
      {"00000000:C1:00.0", kTypeSwitch},
      {"00000000:C2:00.0", kTypeSwitch},
      {"00000000:C2:00.0", kTypeSwitch}}},
    {"00000000:4E:00.0",
     {{"00000000:C1:00.0", kTypeSwitch},
      {"00000000:C1:00.0", kTypeSwitch},
      {"00000000:C1:00.0", kTypeSwitch},
      {"00000000:00:01.0", kTypeNpu}}},
};
constexpr unsigned kGpuCount = sizeof(kGpus) / sizeof(kGpus[0]);

int scenario = kScenarioGpus;
int sessions = 0;
unsigned long long traffic_kib = 0;

const FakeGpu* Gpu(void* device) {
  for (const FakeGpu& g : kGpus) {
    if (device == &g) return &g;
  }
  return nullptr;
}

void Fill(const char* bus_id, PciInfo* info) {
  std::memset(info, 0, sizeof(*info));
  std::snprintf(info->bus_id, sizeof(info->bus_id), "%s", bus_id);
  std::sscanf(bus_id, "%x:%x:%x", &info->domain, &info->bus, &info->device);
}

const Link* LinkOf(void* device, unsigned link) {
  const FakeGpu* g = Gpu(device);
  if (g == nullptr || link >= 4 || g->links[link].remote == nullptr) return nullptr;
  return &g->links[link];
}

}  // namespace

extern "C" {

void fake_nvml_set_scenario(int s) { scenario = s; }
void fake_nvml_add_traffic(unsigned long long kib) { traffic_kib += kib; }
int fake_nvml_sessions() { return sessions; }

int nvmlInit_v2() {
  if (scenario == kScenarioInitFails) return kErrorDriverNotLoaded;
  ++sessions;
  return kSuccess;
}

int nvmlShutdown() {
  --sessions;
  return kSuccess;
}

const char* nvmlErrorString(int rc) { return rc == kErrorDriverNotLoaded ? "Driver Not Loaded" : "Unknown Error"; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = scenario == kScenarioNoGpu ? 0 : kGpuCount;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index >= kGpuCount) return kErrorInvalidArgument;
  *device = const_cast<FakeGpu*>(&kGpus[index]);
  return kSuccess;
}

int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* info) {
  const FakeGpu* g = Gpu(device);
  if (g == nullptr) return kErrorInvalidArgument;
  Fill(g->bus_id, info);
  return kSuccess;
}

int nvmlDeviceGetNvLinkState(void* device, unsigned link, int* active) {
  if (Gpu(device) == nullptr || link >= 18) return kErrorInvalidArgument;
  *active = LinkOf(device, link) != nullptr ? 1 : 0;
  return kSuccess;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* device, unsigned link, PciInfo* info) {
  const Link* l = LinkOf(device, link);
  if (l == nullptr) return kErrorInvalidArgument;
  Fill(l->remote, info);
  return kSuccess;
}

int nvmlDeviceGetNvLinkRemoteDeviceType(void* device, unsigned link, int* type) {
  if (scenario == kScenarioNoRemoteType) return kErrorNotSupported;
  const Link* l = LinkOf(device, link);
  if (l == nullptr) return kErrorInvalidArgument;
  *type = l->type;
  return kSuccess;
}

int nvmlDeviceGetFieldValues(void* device, int count, FieldValue* values) {
  if (Gpu(device) == nullptr || count < 0) return kErrorInvalidArgument;
  for (int i = 0; i < count; ++i) {
    FieldValue& v = values[i];
    v.value.ull = 0;
    if (scenario == kScenarioNoCounters || (v.field_id != kFieldTx && v.field_id != kFieldRx)) {
      v.nvml_return = kErrorNotSupported;
    } else if (LinkOf(device, v.scope_id) == nullptr) {
      v.nvml_return = kErrorInvalidArgument;
    } else {
      v.nvml_return = kSuccess;
      v.value_type = kValueTypeUnsignedLongLong;
      v.value.ull = v.field_id == kFieldTx ? traffic_kib : 2 * traffic_kib;
    }
  }
  return kSuccess;
}

}  // extern "C"
