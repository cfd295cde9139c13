// hitboxd: the Hitbox collision-query service. Parses flags (each also read
// from a HITBOX_* environment variable) and calls RunServer.
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>
#include <absl/synchronization/mutex.h>
#include <spdlog/spdlog.h>

#include "resources.h"
#include "server.h"

int main(int argc, char** argv) {
  using hitbox::server::ServerOptions;
  ServerOptions o;
  hitbox::server::ServerLimits& l = o.service.limits;
  std::string log_level = "info";
  int64_t grace_ms = o.shutdown_grace.count();
  double idle_timeout_s = static_cast<double>(l.session.idle_timeout_ms) / 1000.0;
  std::string max_memory = "0";

  CLI::App app{
      "hitboxd: authoritative collision queries (overlap, shape casts, raycasts) as a gRPC "
      "service (hitbox.v1.Hitbox), with gRPC health checking and server reflection.\n"
      "Every flag can also be set by the environment variable shown. SIGINT/SIGTERM stop "
      "it gracefully."};
  app.add_option("--listen", o.listen, "listen address host:port (port 0: pick a free one)")
      ->envname("HITBOX_LISTEN")
      ->capture_default_str();
  app.add_option("--port-file", o.port_file,
                 "write the bound port to this file once listening (for --listen ...:0)")
      ->envname("HITBOX_PORT_FILE");
  app.add_option("--max-sessions", l.max_sessions, "most sessions at once")
      ->envname("HITBOX_MAX_SESSIONS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-colliders", l.session.max_colliders,
                 "most colliders per session (sessions may ask for less)")
      ->envname("HITBOX_MAX_COLLIDERS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-changes", l.session.max_changes_per_message,
                 "most collider changes per ApplyChanges request or tick")
      ->envname("HITBOX_MAX_CHANGES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-queries", l.session.max_queries_per_message,
                 "most queries per Query request or tick")
      ->envname("HITBOX_MAX_QUERIES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-hits", l.session.max_hits_per_query, "most hits reported per query")
      ->envname("HITBOX_MAX_HITS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-message-bytes", l.max_message_bytes,
                 "largest request message accepted, bytes (gRPC max receive message size); "
                 "also bounds the hits of one answer (about 64 bytes each)")
      ->envname("HITBOX_MAX_MESSAGE_BYTES")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{2147483647}))
      ->capture_default_str();
  app.add_option("--max-page-size", l.max_page_size, "largest ListColliders page, colliders")
      ->envname("HITBOX_MAX_PAGE_SIZE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--session-idle-timeout", idle_timeout_s,
                 "seconds without any call or tick on a session after which it is deleted "
                 "(fractions allowed; 0: never); the default and maximum of each session's "
                 "limits.idle_timeout_ms")
      ->envname("HITBOX_SESSION_IDLE_TIMEOUT")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  app.add_option("--max-memory", max_memory,
                 "cap on the bytes all sessions hold together (each session's memory_bytes); "
                 "batches and new sessions that would pass it are refused with "
                 "RESOURCE_EXHAUSTED, queries, moves and removes still work. Suffixes K, M, G, T "
                 "(powers of 1024), e.g. 512M or 8G; 0: no cap")
      ->envname("HITBOX_MAX_MEMORY")
      ->check([](const std::string& text) {
        const auto parsed = hitbox::server::ParseByteSize(text);
        return parsed.ok() ? std::string() : parsed.error().message;
      })
      ->capture_default_str();
  app.add_option("--threads", o.service.threads,
                 "query worker threads for large batches (0: one per CPU the process may use: "
                 "its affinity mask and cgroup CPU quota)")
      ->envname("HITBOX_THREADS")
      ->capture_default_str();
  app.add_option("--shutdown-grace-ms", grace_ms,
                 "on SIGINT/SIGTERM, how long in-flight calls may finish, milliseconds")
      ->envname("HITBOX_SHUTDOWN_GRACE_MS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->envname("HITBOX_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_flag("--demo", o.demo,
               "create session \"demo\" with a small mixed world at start and log how to query it")
      ->envname("HITBOX_DEMO");
  CLI11_PARSE(app, argc, argv);

  spdlog::set_level(spdlog::level::from_str(log_level));
  // Debian's Abseil is built without NDEBUG, so every absl::Mutex lock inside
  // gRPC feeds a process-wide deadlock-detection graph (a global lock, stack
  // traces); release builds of gRPC run without it. Turn it off here.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  o.shutdown_grace = std::chrono::milliseconds(grace_ms);
  // Sub-millisecond timeouts round up to 1 ms rather than to "never".
  l.session.idle_timeout_ms =
      idle_timeout_s == 0 ? 0 : std::max<uint64_t>(1, std::llround(idle_timeout_s * 1000.0));
  l.max_memory_bytes = *hitbox::server::ParseByteSize(max_memory);
  return hitbox::server::RunServer(o);
}
