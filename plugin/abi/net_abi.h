/*
 * net_abi.h: C declarations of the NCCL net plugin ABI, versions v8 to v11.
 *
 * What it is: the function tables (ncclNet_v8_t .. ncclNet_v11_t), their
 * property structs, the comm config, the v11 transfer attributes, the device
 * handle, the logger and profiler callback types and the constants that a
 * net plugin exports to NCCL (symbols ncclNetPlugin_vN) and that a loader of
 * such plugins (NCCL itself, TriRace's wrapper mode, hostccl) calls through.
 *
 * Written from the published ABI of NVIDIA NCCL 2.28.9 (the net plugin
 * interface that NCCL documents for external plugins); every struct was
 * checked field by field, in order, against that release. Layouts and names
 * are frozen: other TriRace modules include this header.
 *
 * Compiles as C11 and C++. ncclResult_t comes from the installed nccl.h; the
 * device handle types come from NCCL's public nccl_device/net_device.h when
 * that header exists and are declared here (same guard, same layout) when it
 * does not, so either include order works. The logger types are skipped when
 * NCCL's own internal debug header was included first.
 *
 * The declarations of each version are in their own header (net_v11.h,
 * net_v10.h, net_v9.h, net_v8.h; what they share in net_common.h), so each
 * can be read against NCCL's; this header includes them all.
 */
#ifndef TRIRACE_PLUGIN_ABI_NET_ABI_H_
#define TRIRACE_PLUGIN_ABI_NET_ABI_H_

#include "plugin/abi/net_common.h"
#include "plugin/abi/net_v11.h"
#include "plugin/abi/net_v10.h"
#include "plugin/abi/net_v9.h"
#include "plugin/abi/net_v8.h"

/* Exported table symbols, newest first (the order loaders try them). */
#define TRIRACE_NCCL_NET_SYMBOL_V11 "ncclNetPlugin_v11"
#define TRIRACE_NCCL_NET_SYMBOL_V10 "ncclNetPlugin_v10"
#define TRIRACE_NCCL_NET_SYMBOL_V9 "ncclNetPlugin_v9"
#define TRIRACE_NCCL_NET_SYMBOL_V8 "ncclNetPlugin_v8"

#endif /* TRIRACE_PLUGIN_ABI_NET_ABI_H_ */
