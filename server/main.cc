// hitboxd: the Hitbox collision-query service. Parses flags (each also read
// from a HITBOX_* environment variable) and calls RunServer.
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>
#include <absl/synchronization/mutex.h>
#include <spdlog/spdlog.h>

#include "memory_budget.h"
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
  CLI::Option* http_opt =
      app.add_option("--http-listen", o.http_listen,
                     "serve HTTP on this host:port: Prometheus metrics (GET /metrics, "
                     "docs/metrics.md, unauthenticated) and the inspector at / "
                     "(docs/inspector.md, the rpcs' access rules); unset: no HTTP endpoint. "
                     "Bind it to a private address")
          ->envname("HITBOX_HTTP_LISTEN");
  app.add_option("--metrics-listen", o.http_listen, "the same as --http-listen (older name)")
      ->envname("HITBOX_METRICS_LISTEN")
      ->excludes(http_opt);
  app.add_option("--record-queries", o.service.record_query_ticks,
                 "keep each session's last N ticks (or Query calls) of queries with their hits "
                 "for the inspector (at most 256 queries and 16 hits each per tick); 0: only "
                 "while an inspector reads the session (then its last 64)")
      ->envname("HITBOX_RECORD_QUERIES")
      ->check(CLI::Range(0u, 4096u))
      ->capture_default_str();
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
  app.add_option("--max-nodes-per-message", l.session.max_nodes_per_message,
                 "work budget of one Query request or tick: tree nodes visited by all its "
                 "queries (sessions may ask for less)")
      ->envname("HITBOX_MAX_NODES_PER_MESSAGE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-pair-tests-per-message", l.session.max_pair_tests_per_message,
                 "work budget of one Query request or tick: narrow-phase pair tests of all its "
                 "queries (sessions may ask for less)")
      ->envname("HITBOX_MAX_PAIR_TESTS_PER_MESSAGE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-mesh-triangles", l.session.max_mesh_triangles,
                 "largest triangle mesh of one collider, input triangles (sessions may ask for "
                 "less; at most 1048576)")
      ->envname("HITBOX_MAX_MESH_TRIANGLES")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--max-heightfield-samples", l.session.max_heightfield_samples,
                 "largest heightfield of one collider, rows x cols (at most 4194304)")
      ->envname("HITBOX_MAX_HEIGHTFIELD_SAMPLES")
      ->check(CLI::Range(4u, 1u << 22))
      ->capture_default_str();
  app.add_option("--max-hull-points", l.session.max_hull_points,
                 "most input points of one convex hull (at most 256)")
      ->envname("HITBOX_MAX_HULL_POINTS")
      ->check(CLI::Range(4u, 256u))
      ->capture_default_str();
  app.add_option("--max-build-work-per-message", l.session.max_build_work_per_message,
                 "work budget of one ApplyChanges request or tick: build work of its shapes "
                 "(mesh triangles + hull points + compound children + heightfield samples / "
                 "16), checked before anything is built (sessions may ask for less)")
      ->envname("HITBOX_MAX_BUILD_WORK_PER_MESSAGE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-watches", l.session.max_watches,
                 "most watches (standing overlap queries) one session may hold (sessions may "
                 "ask for less)")
      ->envname("HITBOX_MAX_WATCHES")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--max-watch-events", l.session.max_watch_events_per_batch,
                 "most watch events one batch reports; more set events_truncated (sessions "
                 "may ask for less)")
      ->envname("HITBOX_MAX_WATCH_EVENTS")
      ->check(CLI::Range(1u, 1u << 24))
      ->capture_default_str();
  std::string max_build_bytes = "1G";
  app.add_option("--max-build-bytes", max_build_bytes,
                 "bytes of geometry (priced before building) that the change batches being "
                 "built at once may hold together, server-wide; past it a batch is "
                 "RESOURCE_EXHAUSTED (retry). Suffixes K, M, G, T")
      ->envname("HITBOX_MAX_BUILD_BYTES")
      ->check([](const std::string& text) {
        const auto parsed = hitbox::server::ParseByteSize(text);
        if (!parsed.ok()) return parsed.error().message;
        return *parsed == 0 ? std::string("must be above 0") : std::string();
      })
      ->capture_default_str();
  app.add_option("--max-history-ticks", l.max_history_ticks,
                 "most ticks of pose history a session may keep for queries at a past tick "
                 "(limits.history_ticks)")
      ->envname("HITBOX_MAX_HISTORY_TICKS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI::Option* history_opt = app.add_option("--history-ticks", l.session.history_ticks,
                 "ticks of pose history of sessions that do not ask (at most --max-history-ticks)")
      ->envname("HITBOX_HISTORY_TICKS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-inflight-bytes", l.max_inflight_bytes,
                 "bytes the answers of all calls in flight may hold together; past it, "
                 "queries get RESOURCE_EXHAUSTED (retry)")
      ->envname("HITBOX_MAX_INFLIGHT_BYTES")
      ->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 50))
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
  bool no_malloc_trim = false;
  app.add_flag("--no-malloc-trim", no_malloc_trim,
               "keep freed heap memory in the allocator instead of giving it back to the "
               "system (malloc_trim) after big frees: session deletes and expiries, big "
               "batches; and leave big blocks (1 MiB and more) to glibc's own mmap threshold")
      ->envname("HITBOX_NO_MALLOC_TRIM");
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
  // --- Security (see docs/security.md) ---------------------------------------
  hitbox::server::AuthOptions& auth = o.service.auth;
  std::string admin_token_file;
  app.add_option("--admin-token-file", admin_token_file,
                 "file holding the admin token (trimmed of whitespace): it may call every rpc "
                 "on every session, and only it may ListSessions")
      ->envname("HITBOX_ADMIN_TOKEN_FILE");
  app.add_option("--tls-cert", o.tls_cert, "TLS: the server's certificate chain, PEM file")
      ->envname("HITBOX_TLS_CERT");
  app.add_option("--tls-key", o.tls_key, "TLS: the server's private key, PEM file")
      ->envname("HITBOX_TLS_KEY");
  app.add_option("--tls-client-ca", o.tls_client_ca,
                 "mutual TLS: CA bundle (PEM); every client must present a certificate it signed")
      ->envname("HITBOX_TLS_CLIENT_CA");
  app.add_option("--tls-reload-seconds", o.tls_reload_seconds,
                 "how often the TLS files are re-read (certificate rotation without restart)")
      ->envname("HITBOX_TLS_RELOAD_SECONDS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--insecure", auth.insecure,
               "serve clients beyond loopback even with no credentials configured (no "
               "--admin-token-file, no --tls-client-ca); without it hitboxd is in protected mode")
      ->envname("HITBOX_INSECURE");
  app.add_flag("--open-create", auth.open_create,
               "every caller the server serves may CreateSession, even with an admin token "
               "configured (default: then only the admin token may, so that nobody else can "
               "learn which session ids exist)")
      ->envname("HITBOX_OPEN_CREATE");
  bool create_needs_admin = false;  // the default since --open-create; kept for old scripts
  app.add_flag("--create-needs-admin", create_needs_admin,
               "only the admin token may CreateSession (the default with an admin token; "
               "kept for compatibility)")
      ->envname("HITBOX_CREATE_NEEDS_ADMIN");
  app.add_option("--max-streams-per-connection", o.max_streams_per_connection,
                 "most concurrent calls/streams per client connection (0: no cap); more wait")
      ->envname("HITBOX_MAX_STREAMS_PER_CONNECTION")
      ->capture_default_str();
  app.add_option("--max-in-flight", auth.max_in_flight,
                 "most hitbox.v1 calls in flight at once, server-wide: unary calls while they "
                 "run, ListColliders and Tick streams while open (0: no cap); beyond: "
                 "RESOURCE_EXHAUSTED")
      ->envname("HITBOX_MAX_IN_FLIGHT")
      ->capture_default_str();
  // --- Persistence (see docs/persistence.md) ---------------------------------
  std::string fsync = "everysec";
  app.add_option("--data-dir", o.persist.data_dir,
                 "keep every session in this directory (a snapshot plus a log of change batches "
                 "per session) and restore them at start; empty: sessions live in memory only")
      ->envname("HITBOX_DATA_DIR");
  app.add_option("--fsync", fsync,
                 "when the log reaches the disk: always (before each batch is acknowledged), "
                 "everysec (a background fsync each second: a power loss loses at most ~1 s), "
                 "no (when the OS likes); a crash of hitboxd alone loses nothing in any mode")
      ->envname("HITBOX_FSYNC")
      ->check(CLI::IsMember({"always", "everysec", "no"}))
      ->capture_default_str();
  app.add_option("--compact-factor", o.persist.compact_factor,
                 "a session's log is compacted into a new snapshot when it is larger than this "
                 "factor times the snapshot (and than --compact-min-bytes)")
      ->envname("HITBOX_COMPACT_FACTOR")
      ->check(CLI::Range(0.1, 1000.0))
      ->capture_default_str();
  app.add_option("--compact-min-bytes", o.persist.compact_min_bytes,
                 "logs smaller than this are never compacted, bytes")
      ->envname("HITBOX_COMPACT_MIN_BYTES")
      ->capture_default_str();
  app.add_option("--maps", o.maps_dir,
                 "load every scene or level file of this directory (.json, .gltf, .glb, .obj) at "
                 "start as a shared read-only map named by its file name without extension "
                 "(sessions may be created on one); a bad file stops the start")
      ->envname("HITBOX_MAPS");
  std::string rpc_api = hitbox::server::RpcApiName(o.rpc_api);
  app.add_option("--rpc-api", rpc_api,
                 "gRPC API of the unary Query rpc: callback (gRPC's callback API and threads, "
                 "like every other rpc) or cq (the asynchronous completion-queue API on one "
                 "polling thread per query thread)")
      ->envname("HITBOX_RPC_API")
      ->check(CLI::IsMember({"callback", "cq"}))
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
  o.service.malloc_trim = !no_malloc_trim;
  if (o.service.malloc_trim) hitbox::server::MapLargeBlocks();
  o.rpc_api = *hitbox::server::ParseRpcApi(rpc_api);
  o.persist.fsync = *hitbox::server::ParseFsyncPolicy(fsync);
  if (!admin_token_file.empty()) {
    hitbox::Result<std::string> token = hitbox::server::ReadTokenFile(admin_token_file);
    if (!token.ok()) {
      spdlog::error("--admin-token-file: {}", token.error().message);
      return 2;
    }
    if (token->size() < 16) {
      spdlog::error("--admin-token-file: the admin token must be at least 16 characters");
      return 2;
    }
    auth.admin_token = std::move(*token);
  }
  if (create_needs_admin && auth.open_create) {
    spdlog::error("--create-needs-admin contradicts --open-create");
    return 2;
  }
  if (create_needs_admin && auth.admin_token.empty()) {
    spdlog::error("--create-needs-admin needs --admin-token-file");
    return 2;
  }
  auth.client_certs = !o.tls_client_ca.empty();
  // Sub-millisecond timeouts round up to 1 ms rather than to "never".
  l.session.idle_timeout_ms =
      idle_timeout_s == 0 ? 0 : std::max<uint64_t>(1, std::llround(idle_timeout_s * 1000.0));
  l.max_memory_bytes = *hitbox::server::ParseByteSize(max_memory);
  l.max_build_bytes = *hitbox::server::ParseByteSize(max_build_bytes);
  if (l.session.history_ticks > l.max_history_ticks && history_opt->count() == 0) {
    l.session.history_ticks = l.max_history_ticks;  // the default follows a lower maximum
  }
  if (l.session.history_ticks > l.max_history_ticks) {
    spdlog::error("--history-ticks {} is above --max-history-ticks {}", l.session.history_ticks,
                  l.max_history_ticks);
    return 2;
  }
  return hitbox::server::RunServer(o);
}
