// libtrirace.so defines every ncclX of the installed nccl.h, and nothing
// else but trirace_get_api; the pncclX names are not its own.
#include <dlfcn.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/nccl_api.h"
#include "support/subprocess.h"

namespace {

std::set<std::string> HeaderFunctions() {
  std::ifstream in(NCCL_HEADER);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::set<std::string> names;
  const std::regex decl(R"((?:ncclResult_t|const char\*)\s+(nccl[A-Za-z0-9]+)\s*\()");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1].str());
  }
  return names;
}

std::set<std::string> ListedFunctions() {
  std::set<std::string> names;
#define TRIRACE_LIST_NAME(name) names.insert("nccl" #name);
  TRIRACE_NCCL_API(TRIRACE_LIST_NAME)
#undef TRIRACE_LIST_NAME
  return names;
}

TEST(ExportsTest, TheApiListMatchesTheInstalledHeader) {
  const std::set<std::string> header = HeaderFunctions();
  ASSERT_FALSE(header.empty()) << "no declarations parsed from " << NCCL_HEADER;
  EXPECT_EQ(header, ListedFunctions());
}

TEST(ExportsTest, TheShimDefinesEveryFunctionAndNoPncclName) {
  // Loading the shim runs nothing: it initialises on the first NCCL call.
  void* shim = dlopen(SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(shim, nullptr) << dlerror();
  Dl_info self{};
  ASSERT_NE(dladdr(dlsym(shim, "trirace_get_api"), &self), 0);
  for (const std::string& name : HeaderFunctions()) {
    void* p = dlsym(shim, name.c_str());
    ASSERT_NE(p, nullptr) << name;
    Dl_info info{};
    ASSERT_NE(dladdr(p, &info), 0) << name;
    EXPECT_EQ(info.dli_fbase, self.dli_fbase) << name << " resolves outside the shim";
    EXPECT_EQ(dlsym(shim, ("p" + name).c_str()), nullptr) << "p" << name << " must stay the real library's";
  }
}

TEST(ExportsTest, OnlyTheNcclApiAndTheAnnotationEntryAreExported) {
  auto r = testing_support::RunProcess({"nm", "-D", "--defined-only", SHIM_PATH});
  if (r.exit_code != 0) GTEST_SKIP() << "nm is not available: " << r.err;
  std::set<std::string> exported;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string addr, type, name;
    if (f >> addr >> type >> name) exported.insert(name.substr(0, name.find('@')));
  }
  std::set<std::string> expected = ListedFunctions();
  expected.insert("trirace_get_api");
  EXPECT_EQ(exported, expected);
  auto needed = testing_support::RunProcess({"readelf", "-d", SHIM_PATH});
  EXPECT_THAT(needed.out, ::testing::Not(::testing::HasSubstr("libnccl")));
}

}  // namespace
