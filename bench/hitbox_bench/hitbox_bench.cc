// hitbox-bench: loads a conformance case file (.json or .json.gz), builds a
// ColliderSet, checks every answer against the file (exit 1 on any
// mismatch), and measures:
//   - build time (AddBulk, best of 3) and bytes per collider;
//   - queries per second per kind on one thread and on a pool (RunBatch);
//   - tree update rates: insert, small moves, large moves, remove;
//   - with --threads-list, the scaling of the whole mixed batch over pools
//     of 1, 2, 4, ... threads: queries per second (wall) and per CPU-second
//     of the process, and the speedup over one thread (counts above the
//     machine's hardware threads are skipped, and said so).
//
// With --skip-started-contact every sweep skips the contact of a hit at its
// start (CastQuery::skip_started_contact): the work of a peer whose casts
// report an initial overlap without its penetration (the case files check
// the hit and its fraction only).
//
//   hitbox-bench FILE [--json] [--threads N] [--min-time S] [--threads-list 1,2,4,8,16]
//                [--skip-started-contact]
#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hitbox/cases/case_file.h"
#include "hitbox/world/collider_set.h"
#include "shape/surface_data.h"

namespace hitbox {
namespace {

using Clock = std::chrono::steady_clock;
using cases::QueryKind;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct KindStats {
  size_t queries = 0;
  size_t mismatches = 0;
  double qps_1 = 0.0;
  /// One thread, per second of that thread's CPU time (robust when the
  /// machine is shared: wall time then includes time spent descheduled).
  double qps_1_cpu = 0.0;
  double qps_all = 0.0;
};

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Median queries per second of repeated RunBatch calls over `qs` (wall
// time); *cpu_qps gets the median per second of the calling thread's CPU time.
double MeasureQps(const ColliderSet& set, const std::vector<Query>& qs, ThreadPool* pool,
                  double min_time, double* cpu_qps = nullptr) {
  if (qs.empty()) return 0.0;
  std::vector<QueryResult> results(qs.size());
  std::vector<double> rates, cpu_rates;
  const Clock::time_point start = Clock::now();
  while (rates.size() < 3 || (Seconds(start, Clock::now()) < min_time && rates.size() < 1000)) {
    const double ca = ThreadCpuSeconds();
    const Clock::time_point a = Clock::now();
    set.RunBatch(qs, results, pool);
    const Clock::time_point b = Clock::now();
    const double cb = ThreadCpuSeconds();
    rates.push_back(static_cast<double>(qs.size()) / std::max(1e-9, Seconds(a, b)));
    cpu_rates.push_back(static_cast<double>(qs.size()) / std::max(1e-9, cb - ca));
  }
  std::sort(rates.begin(), rates.end());
  std::sort(cpu_rates.begin(), cpu_rates.end());
  if (cpu_qps != nullptr) *cpu_qps = cpu_rates[cpu_rates.size() / 2];
  return rates[rates.size() / 2];
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/// One pool size of --threads-list.
struct ScalingPoint {
  size_t threads = 0;
  /// Median queries per second (wall) of the whole mixed batch.
  double qps = 0.0;
  /// Queries per CPU-second of the whole process over the same runs: when it
  /// holds as threads are added, the pool costs nothing extra and the wall
  /// figure is bounded only by the cores actually free.
  double qps_per_cpu = 0.0;
};

ScalingPoint MeasureScaling(const ColliderSet& set, const std::vector<Query>& qs, size_t threads,
                            double min_time) {
  ScalingPoint p;
  p.threads = threads;
  std::unique_ptr<ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
  std::vector<QueryResult> results(qs.size());
  set.RunBatch(qs, results, pool.get());  // warm-up
  const double c0 = ProcessCpuSeconds();
  const Clock::time_point start = Clock::now();
  std::vector<double> rates;
  size_t runs = 0;
  while (rates.size() < 3 || (Seconds(start, Clock::now()) < min_time && rates.size() < 1000)) {
    const Clock::time_point a = Clock::now();
    set.RunBatch(qs, results, pool.get());
    rates.push_back(static_cast<double>(qs.size()) / std::max(1e-9, Seconds(a, Clock::now())));
    ++runs;
  }
  const double cpu = ProcessCpuSeconds() - c0;
  std::sort(rates.begin(), rates.end());
  p.qps = rates[rates.size() / 2];
  p.qps_per_cpu = static_cast<double>(runs * qs.size()) / std::max(1e-9, cpu);
  return p;
}

// "1,2,4" -> {1, 2, 4}; empty on a bad list.
std::vector<size_t> ParseThreadList(const std::string& text) {
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0 || v > 1024) return {};
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

// Built bytes (data + hierarchy, input copies excluded) per triangle of the
// distinct meshes, and per sample of the distinct heightfields, in `file`.
struct SurfaceBytes {
  size_t mesh_bytes = 0, triangles = 0, field_bytes = 0, samples = 0;
  double PerTriangle() const {
    return triangles ? static_cast<double>(mesh_bytes) / static_cast<double>(triangles) : 0.0;
  }
  double PerSample() const {
    return samples ? static_cast<double>(field_bytes) / static_cast<double>(samples) : 0.0;
  }
};

SurfaceBytes MeasureSurfaces(const cases::CaseFile& file) {
  SurfaceBytes out;
  std::set<const SurfaceData*> seen;
  for (const Collider& c : file.colliders) {
    const SurfaceData* s = c.shape.surface();
    if (s == nullptr || !seen.insert(s).second) continue;
    if (const TriangleMesh* m = s->mesh()) {
      out.mesh_bytes += m->MemoryBytes();
      out.triangles += m->triangle_count();
    } else if (const Heightfield* f = s->heightfield()) {
      out.field_bytes += f->MemoryBytes();
      out.samples += static_cast<size_t>(f->rows()) * f->cols();
    }
  }
  return out;
}

// Applies `changes` in batches of `batch`; returns changes per second.
double ApplyRate(ColliderSet* set, const std::vector<ColliderChange>& changes, size_t batch) {
  const Clock::time_point a = Clock::now();
  for (size_t i = 0; i < changes.size(); i += batch) {
    const size_t n = std::min(batch, changes.size() - i);
    const Status s = set->Apply(std::span<const ColliderChange>(changes.data() + i, n));
    if (!s.ok()) {
      std::fprintf(stderr, "apply failed: %s\n", s.ToString().c_str());
      return 0.0;
    }
  }
  return static_cast<double>(changes.size()) / std::max(1e-9, Seconds(a, Clock::now()));
}

int Main(int argc, char** argv) {
  CLI::App app{"Hitbox benchmark over a conformance case file"};
  std::string path;
  bool json = false;
  size_t threads = 0;
  double min_time = 1.0;
  std::string threads_list;
  bool skip_started_contact = false;
  app.add_option("file", path, "case file (.json or .json.gz)")->required();
  app.add_option("--threads-list", threads_list,
                 "pool sizes for the scaling figures, e.g. 1,2,4,8,16 (sizes above the "
                 "machine's hardware threads are skipped)");
  app.add_flag("--json", json, "print one JSON object");
  app.add_option("--threads", threads, "pool threads for the all-cores figures (0 = all cores)");
  app.add_option("--min-time", min_time, "seconds to repeat each measurement (at least 3 runs)");
  app.add_flag("--skip-started-contact", skip_started_contact,
               "sweeps skip the contact of a hit at their start (depth 0)");
  CLI11_PARSE(app, argc, argv);
  const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  if (threads == 0) threads = hardware;
  std::vector<size_t> scaling_threads;
  if (!threads_list.empty()) {
    scaling_threads = ParseThreadList(threads_list);
    if (scaling_threads.empty()) {
      std::fprintf(stderr, "--threads-list: expected counts in [1, 1024] like 1,2,4, got '%s'\n",
                   threads_list.c_str());
      return 2;
    }
  }

  const Clock::time_point t_load = Clock::now();
  Result<cases::CaseFile> loaded = cases::LoadCaseFile(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
    return 2;
  }
  const cases::CaseFile& file = *loaded;
  const double load_s = Seconds(t_load, Clock::now());

  // Build: best of 3 bulk loads into a fresh set.
  double build_ms = 1e300;
  ColliderSet set;
  for (int rep = 0; rep < 3; ++rep) {
    ColliderSet fresh;
    const Clock::time_point a = Clock::now();
    // With histories: the first tick's bulk load, then one batch per tick.
    const Status s = cases::LoadWorld(file, &fresh);
    const double ms = Seconds(a, Clock::now()) * 1e3;
    if (!s.ok()) {
      std::fprintf(stderr, "load: %s\n", s.ToString().c_str());
      return 2;
    }
    build_ms = std::min(build_ms, ms);
    if (rep == 0) set = std::move(fresh);
  }
  const size_t n = set.size();
  const double bytes_per_collider =
      n ? static_cast<double>(set.MemoryBytes()) / static_cast<double>(n) : 0.0;
  const ColliderSet::TreeStats tree_stats = set.GetTreeStats();
  const SurfaceBytes surfaces = MeasureSurfaces(file);

  // Check every answer, on one thread and on the pool.
  ThreadPool pool(threads);
  std::vector<Query> all = cases::Queries(file);
  for (Query& q : all) {
    if (auto* c = std::get_if<CastQuery>(&q)) c->skip_started_contact = skip_started_contact;
  }
  KindStats kinds[cases::kQueryKindCount];
  std::vector<Query> by_kind[cases::kQueryKindCount];
  {
    std::vector<QueryResult> r1(all.size()), rn(all.size());
    set.RunBatch(all, r1, nullptr);
    set.RunBatch(all, rn, &pool);
    size_t printed = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const cases::CaseQuery& q = file.queries[i];
      KindStats& k = kinds[static_cast<int>(q.kind)];
      by_kind[static_cast<int>(q.kind)].push_back(all[i]);
      ++k.queries;
      cases::Verdict v = cases::CheckAnswer(q, file.expected[i], r1[i]);
      if (v.ok) {
        v = cases::CheckAnswer(q, file.expected[i], rn[i]);
        if (!v.ok) v.reason = "(pool) " + v.reason;
      }
      if (!v.ok) {
        ++k.mismatches;
        if (printed++ < 50) {
          std::fprintf(stderr, "MISMATCH %s query %llu (%s): %s\n", file.name.c_str(),
                       static_cast<unsigned long long>(q.id), cases::QueryKindName(q.kind),
                       v.reason.c_str());
        }
      }
    }
  }
  for (int k = 0; k < cases::kQueryKindCount; ++k) {
    kinds[k].qps_1 = MeasureQps(set, by_kind[k], nullptr, min_time, &kinds[k].qps_1_cpu);
    kinds[k].qps_all = MeasureQps(set, by_kind[k], &pool, min_time);
  }

  // Tree update rates on a copy loaded the same way.
  double insert_rate = 0, move_small_first = 0, move_small = 0, move_large = 0, remove_rate = 0;
  double bytes_incremental = 0;
  {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> small(-0.05, 0.05), large(-20.0, 20.0);
    ColliderSet churn;
    std::vector<ColliderChange> adds;
    adds.reserve(n);
    for (const Collider& c : file.colliders) adds.push_back(ColliderChange::Add(c));
    insert_rate = ApplyRate(&churn, adds, 1000);
    if (churn.size() > 0) {
      bytes_incremental =
          static_cast<double>(churn.MemoryBytes()) / static_cast<double>(churn.size());
    }
    ColliderSet moved;
    (void)moved.AddBulk(file.colliders);
    std::vector<Pose> poses;
    for (const Collider& c : file.colliders) poses.push_back(c.pose);
    auto moves = [&](std::uniform_real_distribution<double>& d) {
      std::vector<ColliderChange> ch;
      ch.reserve(n);
      for (size_t i = 0; i < file.colliders.size(); ++i) {
        poses[i].position += Vec3{d(rng), d(rng), d(rng)};
        ch.push_back(ColliderChange::Move(file.colliders[i].id, poses[i]));
      }
      return ch;
    };
    auto m1 = moves(small);
    move_small_first = ApplyRate(&moved, m1, 1000);  // leaves start tight: most reinsert
    auto m2 = moves(small);
    move_small = ApplyRate(&moved, m2, 1000);  // now inside fat boxes
    auto m3 = moves(large);
    move_large = ApplyRate(&moved, m3, 1000);
    std::vector<ColliderChange> removes;
    for (const Collider& c : file.colliders) removes.push_back(ColliderChange::Remove(c.id));
    remove_rate = ApplyRate(&moved, removes, 1000);
  }

  // Scaling of the whole mixed batch over the pool sizes asked for.
  std::vector<ScalingPoint> scaling;
  std::vector<size_t> skipped;
  for (size_t t : scaling_threads) {
    if (t > hardware) {
      skipped.push_back(t);
      continue;
    }
    scaling.push_back(MeasureScaling(set, all, t, min_time));
  }
  const double base_qps = scaling.empty() ? 0.0 : scaling.front().qps;

  size_t total_mismatches = 0;
  for (const KindStats& k : kinds) total_mismatches += k.mismatches;
  if (json) {
    std::printf(
        "{\"file\": \"%s\", \"colliders\": %zu, \"load_s\": %.3f, \"build_ms\": %.3f, "
        "\"bytes_per_collider\": %.1f, \"mesh_triangles\": %zu, "
        "\"bytes_per_triangle\": %.2f, \"heightfield_samples\": %zu, "
        "\"bytes_per_sample\": %.2f, \"threads\": %zu, \"skip_started_contact\": %s, "
        "\"kinds\": {",
        file.name.c_str(), n, load_s, build_ms, bytes_per_collider, surfaces.triangles,
        surfaces.PerTriangle(), surfaces.samples, surfaces.PerSample(), pool.size(),
        skip_started_contact ? "true" : "false");
    bool first = true;
    for (int k = 0; k < cases::kQueryKindCount; ++k) {
      if (kinds[k].queries == 0) continue;
      std::printf("%s\"%s\": {\"queries\": %zu, \"mismatches\": %zu, \"qps_1\": %.0f, "
                  "\"qps_1_cpu\": %.0f, \"qps_all\": %.0f}",
                  first ? "" : ", ", cases::QueryKindName(static_cast<QueryKind>(k)),
                  kinds[k].queries, kinds[k].mismatches, kinds[k].qps_1, kinds[k].qps_1_cpu,
                  kinds[k].qps_all);
      first = false;
    }
    std::printf("}, \"tree\": {\"height\": %d, \"nodes\": %zu, \"area_ratio\": %.2f, "
                "\"insert_per_s\": %.0f, \"move_small_first_per_s\": %.0f, "
                "\"move_small_per_s\": %.0f, \"move_large_per_s\": %.0f, "
                "\"remove_per_s\": %.0f, \"bytes_per_collider_incremental\": %.1f}",
                tree_stats.height, tree_stats.nodes, tree_stats.area_ratio, insert_rate,
                move_small_first, move_small, move_large, remove_rate, bytes_incremental);
    if (!scaling_threads.empty()) {
      std::printf(", \"hardware_threads\": %zu, \"scaling\": [", hardware);
      for (size_t i = 0; i < scaling.size(); ++i) {
        const ScalingPoint& p = scaling[i];
        std::printf("%s{\"threads\": %zu, \"qps\": %.0f, \"qps_per_cpu\": %.0f, "
                    "\"speedup\": %.3f}",
                    i ? ", " : "", p.threads, p.qps, p.qps_per_cpu,
                    base_qps > 0 ? p.qps / base_qps : 0.0);
      }
      std::printf("], \"scaling_skipped\": [");
      for (size_t i = 0; i < skipped.size(); ++i) std::printf("%s%zu", i ? ", " : "", skipped[i]);
      std::printf("]");
    }
    std::printf("}\n");
  } else {
    std::printf("%s: %zu colliders, %zu queries (load %.2f s)\n", file.name.c_str(), n,
                file.queries.size(), load_s);
    std::printf("build (AddBulk, best of 3): %.2f ms; %.1f bytes/collider; tree height %d, "
                "SAH area ratio %.2f\n",
                build_ms, bytes_per_collider, tree_stats.height, tree_stats.area_ratio);
    if (surfaces.triangles > 0) {
      std::printf("meshes: %zu triangles, %.2f bytes/triangle (mesh + hierarchy)\n",
                  surfaces.triangles, surfaces.PerTriangle());
    }
    if (surfaces.samples > 0) {
      std::printf("heightfields: %zu samples, %.2f bytes/sample (heights + hierarchy)\n",
                  surfaces.samples, surfaces.PerSample());
    }
    std::printf("%-8s %8s %10s %14s %18s %14s\n", "kind", "queries", "mismatch", "qps (1 thread)",
                "qps (1 thread CPU)", "qps (pool)");
    for (int k = 0; k < cases::kQueryKindCount; ++k) {
      if (kinds[k].queries == 0) continue;
      std::printf("%-8s %8zu %10zu %14.0f %18.0f %14.0f\n",
                  cases::QueryKindName(static_cast<QueryKind>(k)), kinds[k].queries,
                  kinds[k].mismatches, kinds[k].qps_1, kinds[k].qps_1_cpu, kinds[k].qps_all);
    }
    std::printf("pool threads: %zu\n", pool.size());
    std::printf("tree updates per second (batches of 1000): insert %.0f, small move (first, "
                "from tight boxes) %.0f, small move %.0f, large move %.0f, remove %.0f\n",
                insert_rate, move_small_first, move_small, move_large, remove_rate);
    std::printf("bytes/collider after %zu single adds (Apply): %.1f\n", n, bytes_incremental);
    if (!scaling_threads.empty()) {
      std::printf("scaling of the mixed batch (%zu queries; %zu hardware threads):\n",
                  all.size(), hardware);
      std::printf("%8s %14s %16s %9s\n", "threads", "qps (wall)", "qps per CPU-s", "speedup");
      for (const ScalingPoint& p : scaling) {
        std::printf("%8zu %14.0f %16.0f %8.2fx\n", p.threads, p.qps, p.qps_per_cpu,
                    base_qps > 0 ? p.qps / base_qps : 0.0);
      }
      for (size_t t : skipped) {
        std::printf("%8zu (skipped: more than the machine's %zu hardware threads)\n", t,
                    hardware);
      }
    }
  }
  return total_mismatches == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hitbox

int main(int argc, char** argv) { return hitbox::Main(argc, argv); }
