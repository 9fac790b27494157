#include "interpose/network/front_stage.h"

#include <atomic>

namespace trirace::interpose {
namespace {

enum ProcessPlace : int {
  kNothingNoted = 0,
  kFrontOnEvery = 1,  // front on every pipeline comm noted so far
  kBehindOnOne = 2,   // behind on at least one: final
};
std::atomic<int> g_place{kNothingNoted};

}  // namespace

void NoteDenseAhead(HostPlace place) {
  if (place == HostPlace::kBehind) {
    g_place.store(kBehindOnOne, std::memory_order_relaxed);
  } else if (place == HostPlace::kFront) {
    int nothing = kNothingNoted;
    g_place.compare_exchange_strong(nothing, kFrontOnEvery, std::memory_order_relaxed);
  }
}
bool DenseAhead() { return g_place.load(std::memory_order_relaxed) == kFrontOnEvery; }
bool DenseBehind() { return g_place.load(std::memory_order_relaxed) == kBehindOnOne; }
void ResetDenseAheadForTest() { g_place.store(kNothingNoted, std::memory_order_relaxed); }

}  // namespace trirace::interpose
