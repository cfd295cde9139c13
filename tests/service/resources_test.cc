// What hitboxd may use: the CPU count behind --threads 0 (affinity and cgroup
// quotas, fed made-up cgroup trees) and the byte sizes of --max-memory.
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "resources.h"

namespace hitbox {
namespace {

using ::testing::HasSubstr;
using server::CgroupCpuLimit;
namespace fs = std::filesystem;

// A scratch directory standing in for /sys/fs/cgroup.
class FakeCgroupRoot {
 public:
  FakeCgroupRoot() {
    root_ = fs::temp_directory_path() /
            ("hitbox-cgroup-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(root_);
  }
  ~FakeCgroupRoot() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void Write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string path() const { return root_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

// cpu.max: "max" is unlimited, quotas round up to whole CPUs, garbage is ignored.
TEST(CpuBudgetTest, CgroupV2CpuMax) {
  EXPECT_EQ(server::CpusFromCgroupV2("max 100000\n"), 0u);
  EXPECT_EQ(server::CpusFromCgroupV2("100000 100000\n"), 1u);
  EXPECT_EQ(server::CpusFromCgroupV2("150000 100000\n"), 2u);
  EXPECT_EQ(server::CpusFromCgroupV2("50000 100000"), 1u);  // half a CPU still gets one thread
  EXPECT_EQ(server::CpusFromCgroupV2("400000 100000"), 4u);
  EXPECT_EQ(server::CpusFromCgroupV2(""), 0u);
  EXPECT_EQ(server::CpusFromCgroupV2("abc"), 0u);
  EXPECT_EQ(server::CpusFromCgroupV2("100000 0"), 0u);
}

// cfs_quota_us of -1 is unlimited; otherwise ceil(quota / period).
TEST(CpuBudgetTest, CgroupV1CfsQuota) {
  EXPECT_EQ(server::CpusFromCgroupV1("-1\n", "100000\n"), 0u);
  EXPECT_EQ(server::CpusFromCgroupV1("200000\n", "100000\n"), 2u);
  EXPECT_EQ(server::CpusFromCgroupV1("250000", "100000"), 3u);
  EXPECT_EQ(server::CpusFromCgroupV1("10000", "100000"), 1u);
  EXPECT_EQ(server::CpusFromCgroupV1("x", "100000"), 0u);
}

// A container's cgroup v2 namespace: /proc/self/cgroup says "0::/" and the
// quota sits in the root's cpu.max.
TEST(CpuBudgetTest, CgroupV2ContainerRoot) {
  FakeCgroupRoot root;
  root.Write("cpu.max", "100000 100000\n");
  EXPECT_EQ(CgroupCpuLimit(root.path(), "0::/\n"), 1u);
  root.Write("cpu.max", "max 100000\n");
  EXPECT_EQ(CgroupCpuLimit(root.path(), "0::/\n"), 0u);
}

// A systemd slice: the tightest quota on the path from the process's cgroup to
// the root wins (a parent's quota caps its children).
TEST(CpuBudgetTest, CgroupV2NestedTightestWins) {
  FakeCgroupRoot root;
  root.Write("game.slice/cpu.max", "200000 100000\n");
  root.Write("game.slice/hitboxd.service/cpu.max", "max 100000\n");
  EXPECT_EQ(CgroupCpuLimit(root.path(), "0::/game.slice/hitboxd.service\n"), 2u);
  root.Write("game.slice/hitboxd.service/cpu.max", "300000 100000\n");
  EXPECT_EQ(CgroupCpuLimit(root.path(), "0::/game.slice/hitboxd.service\n"), 2u);
  root.Write("game.slice/hitboxd.service/cpu.max", "100000 100000\n");
  EXPECT_EQ(CgroupCpuLimit(root.path(), "0::/game.slice/hitboxd.service\n"), 1u);
  // A path that does not exist under the root (another namespace): the root's files.
  EXPECT_EQ(CgroupCpuLimit(root.path(), "0::/elsewhere/x\n"), 0u);
}

// cgroup v1 (and hybrid): the quota is under the mount of the "cpu" hierarchy,
// whatever it is called; other hierarchies are ignored.
TEST(CpuBudgetTest, CgroupV1Hierarchies) {
  const std::string self =
      "12:memory:/docker/abc\n"
      "4:cpu,cpuacct:/docker/abc\n"
      "1:name=systemd:/docker/abc\n"
      "0::/docker/abc\n";
  FakeCgroupRoot root;
  EXPECT_EQ(CgroupCpuLimit(root.path(), self), 0u);  // no files at all: no limit
  root.Write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n");
  root.Write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  root.Write("memory/docker/abc/cpu.cfs_quota_us", "1\n");  // not the cpu hierarchy
  root.Write("memory/docker/abc/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(CgroupCpuLimit(root.path(), self), 2u);
  // Container view: the hierarchy mounted as "cpu", the path not present.
  FakeCgroupRoot inside;
  inside.Write("cpu/cpu.cfs_quota_us", "100000\n");
  inside.Write("cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(CgroupCpuLimit(inside.path(), "3:cpu:/docker/abc\n"), 1u);
  // Both v1 and v2 files: the tighter one.
  inside.Write("cpu.max", "50000 100000\n");
  EXPECT_EQ(CgroupCpuLimit(inside.path(), "3:cpu:/docker/abc\n0::/\n"), 1u);
}

// usable = min(affinity, quota), at least 1.
TEST(CpuBudgetTest, AffinityAndQuota) {
  EXPECT_EQ(server::MakeCpuBudget(8, 0).usable, 8u);
  EXPECT_EQ(server::MakeCpuBudget(8, 2).usable, 2u);
  EXPECT_EQ(server::MakeCpuBudget(2, 8).usable, 2u);
  EXPECT_EQ(server::MakeCpuBudget(0, 0).usable, 1u);
  const server::CpuBudget here = server::ProcessCpuBudget();
  EXPECT_GE(here.usable, 1u);
  EXPECT_LE(here.usable, here.affinity);
}

// Byte sizes: plain numbers and binary suffixes; errors name the text.
TEST(ByteSizeTest, ParsesSuffixes) {
  EXPECT_EQ(*server::ParseByteSize("0"), 0u);
  EXPECT_EQ(*server::ParseByteSize("1048576"), 1048576u);
  EXPECT_EQ(*server::ParseByteSize("64K"), 64u << 10);
  EXPECT_EQ(*server::ParseByteSize("512M"), 512ull << 20);
  EXPECT_EQ(*server::ParseByteSize("512mb"), 512ull << 20);
  EXPECT_EQ(*server::ParseByteSize("8G"), 8ull << 30);
  EXPECT_EQ(*server::ParseByteSize("8GiB"), 8ull << 30);
  EXPECT_EQ(*server::ParseByteSize("2T"), 2ull << 40);
  EXPECT_EQ(*server::ParseByteSize(" 100B "), 100u);
  for (const char* bad : {"", "M", "-1", "1.5G", "12X", "99999999999T", "1 G B"}) {
    const Result<uint64_t> r = server::ParseByteSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.error().message, HasSubstr("is not a byte size")) << bad;
  }
}

}  // namespace
}  // namespace hitbox
