// The net plugin loader (plugin/loader) on a plugin that another user of the
// machine could have replaced: one in a world-writable folder (mode 0777,
// no sticky bit). Loading it is allowed (a shared scratch folder is common
// on clusters) but gives exactly one WARN naming the folder, whether the
// loader is pointed at it directly or through TRIRACE_NET_INNER (the net
// plugin's wrapper mode, where the WARN reaches NCCL's logger). A private
// folder gives no such WARN.
#include <sys/stat.h>

#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "gtest/gtest.h"
#include "plugin/net_harness.h"
#include "plugin/net_pair.h"
#include "support/subprocess.h"

namespace net_test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string>* g_lines = nullptr;

// NCCL's logger as the plugin calls it: "WARN <text>" or "INFO <text>".
void RecordingLogger(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  g_lines->push_back(std::string(level == NCCL_LOG_WARN ? "WARN " : "INFO ") + line);
}

// The sink of this process's own logging (the loader linked into the test).
void RecordingSink(void*, trirace::LogLevel level, trirace::Subsys, const char*, int, absl::string_view message) {
  g_lines->push_back(absl::StrCat(level == trirace::LogLevel::kWARN ? "WARN " : "INFO ", message));
}

// A copy of the inner test plugin (a second build of the TCP transport) in
// a fresh folder of `mode`, set with chmod so that the umask plays no part;
// or, with `as_link`, a symbolic link there to the plugin in the build tree.
class PluginInFolder {
 public:
  PluginInFolder(fs::perms mode, bool as_link = false)
      : dir_(testing_support::MakeTempDir("trirace-loader-")), lib_(dir_ / "libnccl-net-copy.so") {
    if (as_link) {
      fs::create_symlink(InnerPluginPath(), lib_);
    } else {
      fs::copy_file(InnerPluginPath(), lib_);
      fs::permissions(lib_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
    }
    fs::permissions(dir_, mode);
  }
  ~PluginInFolder() {
    fs::permissions(dir_, fs::perms::owner_all);
    fs::remove_all(dir_);
  }
  // The folder as the warning names it (symbolic links resolved).
  std::string folder() const { return fs::canonical(dir_).string(); }
  std::string lib() const { return lib_.string(); }
  unsigned mode_bits() const {
    struct stat st {};
    return stat(dir_.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }

 private:
  fs::path dir_, lib_;
};

constexpr fs::perms kWorldWritable = fs::perms::all;  // 0777
constexpr fs::perms kPrivate = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec;  // 0755

// The WARN lines among `lines` that name `folder` as world-writable.
std::vector<std::string> WarningsNaming(const std::vector<std::string>& lines, const std::string& folder) {
  std::vector<std::string> found;
  for (const std::string& l : lines) {
    if (absl::StartsWith(l, "WARN ") && absl::StrContains(l, "the folder " + folder + " is world-writable")) {
      found.push_back(l);
    }
  }
  return found;
}

// True when `path` is mapped into this process (the library really loaded).
bool Mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  return absl::StrContains(text, path);
}

Env WarnEnv(const std::string& tag) {
  Env env = BaseEnv(tag);
  env.push_back({"TRIRACE_DEBUG", "WARN"});
  env.push_back({"TRIRACE_DEBUG_SUBSYS", "ALL"});
  return env;
}

// Loads `lib` as NCCL_NET_PLUGIN naming a path would (the loader itself,
// not through the net plugin), with the shim's log lines in `lines`.
absl::StatusOr<trirace::net::NetPlugin> LoadLogged(const std::string& lib, std::vector<std::string>* lines) {
  g_lines = lines;
  trirace::log::ReconfigureForTesting();
  trirace::log::SetSink(&RecordingSink, nullptr);
  absl::StatusOr<trirace::net::NetPlugin> loaded = trirace::net::LoadNetPlugin({lib});
  trirace::log::SetSink(nullptr, nullptr);
  return loaded;
}

// TRIRACE_NET_INNER = `inner`: the net plugin loads it at Init; the lines
// NCCL's logger got, with Init's result and the inner plugin's first device.
void InitWrapped(const std::string& inner, std::vector<std::string>* lines) {
  g_lines = lines;
  auto net = NetPlugin::Load(PluginPath(), 11);
  ASSERT_NE(net, nullptr);
  ASSERT_EQ(net->Init(1, NCCL_NET_TRAFFIC_CLASS_UNDEF, RecordingLogger), ncclSuccess)
      << "the inner plugin is used all the same:\n" << absl::StrJoin(*lines, "\n");
  int ndev = 0;
  ASSERT_EQ(net->Devices(&ndev), ncclSuccess);
  ASSERT_GE(ndev, 1);
  ncclNetProperties_v11_t props{};
  ASSERT_EQ(net->GetProperties(0, &props), ncclSuccess);
  EXPECT_STREQ(props.name, "lo") << "the inner plugin's device (TRIRACE_NET_IFNAME=lo)";
  EXPECT_TRUE(Mapped(inner)) << inner << " is not what was loaded";
}

TEST(NetPluginLoader, AnInnerPluginInAWorldWritableFolderGetsOneWarningAndIsUsed) {
  const PluginInFolder plugin(kWorldWritable);
  ASSERT_EQ(plugin.mode_bits(), 0777u) << "a world-writable folder without the sticky bit";
  Env env = WarnEnv("ww-inner");
  env.push_back({"TRIRACE_NET_INNER", plugin.lib()});
  const int code = RunInChild(env, [&] {
    std::vector<std::string> lines;
    InitWrapped(plugin.lib(), &lines);
    const std::vector<std::string> warnings = WarningsNaming(lines, plugin.folder());
    ASSERT_EQ(warnings.size(), 1u) << "every line NCCL's logger got:\n" << absl::StrJoin(lines, "\n");
    EXPECT_TRUE(absl::StrContains(warnings[0], "net plugin " + plugin.lib())) << warnings[0];
    EXPECT_TRUE(absl::StrContains(warnings[0], "can run code in this job")) << warnings[0];
  });
  EXPECT_EQ(code, 0);
}

TEST(NetPluginLoader, AnInnerPluginInAPrivateFolderGetsNoWarning) {
  const PluginInFolder plugin(kPrivate);
  Env env = WarnEnv("private-inner");
  env.push_back({"TRIRACE_NET_INNER", plugin.lib()});
  const int code = RunInChild(env, [&] {
    std::vector<std::string> lines;
    InitWrapped(plugin.lib(), &lines);
    for (const std::string& l : lines) EXPECT_FALSE(absl::StrContains(l, "world-writable")) << l;
  });
  EXPECT_EQ(code, 0);
}

TEST(NetPluginLoader, LoadingFromAWorldWritableFolderWarnsOnceAndLoads) {
  const PluginInFolder plugin(kWorldWritable);
  const int code = RunInChild(WarnEnv("ww-direct"), [&] {
    std::vector<std::string> lines;
    // As NCCL_NET_PLUGIN names one: a path, then libnccl-net-<name>.so.
    absl::StatusOr<trirace::net::NetPlugin> loaded = LoadLogged(plugin.lib(), &lines);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->api->version(), 11) << "the newest table";
    EXPECT_EQ(WarningsNaming(lines, plugin.folder()).size(), 1u) << absl::StrJoin(lines, "\n");
  });
  EXPECT_EQ(code, 0);
}

// A symbolic link in a world-writable folder is as easy to replace as a
// file there, though the library it leads to sits in a private folder.
TEST(NetPluginLoader, ALinkInAWorldWritableFolderWarnsToo) {
  const PluginInFolder plugin(kWorldWritable, /*as_link=*/true);
  const int code = RunInChild(WarnEnv("ww-link"), [&] {
    std::vector<std::string> lines;
    absl::StatusOr<trirace::net::NetPlugin> loaded = LoadLogged(plugin.lib(), &lines);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(WarningsNaming(lines, plugin.folder()).size(), 1u) << absl::StrJoin(lines, "\n");
  });
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace net_test
