#include "resources.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace hitbox::server {
namespace {

namespace fs = std::filesystem;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A whole decimal number (optionally negative) filling all of `s`.
bool ParseInt(std::string_view s, int64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

size_t CeilDiv(int64_t quota, int64_t period) {
  return static_cast<size_t>(std::max<int64_t>(1, (quota + period - 1) / period));
}

// The file's text, or nullopt-like empty + false when it cannot be read.
bool ReadFile(const fs::path& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// `dir` / `cgroup_path` and each of its ancestors up to `dir`; just `dir` when
// the cgroup's own directory does not exist under it.
std::vector<fs::path> CgroupDirs(const fs::path& dir, std::string_view cgroup_path) {
  std::vector<fs::path> out;
  fs::path rel = fs::path(std::string(Trim(cgroup_path))).relative_path();
  std::error_code ec;
  if (!rel.empty() && fs::is_directory(dir / rel, ec)) {
    for (; !rel.empty() && rel != rel.parent_path(); rel = rel.parent_path()) out.push_back(dir / rel);
  }
  out.push_back(dir);
  return out;
}

// Keeps the smaller non-zero limit.
void Tighten(size_t* limit, size_t cpus) {
  if (cpus != 0 && (*limit == 0 || cpus < *limit)) *limit = cpus;
}

}  // namespace

size_t CpusFromCgroupV2(std::string_view cpu_max) {
  cpu_max = Trim(cpu_max);
  const size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return 0;
  int64_t quota = 0, period = 0;
  if (!ParseInt(cpu_max.substr(0, space), &quota)) return 0;  // "max": unlimited
  if (!ParseInt(cpu_max.substr(space + 1), &period)) return 0;
  if (quota <= 0 || period <= 0) return 0;
  return CeilDiv(quota, period);
}

size_t CpusFromCgroupV1(std::string_view cfs_quota_us, std::string_view cfs_period_us) {
  int64_t quota = 0, period = 0;
  if (!ParseInt(cfs_quota_us, &quota) || !ParseInt(cfs_period_us, &period)) return 0;
  if (quota <= 0 || period <= 0) return 0;  // -1: no quota
  return CeilDiv(quota, period);
}

size_t CgroupCpuLimit(const std::string& cgroup_root, std::string_view proc_self_cgroup) {
  const fs::path root(cgroup_root);
  size_t limit = 0;
  std::string text, period;
  size_t pos = 0;
  while (pos < proc_self_cgroup.size()) {
    size_t eol = proc_self_cgroup.find('\n', pos);
    if (eol == std::string_view::npos) eol = proc_self_cgroup.size();
    const std::string_view line = proc_self_cgroup.substr(pos, eol - pos);
    pos = eol + 1;
    // "hierarchy-id:controller,list:/path"; v2 is "0::/path".
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string_view path = line.substr(c2 + 1);
    if (controllers.empty()) {  // cgroup v2 (unified hierarchy)
      for (const fs::path& dir : CgroupDirs(root, path)) {
        if (ReadFile(dir / "cpu.max", &text)) Tighten(&limit, CpusFromCgroupV2(text));
      }
      continue;
    }
    // cgroup v1: only the hierarchy holding the "cpu" controller.
    bool has_cpu = false;
    for (size_t b = 0; b <= controllers.size();) {
      size_t e = controllers.find(',', b);
      if (e == std::string_view::npos) e = controllers.size();
      if (controllers.substr(b, e - b) == "cpu") has_cpu = true;
      b = e + 1;
    }
    if (!has_cpu) continue;
    const std::string mounts[] = {std::string(controllers), "cpu", "cpu,cpuacct", "cpuacct,cpu"};
    for (const std::string& mount : mounts) {
      std::error_code ec;
      if (!fs::is_directory(root / mount, ec)) continue;
      for (const fs::path& dir : CgroupDirs(root / mount, path)) {
        if (ReadFile(dir / "cpu.cfs_quota_us", &text) &&
            ReadFile(dir / "cpu.cfs_period_us", &period)) {
          Tighten(&limit, CpusFromCgroupV1(text, period));
        }
      }
      break;  // one mount of the hierarchy is enough
    }
  }
  return limit;
}

CpuBudget MakeCpuBudget(size_t affinity, size_t cgroup_quota) {
  CpuBudget b;
  b.affinity = std::max<size_t>(1, affinity);
  b.cgroup_quota = cgroup_quota;
  b.usable = cgroup_quota == 0 ? b.affinity : std::min(b.affinity, cgroup_quota);
  return b;
}

CpuBudget ProcessCpuBudget() {
  size_t affinity = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) affinity = static_cast<size_t>(CPU_COUNT(&set));
  if (affinity == 0) affinity = std::max(1u, std::thread::hardware_concurrency());
  std::string self;
  const size_t quota = ReadFile("/proc/self/cgroup", &self) ? CgroupCpuLimit("/sys/fs/cgroup", self) : 0;
  return MakeCpuBudget(affinity, quota);
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  const std::string_view s = Trim(text);
  auto bad = [&] {
    std::string message = "'";
    message.append(text);
    message += "' is not a byte size (a whole number, optionally followed by K, M, G or T)";
    return Error{ErrorCode::kInvalidArgument, std::move(message)};
  };
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) return bad();
  // The unit, case-insensitively: "", B, K, KB, KiB, M, ... T.
  std::string_view unit(end, static_cast<size_t>(s.data() + s.size() - end));
  auto ends_with = [&](std::string_view suffix) {
    if (unit.size() < suffix.size()) return false;
    for (size_t i = 0; i < suffix.size(); ++i) {
      const char c = unit[unit.size() - suffix.size() + i];
      if (std::toupper(static_cast<unsigned char>(c)) != suffix[i]) return false;
    }
    return true;
  };
  if (unit.size() > 2 && ends_with("IB")) unit.remove_suffix(2);
  else if (unit.size() == 2 && ends_with("B")) unit.remove_suffix(1);
  int shift = 0;
  if (unit.size() > 1) return bad();
  switch (unit.empty() ? 'B' : std::toupper(static_cast<unsigned char>(unit[0]))) {
    case 'B': shift = 0; break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: return bad();
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return bad();
  return value << shift;
}

}  // namespace hitbox::server
