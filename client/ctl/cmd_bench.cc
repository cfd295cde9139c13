// `hitboxctl bench`: the load generator of bench/loadgen (hitbox_loadgen)
// against the server at --address: a generated scene is loaded into a
// scratch session, then tick streams and/or unary Query calls are measured,
// optionally next to the in-process ColliderSet baseline. Prints a results
// table (or JSON); the scratch session is deleted afterwards unless --keep.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "ctl.h"
#include "hitbox/loadgen.h"
#include "output.h"

namespace hitbox::ctl {
namespace {

struct BenchArgs {
  std::string mode = "tick";
  std::string session;
  std::string mix = "overlap=1,cast=1,raycast=1";
  bool keep = false;
  bool allow_remote = false;
  double duration_s = 5.0;
  size_t threads = 2;
  size_t load_batch = 4096;
  loadgen::SceneOptions scene;
  loadgen::TickOptions tick;
  loadgen::UnaryOptions unary;
};

bool IsLoopback(const std::string& address) {
  for (const char* p : {"127.", "localhost:", "[::1]:", "ipv4:127.", "ipv6:[::1]", "unix:"}) {
    if (address.rfind(p, 0) == 0) return true;
  }
  return false;
}

nlohmann::json LatencyJson(const loadgen::Latency& l) {
  return {{"count", l.count}, {"mean_us", l.mean_us}, {"p50_us", l.p50_us},
          {"p99_us", l.p99_us}, {"p999_us", l.p999_us}, {"max_us", l.max_us}};
}

std::vector<std::string> LatencyCells(const loadgen::Latency& l) {
  return {FormatFixed(l.mean_us, 1), FormatFixed(l.p50_us, 1), FormatFixed(l.p99_us, 1),
          FormatFixed(l.p999_us, 1), FormatFixed(l.max_us, 1)};
}

int RunBench(const GlobalOptions& global, BenchArgs a) {
  if (a.mode != "inproc" && !IsLoopback(global.address) && !a.allow_remote) {
    return Fail("bench: " + global.address +
                " is not a loopback address; pass --allow-remote to load a remote server");
  }
  auto mix = loadgen::ParseQueryMix(a.mix);
  if (!mix.ok()) return Fail("bench: --mix: " + mix.error().message);
  const auto duration = std::chrono::milliseconds(static_cast<int64_t>(a.duration_s * 1000.0));
  const std::string session =
      a.session.empty() ? "bench-" + std::to_string(getpid()) : a.session;
  a.tick.session_id = a.unary.session_id = session;
  a.tick.mix = a.unary.mix = *mix;
  a.tick.duration = a.unary.duration = duration;
  const bool all = a.mode == "all";

  const std::vector<Collider> scene = loadgen::GenerateScene(a.scene);
  Table table({"MODE", "OPS/S", "QUERIES/S", "MEAN_US", "P50_US", "P99_US", "P99.9_US", "MAX_US",
               "ERRORS"});
  nlohmann::json runs = nlohmann::json::array();
  int code = kExitOk;

  if (a.mode == "inproc" || all) {
    auto r = loadgen::RunInProcess(scene, *mix, a.tick.queries_per_tick, ~0ull, duration, a.threads);
    if (!r.ok()) return Fail("bench: in-process run: " + r.error().message);
    table.AddRow({"inproc batch=" + std::to_string(a.tick.queries_per_tick), "-",
                  FormatFixed(r->queries_per_s, 0), "-", "-", "-", "-", "-", "0"});
    runs.push_back({{"mode", "inproc"}, {"batch", a.tick.queries_per_tick}, {"threads", a.threads},
                    {"queries", r->queries}, {"seconds", r->seconds},
                    {"queries_per_s", r->queries_per_s}});
  }
  if (a.mode != "inproc") {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    auto channel = global.MakeChannel(args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + global.timeout())) {
      return Fail("bench: cannot connect to " + global.address);
    }
    std::string token = global.token;  // the admin token, if given: replaces an old session
    const Status loaded = loadgen::LoadScene(channel, session, scene, a.load_batch, true, &token);
    a.tick.token = a.unary.token = token;
    if (!loaded.ok()) return Fail("bench: loading the scene into " + session + ": " + loaded.ToString());
    if (!global.quiet && !global.json) {
      std::fprintf(stderr, "hitboxctl: loaded %zu colliders into session %s\n", scene.size(),
                   session.c_str());
    }
    if (a.mode == "tick" || all) {
      auto r = loadgen::RunTicks(channel, scene, a.tick);
      if (!r.ok()) {
        code = Fail("bench: tick run: " + r.error().message);
      } else {
        std::vector<std::string> row = {"tick streams=" + std::to_string(a.tick.streams),
                                        FormatFixed(r->ticks_per_s, 0),
                                        FormatFixed(r->queries_per_s, 0)};
        for (auto& c : LatencyCells(r->latency)) row.push_back(c);
        row.push_back(std::to_string(r->errors));
        table.AddRow(row);
        runs.push_back({{"mode", "tick"}, {"streams", a.tick.streams},
                        {"moves_per_tick", a.tick.moves_per_tick},
                        {"queries_per_tick", a.tick.queries_per_tick}, {"ticks", r->ticks},
                        {"queries", r->queries}, {"hits", r->hits}, {"errors", r->errors},
                        {"first_error", r->first_error}, {"seconds", r->seconds},
                        {"ticks_per_s", r->ticks_per_s}, {"queries_per_s", r->queries_per_s},
                        {"latency", LatencyJson(r->latency)}});
        if (r->errors > 0) code = Fail("bench: " + std::to_string(r->errors) + " tick errors, first: " + r->first_error);
      }
    }
    if (a.mode == "unary" || all) {
      auto r = loadgen::RunUnary(channel, scene, a.unary);
      if (!r.ok()) {
        code = Fail("bench: unary run: " + r.error().message);
      } else {
        std::vector<std::string> row = {"unary queries/call=" + std::to_string(a.unary.queries_per_call),
                                        FormatFixed(r->calls_per_s, 0),
                                        FormatFixed(r->queries_per_s, 0)};
        for (auto& c : LatencyCells(r->latency)) row.push_back(c);
        row.push_back(std::to_string(r->errors));
        table.AddRow(row);
        runs.push_back({{"mode", "unary"}, {"queries_per_call", a.unary.queries_per_call},
                        {"calls", r->calls}, {"errors", r->errors}, {"first_error", r->first_error},
                        {"seconds", r->seconds}, {"calls_per_s", r->calls_per_s},
                        {"queries_per_s", r->queries_per_s}, {"latency", LatencyJson(r->latency)}});
        if (r->errors > 0) code = Fail("bench: " + std::to_string(r->errors) + " unary errors, first: " + r->first_error);
      }
    }
    if (!a.keep) {
      auto client = global.MakeClient();
      client->SetSessionToken(session, token);
      const RpcStatus s = client->DeleteSession(session);
      if (!s.ok()) Fail(s, "bench: deleting session " + session);
    }
  }
  if (global.json) {
    PrintJson({{"address", global.address}, {"session_id", session},
               {"colliders", scene.size()}, {"runs", runs}});
  } else {
    std::printf("scene: %zu colliders, half-size %g m, seed %llu; mix %s\n", scene.size(),
                a.scene.half_size, static_cast<unsigned long long>(a.scene.seed), a.mix.c_str());
    std::fputs(table.Render().c_str(), stdout);
  }
  return code;
}

}  // namespace

void AddBenchCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "load-test the server (tick streams, unary queries)");
  cmd->add_option("--mode", a->mode, "tick | unary | inproc | all")
      ->check(CLI::IsMember({"tick", "unary", "inproc", "all"}))
      ->capture_default_str();
  cmd->add_option("--session", a->session, "scratch session id (default bench-<pid>)");
  cmd->add_flag("--keep", a->keep, "keep the scratch session afterwards");
  cmd->add_flag("--allow-remote", a->allow_remote, "allow a non-loopback --address");
  cmd->add_option("--mix", a->mix, "query mix weights, e.g. overlap=1,cast=1,raycast=1")
      ->capture_default_str();
  cmd->add_option("--duration", a->duration_s, "time cap per measurement, seconds")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  cmd->add_option("--threads", a->threads, "in-process baseline worker threads")
      ->capture_default_str();
  cmd->add_option("--load-batch", a->load_batch, "colliders per ApplyChanges while loading")
      ->capture_default_str();
  a->scene.colliders = 20000;
  cmd->add_option("--colliders", a->scene.colliders, "colliders in the generated scene")
      ->capture_default_str();
  cmd->add_option("--half-size", a->scene.half_size, "half-size of the world cube, metres")
      ->capture_default_str();
  cmd->add_option("--seed", a->scene.seed, "scene seed")->capture_default_str();
  cmd->add_option("--streams", a->tick.streams, "concurrent tick streams")->capture_default_str();
  cmd->add_option("--ticks", a->tick.ticks, "ticks per stream (also bounded by --duration)")
      ->capture_default_str();
  cmd->add_option("--moves", a->tick.moves_per_tick, "moves per tick")->capture_default_str();
  cmd->add_option("--queries", a->tick.queries_per_tick, "queries per tick / in-process batch")
      ->capture_default_str();
  cmd->add_option("--calls", a->unary.calls, "unary calls (also bounded by --duration)")
      ->capture_default_str();
  cmd->add_option("--queries-per-call", a->unary.queries_per_call, "queries per unary call")
      ->capture_default_str();
  cmd->callback([&global, &action, a] {
    action = [&global, a] { return RunBench(global, *a); };
  });
}

}  // namespace hitbox::ctl
