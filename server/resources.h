// What the process may use: the CPUs its affinity mask and cgroup CPU quota
// allow (for the default size of the query pool), and byte sizes with unit
// suffixes (for --max-memory). No gRPC here; the parsers take strings or a
// directory so tests can feed them made-up cgroup files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hitbox/status.h"

namespace hitbox::server {

/// CPUs allowed by a cgroup v2 `cpu.max` file ("QUOTA PERIOD", microseconds,
/// or "max PERIOD"): ceil(QUOTA / PERIOD), at least 1; 0 when unlimited or
/// unparsable.
size_t CpusFromCgroupV2(std::string_view cpu_max);

/// CPUs allowed by cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`:
/// ceil(quota / period), at least 1; 0 when the quota is -1 (unlimited) or
/// either file is unparsable.
size_t CpusFromCgroupV1(std::string_view cfs_quota_us, std::string_view cfs_period_us);

/// The tightest CPU quota on this process's cgroups, 0 when none: reads
/// `proc_self_cgroup` (the text of /proc/self/cgroup) for the process's cgroup
/// paths, then under `cgroup_root` (normally /sys/fs/cgroup) the v2 `cpu.max`
/// and the v1 `cpu/` (or `cpu,cpuacct/`) `cpu.cfs_quota_us` of that cgroup and
/// of every ancestor (a parent's quota caps its children). When the path does
/// not exist under the root (a container's own cgroup namespace), the root's
/// files are the container's.
size_t CgroupCpuLimit(const std::string& cgroup_root, std::string_view proc_self_cgroup);

/// Where the CPU count of the query pool came from.
struct CpuBudget {
  /// CPUs in the scheduler affinity mask (sched_getaffinity), or the hardware
  /// threads when the mask cannot be read.
  size_t affinity = 1;
  /// ceil(quota / period) of the tightest cgroup CPU quota; 0 when none.
  size_t cgroup_quota = 0;
  /// min(affinity, cgroup_quota when set), at least 1: the CPUs this process may use.
  size_t usable = 1;
};

/// Combines an affinity count and a cgroup quota (0: none) into a CpuBudget.
CpuBudget MakeCpuBudget(size_t affinity, size_t cgroup_quota);

/// The CPUs this process may use, from its affinity mask, /proc/self/cgroup
/// and /sys/fs/cgroup.
CpuBudget ProcessCpuBudget();

/// Parses a byte size: a whole number with an optional binary unit suffix
/// K, M, G or T (powers of 1024; "KB", "KiB", "k" alike), e.g. "0",
/// "1048576", "512M", "8G". Errors: kInvalidArgument naming the text.
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace hitbox::server
