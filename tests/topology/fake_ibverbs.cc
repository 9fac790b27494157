// A fake libibverbs for the ibverbs discovery tests, loaded by path (the
// test passes FAKE_IBVERBS as the library). It exports the verbs calls
// topology/discovery/ibverbs.cc resolves, with the types of
// <infiniband/verbs.h>, over four devices:
//
//   mlx5_0  port 1 ACTIVE, HDR 4X (200 Gbit/s), InfiniBand   extended context
//   mlx5_1  port 1 ACTIVE, NDR 4X (400), InfiniBand;         legacy context:
//           port 2 DOWN                                      ibv_query_port export
//   mlx5_2  port 1 ACTIVE, EDR 4X (100), Ethernet (RoCE)     extended context
//   mlx5_3  does not open (EACCES)
//
// An extended context carries the query_port op the header's inline
// ibv_query_port calls; a legacy one makes it fall back to the exported
// ibv_query_port. fake_ibverbs_set_scenario picks what the library does
// (kScenario* below); fake_ibverbs_open() counts the device lists and
// contexts handed out and not yet released.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#undef ibv_query_port

namespace {

enum Scenario {
  kScenarioDevices = 0,  // the four devices
  kScenarioNoDevice,     // an empty list
  kScenarioNoKernel,     // no list: ENOSYS, as without the uverbs driver
};

struct FakePort {
  ibv_port_state state;
  uint8_t speed, width, link_layer;
};

struct FakeDevice {
  const char* name;
  bool extended;
  bool opens;
  int ports;
  FakePort port[2];
};

const FakeDevice kDevices[] = {
    {"mlx5_0", true, true, 1, {{IBV_PORT_ACTIVE, 64, 2, IBV_LINK_LAYER_INFINIBAND}, {}}},
    {"mlx5_1",
     false,
     true,
     2,
     {{IBV_PORT_ACTIVE, 128, 2, IBV_LINK_LAYER_INFINIBAND}, {IBV_PORT_DOWN, 0, 0, IBV_LINK_LAYER_INFINIBAND}}},
    {"mlx5_2", true, true, 1, {{IBV_PORT_ACTIVE, 32, 2, IBV_LINK_LAYER_ETHERNET}, {}}},
    {"mlx5_3", true, false, 1, {{IBV_PORT_ACTIVE, 64, 2, IBV_LINK_LAYER_INFINIBAND}, {}}},
};
constexpr int kDeviceCount = sizeof(kDevices) / sizeof(kDevices[0]);

ibv_device devices[kDeviceCount];
int scenario = kScenarioDevices;
int open_objects = 0;

const FakeDevice* Fake(ibv_device* dev) {
  for (int i = 0; i < kDeviceCount; ++i) {
    if (dev == &devices[i]) return &kDevices[i];
  }
  return nullptr;
}

int QueryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) {
  const FakeDevice* d = Fake(ctx->device);
  if (d == nullptr || port < 1 || port > d->ports) return EINVAL;
  const FakePort& p = d->port[port - 1];
  attr->state = p.state;
  attr->active_speed = p.speed;
  attr->active_width = p.width;
  attr->link_layer = p.link_layer;
  return 0;
}

int QueryPortOp(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len) {
  if (len < sizeof(*attr)) return EINVAL;
  return QueryPort(ctx, port, attr);
}

}  // namespace

extern "C" {

void fake_ibverbs_set_scenario(int s) { scenario = s; }
int fake_ibverbs_open() { return open_objects; }

}  // extern "C"

ibv_device** ibv_get_device_list(int* num_devices) {
  if (scenario == kScenarioNoKernel) {
    errno = ENOSYS;
    return nullptr;
  }
  const int n = scenario == kScenarioNoDevice ? 0 : kDeviceCount;
  auto** list = new ibv_device*[n + 1];
  for (int i = 0; i < n; ++i) {
    std::snprintf(devices[i].name, sizeof(devices[i].name), "%s", kDevices[i].name);
    list[i] = &devices[i];
  }
  list[n] = nullptr;
  if (num_devices != nullptr) *num_devices = n;
  ++open_objects;
  return list;
}

void ibv_free_device_list(ibv_device** list) {
  delete[] list;
  --open_objects;
}

const char* ibv_get_device_name(ibv_device* device) { return device->name; }

ibv_context* ibv_open_device(ibv_device* device) {
  const FakeDevice* d = Fake(device);
  if (d == nullptr || !d->opens) {
    errno = EACCES;
    return nullptr;
  }
  ibv_context* ctx = nullptr;
  if (d->extended) {
    auto* vctx = new verbs_context();
    vctx->sz = sizeof(*vctx);
    vctx->query_port = QueryPortOp;
    vctx->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    ctx = &vctx->context;
  } else {
    ctx = new ibv_context();
  }
  ctx->device = device;
  ++open_objects;
  return ctx;
}

int ibv_close_device(ibv_context* ctx) {
  if (ctx->abi_compat == __VERBS_ABI_IS_EXTENDED) {
    delete verbs_get_ctx(ctx);
  } else {
    delete ctx;
  }
  --open_objects;
  return 0;
}

int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
  const FakeDevice* d = Fake(ctx->device);
  if (d == nullptr) return EINVAL;
  std::memset(attr, 0, sizeof(*attr));
  attr->phys_port_cnt = static_cast<uint8_t>(d->ports);
  return 0;
}

// The export a legacy context falls back to (the header's struct is the
// older, shorter layout: only the fields it shares are written).
int ibv_query_port(ibv_context* ctx, uint8_t port, _compat_ibv_port_attr* attr) {
  const FakeDevice* d = Fake(ctx->device);
  if (d == nullptr || d->extended) return EINVAL;  // the extended path must not come here
  return QueryPort(ctx, port, reinterpret_cast<ibv_port_attr*>(attr));
}
