// hitbox-loadgen: load generator for a running hitboxd on this machine.
//
//   hitbox-loadgen --target 127.0.0.1:50051 --mode tick --streams 4 --queries 256
//   hitbox-loadgen --target 127.0.0.1:50051 --mode unary --calls 20000
//   hitbox-loadgen --mode inproc --queries 256          (no server needed)
//   hitbox-loadgen --case ../shared/cases/big.json --mode all --queries 256
//
// Creates session --session with a generated scene (unless --no-load), runs the
// chosen mode and prints one report line per measurement.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "hitbox/loadgen.h"

namespace {

bool IsLoopback(const std::string& target) {
  for (const char* p : {"127.", "localhost:", "[::1]:", "ipv4:127.", "ipv6:[::1]", "unix:"}) {
    if (target.rfind(p, 0) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hitbox;
  CLI::App app{"hitbox-loadgen: drives a local hitboxd with tick streams or unary queries"};
  std::string target = "127.0.0.1:50051";
  std::string mode = "tick";
  std::string session = "loadgen";
  std::string mix_text = "overlap=1,cast=1,raycast=1";
  bool no_load = false;
  double duration_s = 10;
  loadgen::SceneOptions scene_opts;
  loadgen::TickOptions tick;
  loadgen::UnaryOptions unary;
  size_t threads = 2;
  size_t load_batch = 4096;
  app.add_option("--target", target, "hitboxd address (loopback only)")->capture_default_str();
  app.add_option("--mode", mode, "tick | unary | inproc | all")
      ->check(CLI::IsMember({"tick", "unary", "inproc", "all"}))
      ->capture_default_str();
  app.add_option("--session", session, "session id to create and use")->capture_default_str();
  app.add_option("--token", tick.token,
                 "token sent on every call: the session's (with --no-load) or the admin token")
      ->envname("HITBOX_TOKEN");
  app.add_flag("--no-load", no_load, "use the existing session as is (scene still generated for query bounds)");
  std::string case_file;
  app.add_option("--case", case_file,
                 "take the scene and the queries from this conformance case file instead of "
                 "generating them (e.g. ../shared/cases/big.json)");
  app.add_option("--colliders", scene_opts.colliders, "colliders in the generated scene")
      ->capture_default_str();
  app.add_option("--half-size", scene_opts.half_size, "half-size of the world cube, metres")
      ->capture_default_str();
  app.add_option("--seed", scene_opts.seed, "scene seed")->capture_default_str();
  app.add_option("--streams", tick.streams, "concurrent tick streams")->capture_default_str();
  app.add_option("--ticks", tick.ticks, "ticks per stream (bounded also by --duration)")
      ->capture_default_str();
  app.add_option("--moves", tick.moves_per_tick, "moves per tick")->capture_default_str();
  app.add_option("--queries", tick.queries_per_tick, "queries per tick / in-process batch")
      ->capture_default_str();
  app.add_option("--calls", unary.calls, "unary calls (bounded also by --duration)")
      ->capture_default_str();
  app.add_option("--queries-per-call", unary.queries_per_call, "queries per unary call")
      ->capture_default_str();
  app.add_option("--mix", mix_text, "query mix weights, e.g. overlap=1,cast=1,raycast=1")
      ->capture_default_str();
  app.add_option("--duration", duration_s, "time cap per measurement, seconds (<= 600)")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  app.add_option("--threads", threads, "in-process baseline worker threads")->capture_default_str();
  app.add_option("--load-batch", load_batch, "colliders per ApplyChanges while loading")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (mode != "inproc" && !IsLoopback(target)) {
    std::fprintf(stderr, "hitbox-loadgen: --target must be a loopback address, got %s\n",
                 target.c_str());
    return 2;
  }
  Result<loadgen::QueryMix> mix = loadgen::ParseQueryMix(mix_text);
  if (!mix.ok()) {
    std::fprintf(stderr, "hitbox-loadgen: --mix: %s\n", mix.error().message.c_str());
    return 2;
  }
  const auto duration = std::chrono::milliseconds(static_cast<int64_t>(duration_s * 1000));
  tick.session_id = unary.session_id = session;
  unary.token = tick.token;
  tick.mix = unary.mix = *mix;
  tick.duration = unary.duration = duration;

  std::vector<Collider> scene;
  if (!case_file.empty()) {
    Result<loadgen::CaseScene> loaded = loadgen::LoadCaseScene(case_file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "hitbox-loadgen: --case: %s\n", loaded.error().message.c_str());
      return 2;
    }
    scene = std::move(loaded->colliders);
    tick.queries = loaded->queries;
    unary.queries = std::move(loaded->queries);
    std::printf("scene: %zu colliders and %zu queries from %s\n", scene.size(),
                unary.queries.size(), case_file.c_str());
  } else {
    scene = loadgen::GenerateScene(scene_opts);
    std::printf("scene: %zu colliders in a cube of half-size %g m (seed %llu)\n", scene.size(),
                scene_opts.half_size, static_cast<unsigned long long>(scene_opts.seed));
  }

  if (mode == "inproc" || mode == "all") {
    Result<loadgen::InProcessReport> r =
        tick.queries.empty()
            ? loadgen::RunInProcess(scene, *mix, tick.queries_per_tick, ~0ull, duration, threads)
            : loadgen::RunInProcess(scene, tick.queries, tick.queries_per_tick, ~0ull, duration,
                                    threads);
    if (!r.ok()) {
      std::fprintf(stderr, "in-process run failed: %s\n", r.error().message.c_str());
      return 1;
    }
    std::printf("inproc batch=%zu threads=%zu: %s\n", tick.queries_per_tick, threads,
                loadgen::ToString(*r).c_str());
    if (mode == "inproc") return 0;
  }

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel =
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5))) {
    std::fprintf(stderr, "hitbox-loadgen: cannot connect to %s\n", target.c_str());
    return 1;
  }
  if (!no_load) {
    std::string token = tick.token;  // --token (e.g. the admin token), if any
    const Status s = loadgen::LoadScene(channel, session, scene, load_batch, true, &token);
    if (!s.ok()) {
      std::fprintf(stderr, "loading the scene failed: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("loaded session '%s'\n", session.c_str());
    tick.token = unary.token = token;
  }
  if (mode == "tick" || mode == "all") {
    Result<loadgen::TickReport> r = loadgen::RunTicks(channel, scene, tick);
    if (!r.ok()) {
      std::fprintf(stderr, "tick run failed: %s\n", r.error().message.c_str());
      return 1;
    }
    std::printf("tick streams=%zu moves=%zu queries=%zu: %s\n", tick.streams,
                tick.moves_per_tick, tick.queries_per_tick, loadgen::ToString(*r).c_str());
  }
  if (mode == "unary" || mode == "all") {
    Result<loadgen::UnaryReport> r = loadgen::RunUnary(channel, scene, unary);
    if (!r.ok()) {
      std::fprintf(stderr, "unary run failed: %s\n", r.error().message.c_str());
      return 1;
    }
    std::printf("unary queries/call=%zu: %s\n", unary.queries_per_call,
                loadgen::ToString(*r).c_str());
  }
  return 0;
}
