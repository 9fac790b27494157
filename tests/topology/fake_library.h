// A fake library (fake_nvml.cc, fake_ibverbs.cc) held open by a test, so
// that the scenario it sets is the one the code under test sees when it
// loads the same path: dlopen of one path gives one copy of its state.
#ifndef TRIRACE_TESTS_TOPOLOGY_FAKE_LIBRARY_H_
#define TRIRACE_TESTS_TOPOLOGY_FAKE_LIBRARY_H_

#include <dlfcn.h>

#include <string>

namespace trirace::topo {

class FakeLibrary {
 public:
  explicit FakeLibrary(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) error_ = dlerror();
  }
  ~FakeLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  FakeLibrary(const FakeLibrary&) = delete;
  FakeLibrary& operator=(const FakeLibrary&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  // Calls the library's `void name(T)` / `int name()`.
  template <typename T>
  void Call(const char* name, T value) const {
    reinterpret_cast<void (*)(T)>(dlsym(handle_, name))(value);
  }
  void SetScenario(const char* setter, int scenario) const { Call(setter, scenario); }
  int Count(const char* getter) const { return reinterpret_cast<int (*)()>(dlsym(handle_, getter))(); }

 private:
  void* handle_;
  std::string error_;
};

}  // namespace trirace::topo

#endif  // TRIRACE_TESTS_TOPOLOGY_FAKE_LIBRARY_H_
