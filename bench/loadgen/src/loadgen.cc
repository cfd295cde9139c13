#include "hitbox/loadgen.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <sys/resource.h>

#include <grpcpp/client_context.h>

#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// User + system CPU seconds of this process so far.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

Quat RandomRotation(std::mt19937_64& rng) {
  // Uniform random rotation (Shoemake, "Uniform random rotations", Graphics Gems III).
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double u1 = u(rng), u2 = u(rng) * 2 * M_PI, u3 = u(rng) * 2 * M_PI;
  const double a = std::sqrt(1 - u1), b = std::sqrt(u1);
  return Quat(a * std::sin(u2), a * std::cos(u2), b * std::sin(u3), b * std::cos(u3)).Normalized();
}

Shape RandomShape(std::mt19937_64& rng, double min_size, double max_size) {
  std::uniform_real_distribution<double> s(min_size, max_size);
  switch (rng() % 4) {
    case 0: return *Shape::MakeSphere(s(rng));
    case 1: return *Shape::MakeBox({s(rng), s(rng), s(rng)});
    case 2: return *Shape::MakeCapsule(s(rng), s(rng));
    default: return *Shape::MakeCylinder(s(rng), s(rng));
  }
}

Vec3 RandomIn(std::mt19937_64& rng, const Aabb& b) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return {b.min.x + u(rng) * (b.max.x - b.min.x), b.min.y + u(rng) * (b.max.y - b.min.y),
          b.min.z + u(rng) * (b.max.z - b.min.z)};
}

Vec3 RandomDirection(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  for (int i = 0; i < 16; ++i) {
    const Vec3 v{n(rng), n(rng), n(rng)};
    if (v.LengthSq() > 1e-12) return v.Normalized();
  }
  return {1, 0, 0};
}

}  // namespace

Aabb SceneBounds(const std::vector<Collider>& scene) {
  Aabb b;
  for (const Collider& c : scene) {
    const Aabb w = c.shape.WorldBounds(c.pose);
    b = Aabb(Min(b.min, w.min), Max(b.max, w.max));
  }
  if (b.IsEmpty()) b = Aabb({-10, -10, -10}, {10, 10, 10});
  return b;
}

namespace {

std::string StatusText(const grpc::Status& s) {
  return std::string(wire::GrpcCodeName(s.error_code())) + ": " + s.error_message();
}

}  // namespace

Result<QueryMix> ParseQueryMix(const std::string& text) {
  QueryMix mix;
  mix.overlap = mix.cast = mix.raycast = 0;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return Error{ErrorCode::kInvalidArgument, "mix entry '" + item + "' is not name=weight"};
    }
    const std::string name = item.substr(0, eq);
    char* end = nullptr;
    const double w = std::strtod(item.c_str() + eq + 1, &end);
    if (end == item.c_str() + eq + 1 || *end != '\0' || !std::isfinite(w) || w < 0) {
      return Error{ErrorCode::kInvalidArgument, "mix weight of '" + name + "' must be >= 0"};
    }
    if (name == "overlap") {
      mix.overlap = w;
    } else if (name == "cast" || name == "sweep") {
      mix.cast = w;
    } else if (name == "raycast" || name == "ray") {
      mix.raycast = w;
    } else {
      return Error{ErrorCode::kInvalidArgument,
                   "unknown query kind '" + name + "' (overlap, cast, raycast)"};
    }
  }
  return mix;
}

std::vector<Collider> GenerateScene(const SceneOptions& o) {
  std::mt19937_64 rng(o.seed);
  const Aabb cube({-o.half_size, -o.half_size, -o.half_size}, {o.half_size, o.half_size, o.half_size});
  const uint32_t layers = std::clamp<uint32_t>(o.layers, 1, 32);
  std::vector<Collider> out;
  out.reserve(o.colliders);
  for (size_t i = 0; i < o.colliders; ++i) {
    Collider c;
    c.id = i + 1;
    c.shape = RandomShape(rng, o.min_size, o.max_size);
    c.pose = Pose(RandomIn(rng, cube), RandomRotation(rng));
    c.layer = static_cast<uint32_t>(rng() % layers);
    c.user_data = c.id * 10;
    out.push_back(c);
  }
  return out;
}

std::vector<Query> GenerateQueries(const Aabb& bounds, const QueryMix& mix, size_t count,
                                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double total = mix.overlap + mix.cast + mix.raycast;
  const double small = std::min(0.05, mix.max_query_size);
  std::vector<Query> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const double pick = total > 0 ? u(rng) * total : 0;
    const Pose pose(RandomIn(rng, bounds), RandomRotation(rng));
    if (total <= 0 || pick < mix.overlap) {
      OverlapQuery q;
      q.shape = RandomShape(rng, small, mix.max_query_size);
      q.pose = pose;
      out.emplace_back(std::move(q));
    } else if (pick < mix.overlap + mix.cast) {
      CastQuery q;
      q.shape = RandomShape(rng, small, mix.max_query_size);
      q.pose = pose;
      q.translation = RandomDirection(rng) * (u(rng) * mix.cast_length);
      out.emplace_back(std::move(q));
    } else {
      RayQuery q;
      q.origin = pose.position;
      q.translation = RandomDirection(rng) * (u(rng) * mix.ray_length);
      out.emplace_back(std::move(q));
    }
  }
  return out;
}

Latency Summarize(std::vector<double>* samples) {
  Latency l;
  if (samples->empty()) return l;
  std::sort(samples->begin(), samples->end());
  const size_t n = samples->size();
  auto at = [&](double p) {
    const size_t i = std::min(n - 1, static_cast<size_t>(std::ceil(p * static_cast<double>(n))) -
                                         (p > 0 ? 1 : 0));
    return (*samples)[i];
  };
  double sum = 0;
  for (double s : *samples) sum += s;
  l.count = n;
  l.mean_us = sum / static_cast<double>(n);
  l.p50_us = at(0.50);
  l.p99_us = at(0.99);
  l.p999_us = at(0.999);
  l.max_us = samples->back();
  return l;
}

Status LoadScene(const std::shared_ptr<grpc::Channel>& channel, const std::string& session_id,
                 const std::vector<Collider>& colliders, size_t batch, bool replace,
                 std::string* token) {
  auto stub = v1::Hitbox::NewStub(channel);
  std::string auth = token != nullptr ? *token : std::string();
  auto authorize = [&](grpc::ClientContext* ctx) {
    if (!auth.empty()) ctx->AddMetadata("authorization", "Bearer " + auth);
  };
  bool exists = false;
  {
    grpc::ClientContext ctx;
    authorize(&ctx);
    v1::GetSessionRequest req;
    v1::SessionInfo info;
    req.set_session_id(session_id);
    exists = stub->GetSession(&ctx, req, &info).ok();
  }
  if (replace && exists) {
    grpc::ClientContext ctx;
    authorize(&ctx);
    v1::DeleteSessionRequest req;
    v1::DeleteSessionResponse resp;
    req.set_session_id(session_id);
    const grpc::Status s = stub->DeleteSession(&ctx, req, &resp);
    if (!s.ok() && s.error_code() != grpc::StatusCode::NOT_FOUND) return wire::FromGrpcStatus(s);
  }
  {
    grpc::ClientContext ctx;
    authorize(&ctx);
    v1::CreateSessionRequest req;
    v1::SessionInfo info;
    req.set_session_id(session_id);
    const grpc::Status s = stub->CreateSession(&ctx, req, &info);
    if (!s.ok()) return wire::FromGrpcStatus(s);
    if (!info.token().empty()) auth = info.token();
    if (token != nullptr) *token = auth;
  }
  batch = std::max<size_t>(batch, 1);
  for (size_t start = 0; start < colliders.size(); start += batch) {
    v1::ApplyChangesRequest req;
    req.set_session_id(session_id);
    const size_t end = std::min(colliders.size(), start + batch);
    for (size_t i = start; i < end; ++i) wire::ToProto(colliders[i], req.add_changes()->mutable_add());
    grpc::ClientContext ctx;
    authorize(&ctx);
    v1::ApplyChangesResponse resp;
    const grpc::Status s = stub->ApplyChanges(&ctx, req, &resp);
    if (!s.ok()) return wire::FromGrpcStatus(s);
  }
  return Status::Ok();
}

Result<TickReport> RunTicks(const std::shared_ptr<grpc::Channel>& channel,
                            const std::vector<Collider>& scene, const TickOptions& o) {
  const size_t k = std::max<size_t>(o.streams, 1);
  const Aabb bounds = SceneBounds(scene);
  // A shared pool of pre-converted queries; each tick takes the next slice.
  const size_t pool_size = std::max<size_t>(4096, o.queries_per_tick * 4);
  const std::vector<Query> queries =
      o.queries.empty() ? GenerateQueries(bounds, o.mix, pool_size, o.seed) : o.queries;
  std::vector<v1::Query> proto_queries(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    wire::ToProto(queries[i], &proto_queries[i]);
    proto_queries[i].set_tag(i);
  }

  std::mutex mu;
  TickReport total;
  std::vector<double> samples;
  std::atomic<size_t> opened{0};
  const Clock::time_point deadline = Clock::now() + o.duration;
  Clock::time_point first_start = Clock::time_point::max(), last_end{};

  auto worker = [&](size_t s) {
    auto stub = v1::Hitbox::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + o.duration + std::chrono::seconds(30));
    if (!o.token.empty()) ctx.AddMetadata("authorization", "Bearer " + o.token);
    auto stream = stub->Tick(&ctx);
    std::mt19937_64 rng(o.seed * 1000003 + s);
    std::uniform_real_distribution<double> jitter(-0.5, 0.5);
    std::vector<size_t> mine;  // indices into scene moved by this stream
    for (size_t i = s; i < scene.size(); i += k) mine.push_back(i);
    std::vector<double> local;
    local.reserve(static_cast<size_t>(std::min<uint64_t>(o.ticks, 1000000)));
    uint64_t ticks = 0, nq = 0, hits = 0, errors = 0;
    std::string first_error;
    // Requests are built once per slice of the query pool and reused (only
    // the tick number and the moves change), so the client spends little CPU.
    const size_t per_tick = o.queries_per_tick;
    const size_t slices =
        per_tick == 0 ? 1 : std::max<size_t>(1, std::min<size_t>(64, proto_queries.size() / per_tick));
    std::vector<v1::TickRequest> templates(slices);
    size_t qpos = (s * 7919) % proto_queries.size();
    for (v1::TickRequest& tr : templates) {
      tr.mutable_queries()->Reserve(static_cast<int>(per_tick));
      for (size_t q = 0; q < per_tick; ++q) {
        *tr.add_queries() = proto_queries[qpos];
        qpos = (qpos + 1) % proto_queries.size();
      }
    }
    size_t mpos = 0;
    v1::TickResponse resp;
    Clock::time_point start{}, end{};
    bool stream_ok = true;
    for (uint64_t t = 0; t < o.warmup_ticks + o.ticks; ++t) {
      if (Clock::now() >= deadline) break;
      if (t == o.warmup_ticks) start = Clock::now();
      v1::TickRequest& req = templates[t % templates.size()];
      if (t == 0) {
        req.set_session_id(o.session_id);
      } else {
        req.clear_session_id();
      }
      // The streams of a run share one session concurrently, so their ticks
      // carry no game tick (0 for all: the history only ever holds one tick).
      req.set_tick(0);
      req.clear_changes();
      for (size_t m = 0; m < o.moves_per_tick && !mine.empty(); ++m) {
        const Collider& c = scene[mine[mpos++ % mine.size()]];
        v1::MoveCollider* mv = req.add_changes()->mutable_move();
        mv->set_id(c.id);
        const Pose p(c.pose.position + Vec3(jitter(rng), jitter(rng), jitter(rng)), c.pose.rotation);
        wire::ToProto(p, mv->mutable_pose());
      }
      const Clock::time_point t0 = Clock::now();
      if (!stream->Write(req) || !stream->Read(&resp)) {
        stream_ok = false;
        break;
      }
      const Clock::time_point t1 = Clock::now();
      if (resp.has_error()) {
        if (errors++ == 0) first_error = resp.error().message();
        continue;
      }
      if (t >= o.warmup_ticks) {
        local.push_back(Micros(t1 - t0));
        ++ticks;
        nq += static_cast<uint64_t>(resp.results_size());
        for (const v1::QueryResult& r : resp.results()) hits += r.overlaps_size() + r.hits_size();
      }
    }
    end = Clock::now();
    stream->WritesDone();
    const grpc::Status st = stream->Finish();
    if (stream_ok || st.ok()) opened.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    if (!stream_ok || !st.ok()) {
      ++errors;
      if (first_error.empty()) first_error = "stream " + std::to_string(s) + ": " + StatusText(st);
    }
    total.ticks += ticks;
    total.queries += nq;
    total.hits += hits;
    total.errors += errors;
    if (total.first_error.empty()) total.first_error = first_error;
    samples.insert(samples.end(), local.begin(), local.end());
    if (ticks > 0) {
      first_start = std::min(first_start, start);
      last_end = std::max(last_end, end);
    }
  };
  const double cpu0 = ProcessCpuSeconds();
  std::vector<std::thread> threads;
  for (size_t s = 0; s < k; ++s) threads.emplace_back(worker, s);
  for (std::thread& t : threads) t.join();
  total.client_cpu_seconds = ProcessCpuSeconds() - cpu0;
  if (opened.load() == 0) {
    return Error{ErrorCode::kInternal, "no tick stream worked: " + total.first_error};
  }
  total.seconds = total.ticks > 0 ? Seconds(last_end - first_start) : 0;
  if (total.seconds > 0) {
    total.ticks_per_s = static_cast<double>(total.ticks) / total.seconds;
    total.queries_per_s = static_cast<double>(total.queries) / total.seconds;
  }
  total.latency = Summarize(&samples);
  return total;
}

Result<UnaryReport> RunUnary(const std::shared_ptr<grpc::Channel>& channel,
                             const std::vector<Collider>& scene, const UnaryOptions& o) {
  auto stub = v1::Hitbox::NewStub(channel);
  const Aabb bounds = SceneBounds(scene);
  const size_t per_call = std::max<size_t>(o.queries_per_call, 1);
  const std::vector<Query> queries =
      o.queries.size() >= per_call
          ? o.queries
          : GenerateQueries(bounds, o.mix, std::max<size_t>(4096, per_call * 4), o.seed);
  std::vector<v1::QueryRequest> requests;
  for (size_t start = 0; start + per_call <= queries.size() && requests.size() < 4096; start += per_call) {
    v1::QueryRequest req;
    req.set_session_id(o.session_id);
    for (size_t i = start; i < start + per_call; ++i) wire::ToProto(queries[i], req.add_queries());
    requests.push_back(std::move(req));
  }
  UnaryReport r;
  std::vector<double> samples;
  const Clock::time_point deadline = Clock::now() + o.duration;
  Clock::time_point start{};
  v1::QueryResponse resp;
  for (uint64_t i = 0; i < o.warmup_calls + o.calls; ++i) {
    if (Clock::now() >= deadline) break;
    if (i == o.warmup_calls) start = Clock::now();
    grpc::ClientContext ctx;
    if (!o.token.empty()) ctx.AddMetadata("authorization", "Bearer " + o.token);
    const Clock::time_point t0 = Clock::now();
    const grpc::Status s = stub->Query(&ctx, requests[i % requests.size()], &resp);
    const Clock::time_point t1 = Clock::now();
    if (!s.ok()) {
      if (r.errors++ == 0) r.first_error = StatusText(s);
      if (r.errors > 100) break;
      continue;
    }
    if (i >= o.warmup_calls) {
      samples.push_back(Micros(t1 - t0));
      ++r.calls;
    }
  }
  if (r.calls == 0 && r.errors > 0) return Error{ErrorCode::kInternal, r.first_error};
  r.seconds = r.calls > 0 ? Seconds(Clock::now() - start) : 0;
  if (r.seconds > 0) {
    r.calls_per_s = static_cast<double>(r.calls) / r.seconds;
    r.queries_per_s = r.calls_per_s * static_cast<double>(per_call);
  }
  r.latency = Summarize(&samples);
  return r;
}

std::string ToString(const Latency& l) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "p50=%.1fus p99=%.1fus p999=%.1fus max=%.1fus mean=%.1fus (n=%llu)",
                l.p50_us, l.p99_us, l.p999_us, l.max_us, l.mean_us,
                static_cast<unsigned long long>(l.count));
  return buf;
}

std::string ToString(const TickReport& r) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "ticks=%llu queries=%llu hits=%llu errors=%llu in %.3fs: %.0f ticks/s, %.0f queries/s; tick latency ",
                static_cast<unsigned long long>(r.ticks), static_cast<unsigned long long>(r.queries),
                static_cast<unsigned long long>(r.hits), static_cast<unsigned long long>(r.errors),
                r.seconds, r.ticks_per_s, r.queries_per_s);
  std::string s = buf + ToString(r.latency);
  std::snprintf(buf, sizeof(buf), "; client cpu %.2fs", r.client_cpu_seconds);
  s += buf;
  if (!r.first_error.empty()) s += "; first error: " + r.first_error;
  return s;
}

std::string ToString(const UnaryReport& r) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "calls=%llu errors=%llu in %.3fs: %.0f calls/s, %.0f queries/s; round trip ",
                static_cast<unsigned long long>(r.calls), static_cast<unsigned long long>(r.errors),
                r.seconds, r.calls_per_s, r.queries_per_s);
  std::string s = buf + ToString(r.latency);
  if (!r.first_error.empty()) s += "; first error: " + r.first_error;
  return s;
}

std::string ToString(const InProcessReport& r) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "in-process: queries=%llu in %.3fs: %.0f queries/s",
                static_cast<unsigned long long>(r.queries), r.seconds, r.queries_per_s);
  return buf;
}

}  // namespace hitbox::loadgen
