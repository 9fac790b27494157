// Test helper: sets environment variables for one test and restores them.
#ifndef TRIRACE_TESTS_COMMON_ENV_GUARD_H_
#define TRIRACE_TESTS_COMMON_ENV_GUARD_H_

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/params.h"

namespace trirace {

class EnvGuard {
 public:
  EnvGuard() = default;
  ~EnvGuard() {
    for (auto& [name, old] : saved_) {
      if (old) {
        setenv(name.c_str(), old->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
    Params::ReloadForTesting();
  }
  EnvGuard& Set(const std::string& name, const std::string& value) {
    Save(name);
    setenv(name.c_str(), value.c_str(), 1);
    return *this;
  }
  EnvGuard& Unset(const std::string& name) {
    Save(name);
    unsetenv(name.c_str());
    return *this;
  }
  // Makes the registry read the environment as it is now.
  void Apply() { Params::ReloadForTesting(); }

 private:
  void Save(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace trirace

#endif  // TRIRACE_TESTS_COMMON_ENV_GUARD_H_
