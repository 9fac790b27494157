#include "common/library_paths.h"

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/subprocess.h"

namespace trirace {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(WorldWritableReasonTest, NamesAWritableFolderOrFile) {
  const fs::path dir = testing_support::MakeTempDir("trirace-libpath-");
  const fs::path lib = dir / "libx.so";
  std::ofstream(lib) << "x";
  fs::permissions(dir, fs::perms::owner_all);
  fs::permissions(lib, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(WorldWritableReason(lib.string()), "");

  fs::permissions(dir, fs::perms::all);
  EXPECT_EQ(WorldWritableReason(lib.string()), "the folder " + dir.string() + " is world-writable");

  fs::permissions(dir, fs::perms::owner_all);
  fs::permissions(lib, fs::perms::others_write, fs::perm_options::add);
  EXPECT_EQ(WorldWritableReason(lib.string()), "the file is world-writable");

  EXPECT_EQ(WorldWritableReason(""), "");
  EXPECT_EQ(WorldWritableReason((dir / "absent" / "libx.so").string()), "");
  fs::remove_all(dir);
}

TEST(WorldWritableReasonTest, ALinkInAWorldWritableFolderNamesThatFolder) {
  // The library in a private folder, a link to it in a world-writable one:
  // anyone can point the link at another library.
  const fs::path dir = testing_support::MakeTempDir("trirace-libpath-");
  fs::create_directory(dir / "private");
  fs::create_directory(dir / "shared");
  const fs::path lib = dir / "private" / "libx.so";
  std::ofstream(lib) << "x";
  fs::permissions(lib, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(dir / "private", fs::perms::owner_all);
  fs::create_symlink(lib, dir / "shared" / "libx.so");
  fs::permissions(dir / "shared", fs::perms::owner_all);
  EXPECT_EQ(WorldWritableReason((dir / "shared" / "libx.so").string()), "");
  fs::permissions(dir / "shared", fs::perms::all);
  EXPECT_EQ(WorldWritableReason((dir / "shared" / "libx.so").string()),
            "the folder " + (dir / "shared").string() + " is world-writable");
  EXPECT_EQ(WorldWritableReason(lib.string()), "") << "the library itself is where nobody else can write";
  fs::remove_all(dir);
}

TEST(LoadedFileTest, TheFileBehindAHandle) {
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  EXPECT_THAT(LoadedFile(handle), HasSubstr("libc.so.6"));
  dlclose(handle);
  EXPECT_EQ(LoadedFile(nullptr), "");
}

}  // namespace
}  // namespace trirace
