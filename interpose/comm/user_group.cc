#include "interpose/comm/user_group.h"

namespace trirace::interpose {

void UserGroup::Enter(uint64_t id) {
  if (depth_++ == 0) {
    Reset();
    id_ = id;
  }
}

bool UserGroup::Leave() {
  if (depth_ == 0) return false;
  return --depth_ == 0;
}

void UserGroup::Reset() {
  ops_.clear();
  created_.clear();
  pending_comms_.clear();
  gating = GroupGating::kUndecided;
  lane = nullptr;
}

UserGroup& ThisThreadGroup() {
  thread_local UserGroup group;
  return group;
}

}  // namespace trirace::interpose
