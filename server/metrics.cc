#include "metrics.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include <google/protobuf/descriptor.h>
#include <httplib.h>

#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox::server {
namespace {

constexpr const char* kServiceName = "hitbox.v1.Hitbox";
constexpr const char* kReasonNames[kRejectReasonCount] = {"resource_exhausted", "budget", "auth",
                                                         "invalid", "limits"};

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Appends "# HELP name help\n# TYPE name type\n".
void Header(std::string* out, const char* name, const char* type, const char* help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

// Appends "name{labels} value\n" (labels may be empty: no braces).
void Sample(std::string* out, std::string_view name, std::string_view labels, double value) {
  *out += name;
  if (!labels.empty()) {
    *out += '{';
    *out += labels;
    *out += '}';
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, " %.17g\n", value);
  *out += buf;
}

// One unsigned value with its HELP and TYPE lines.
void Single(std::string* out, const char* name, const char* type, const char* help,
            double value) {
  Header(out, name, type, help);
  Sample(out, name, "", value);
}

// Counts one call of a hitbox.v1 rpc: its status and latency, and for Query
// and Tick the queries and hits of each answer and the refused ticks.
class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(Metrics* metrics, int rpc)
      : metrics_(metrics), rpc_(rpc), start_(std::chrono::steady_clock::now()) {
    const std::string& name = metrics_->RpcName(rpc_);
    answers_ = name == "Query" ? Answers::kQuery : name == "Tick" ? Answers::kTick : Answers::kNone;
    if (answers_ == Answers::kTick) metrics_->TickStreamOpened();
  }
  ~MetricsInterceptor() override {
    if (answers_ == Answers::kTick) metrics_->TickStreamClosed();
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using Hook = grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE)) {
      OnRequest(methods->GetRecvMessage());
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE)) {
      OnResponse(methods->GetSendMessage());
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
      metrics_->ObserveCall(rpc_, status.error_code(), took.count());
      if (auto reason = ClassifyRejection(status.error_code(), status.error_message())) {
        metrics_->AddRejected(*reason);
      }
    }
    methods->Proceed();
  }

 private:
  enum class Answers { kNone, kQuery, kTick };

  // Remembers the kinds of the request's queries until its answer is sent.
  void OnRequest(void* message) {
    if (message == nullptr || answers_ == Answers::kNone) return;
    const auto& queries = answers_ == Answers::kQuery
                              ? static_cast<const v1::QueryRequest*>(message)->queries()
                              : static_cast<const v1::TickRequest*>(message)->queries();
    metrics_->CountKinds(queries, &pending_);
    if (answers_ == Answers::kTick) {  // the packed queries too (PackedQueries.kinds)
      for (uint32_t k : static_cast<const v1::TickRequest*>(message)->packed().kinds()) {
        const int field = k == v1::PACKED_RAY       ? v1::Query::kRaycast
                          : k == v1::PACKED_CAST    ? v1::Query::kCast
                          : k == v1::PACKED_OVERLAP ? v1::Query::kOverlap
                          : k == v1::PACKED_MOVE    ? v1::Query::kMove
                                                    : -1;
        const int kind = field < 0 ? -1 : metrics_->QueryKindIndex(field);
        if (kind < 0) continue;
        if (pending_.size() <= static_cast<size_t>(kind)) pending_.resize(kind + 1, 0);
        ++pending_[kind];
      }
    }
  }

  // Counts an answer: its queries and hits, or the tick's in-band refusal.
  void OnResponse(const void* message) {
    if (message == nullptr || answers_ == Answers::kNone) return;
    const google::protobuf::RepeatedPtrField<v1::QueryResult>* results = nullptr;
    if (answers_ == Answers::kQuery) {
      results = &static_cast<const v1::QueryResponse*>(message)->results();
    } else {
      const auto* tick = static_cast<const v1::TickResponse*>(message);
      if (tick->has_error()) {
        pending_.clear();
        if (auto reason = ClassifyRejection(static_cast<grpc::StatusCode>(tick->error().code()),
                                            tick->error().message())) {
          metrics_->AddRejected(*reason);
        }
        return;
      }
      results = &tick->results();
      metrics_->AddHits(static_cast<uint64_t>(tick->packed().hits().id_size()) +
                        static_cast<uint64_t>(tick->packed().overlaps().id_size()));
    }
    metrics_->AddAnswer(pending_, *results);
    pending_.clear();
  }

  Metrics* const metrics_;
  const int rpc_;
  const std::chrono::steady_clock::time_point start_;
  Answers answers_ = Answers::kNone;
  std::vector<uint64_t> pending_;  // queries per kind of the request being answered
};

}  // namespace

const char* RejectReasonName(RejectReason reason) {
  return kReasonNames[static_cast<size_t>(reason)];
}

std::optional<RejectReason> ClassifyRejection(grpc::StatusCode code, std::string_view message) {
  switch (code) {
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED: return RejectReason::kAuth;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE: return RejectReason::kInvalid;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      // The service's messages name the limit they hit (service.cc, session.cc, auth.cc).
      if (Contains(message, "work budget")) return RejectReason::kBudget;
      if (Contains(message, "(limits.") || Contains(message, "per message") ||
          Contains(message, "--max-message-bytes") || Contains(message, "--max-sessions") ||
          Contains(message, "larger than max")) {
        return RejectReason::kLimits;
      }
      return RejectReason::kResourceExhausted;  // in flight (calls, answer bytes), --max-memory
    default: return std::nullopt;
  }
}

Metrics::Metrics() {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(kServiceName);
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    rpcs_.push_back(service->method(i)->name());
    full_methods_.push_back(std::string("/") + kServiceName + "/" + service->method(i)->name());
  }
  calls_ = std::make_unique<RpcCode[]>(rpcs_.size() * kCodes);
  const google::protobuf::OneofDescriptor* kind =
      v1::Query::descriptor()->FindOneofByName("kind");
  for (int i = 0; kind != nullptr && i < kind->field_count(); ++i) {
    kinds_.push_back(kind->field(i)->name());
    kind_fields_.push_back(kind->field(i)->number());
  }
  queries_ = std::make_unique<std::atomic<uint64_t>[]>(kinds_.size());
  for (size_t i = 0; i < kinds_.size(); ++i) queries_[i] = 0;
}

int Metrics::RpcIndex(std::string_view method) const {
  for (size_t i = 0; i < full_methods_.size(); ++i) {
    if (full_methods_[i] == method) return static_cast<int>(i);
  }
  return -1;
}

void Metrics::ObserveCall(int rpc, grpc::StatusCode code, double seconds) {
  const size_t c = static_cast<size_t>(code) < kCodes ? static_cast<size_t>(code)
                                                       : static_cast<size_t>(grpc::StatusCode::UNKNOWN);
  RpcCode& slot = calls_[static_cast<size_t>(rpc) * kCodes + c];
  size_t b = 0;
  while (b < kLatencyBucketsSeconds.size() && seconds > kLatencyBucketsSeconds[b]) ++b;
  slot.buckets[b].fetch_add(1, std::memory_order_relaxed);
  slot.sum_ns.fetch_add(static_cast<uint64_t>(std::max(0.0, seconds) * 1e9),
                        std::memory_order_relaxed);
}

int Metrics::QueryKindIndex(int field_number) const {
  for (size_t i = 0; i < kind_fields_.size(); ++i) {
    if (kind_fields_[i] == field_number) return static_cast<int>(i);
  }
  return -1;
}

void Metrics::CountKinds(const google::protobuf::RepeatedPtrField<v1::Query>& queries,
                         std::vector<uint64_t>* per_kind) const {
  per_kind->clear();
  for (const v1::Query& q : queries) {
    const int kind = QueryKindIndex(static_cast<int>(q.kind_case()));
    if (kind < 0) continue;
    if (per_kind->size() <= static_cast<size_t>(kind)) per_kind->resize(kind + 1, 0);
    ++(*per_kind)[kind];
  }
}

void Metrics::AddAnswer(const std::vector<uint64_t>& per_kind,
                        const google::protobuf::RepeatedPtrField<v1::QueryResult>& results) {
  for (size_t kind = 0; kind < per_kind.size(); ++kind) {
    if (per_kind[kind] != 0) AddQueries(static_cast<int>(kind), per_kind[kind]);
  }
  uint64_t hits = 0;
  for (const v1::QueryResult& r : results) hits += r.overlaps_size() + r.hits_size();
  AddHits(hits);
}

void Metrics::AddQueries(int kind, uint64_t count) {
  if (kind >= 0 && static_cast<size_t>(kind) < kinds_.size()) {
    queries_[kind].fetch_add(count, std::memory_order_relaxed);
  }
}

void Metrics::AddRejected(RejectReason reason) {
  rejected_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

std::string Metrics::Render(const MetricsGauges& gauges) const {
  std::string out;
  out.reserve(16 << 10);
  // Calls and latency: every rpc with code OK, plus each other code seen.
  // _count and calls_total are both the sum of the buckets read, so they agree.
  struct Row {
    std::string labels;
    std::array<uint64_t, kBuckets> cumulative;
    double sum_seconds;
  };
  std::vector<Row> rows;
  for (size_t r = 0; r < rpcs_.size(); ++r) {
    for (size_t c = 0; c < kCodes; ++c) {
      const RpcCode& slot = calls_[r * kCodes + c];
      Row row;
      uint64_t total = 0;
      for (size_t b = 0; b < kBuckets; ++b) {
        total += slot.buckets[b].load(std::memory_order_relaxed);
        row.cumulative[b] = total;
      }
      if (total == 0 && c != 0) continue;
      row.labels = "rpc=\"" + rpcs_[r] + "\",code=\"" +
                   wire::GrpcCodeName(static_cast<grpc::StatusCode>(c)) + "\"";
      row.sum_seconds = static_cast<double>(slot.sum_ns.load(std::memory_order_relaxed)) / 1e9;
      rows.push_back(std::move(row));
    }
  }
  Header(&out, "hitbox_rpc_calls_total", "counter",
         "Finished hitbox.v1.Hitbox calls by rpc and gRPC status code.");
  for (const Row& row : rows) {
    Sample(&out, "hitbox_rpc_calls_total", row.labels, static_cast<double>(row.cumulative.back()));
  }
  Header(&out, "hitbox_rpc_duration_seconds", "histogram",
         "Time from the start of a call to its status, seconds (streams: their lifetime).");
  for (const Row& row : rows) {
    for (size_t b = 0; b < kBuckets; ++b) {
      char le[32];
      if (b < kLatencyBucketsSeconds.size()) {
        std::snprintf(le, sizeof le, "%g", kLatencyBucketsSeconds[b]);
      } else {
        std::snprintf(le, sizeof le, "+Inf");
      }
      Sample(&out, "hitbox_rpc_duration_seconds_bucket", row.labels + ",le=\"" + le + "\"",
             static_cast<double>(row.cumulative[b]));
    }
    Sample(&out, "hitbox_rpc_duration_seconds_sum", row.labels, row.sum_seconds);
    Sample(&out, "hitbox_rpc_duration_seconds_count", row.labels,
           static_cast<double>(row.cumulative.back()));
  }
  Header(&out, "hitbox_queries_total", "counter",
         "Queries answered (Query calls and ticks that succeeded), by kind.");
  for (size_t k = 0; k < kinds_.size(); ++k) {
    Sample(&out, "hitbox_queries_total", "kind=\"" + kinds_[k] + "\"",
           static_cast<double>(queries_[k].load(std::memory_order_relaxed)));
  }
  Single(&out, "hitbox_query_hits_total", "counter",
         "Hits in answers sent (overlaps plus cast and ray hits).",
         static_cast<double>(hits_.load(std::memory_order_relaxed)));
  Single(&out, "hitbox_pair_tests_total", "counter",
         "Narrow-phase pair tests run by queries, answered or refused.",
         static_cast<double>(pair_tests_.load(std::memory_order_relaxed)));
  Header(&out, "hitbox_rejected_requests_total", "counter",
         "Calls and ticks refused, by reason (resource_exhausted, budget, auth, invalid, limits).");
  for (size_t i = 0; i < kRejectReasonCount; ++i) {
    Sample(&out, "hitbox_rejected_requests_total", std::string("reason=\"") + kReasonNames[i] + "\"",
           static_cast<double>(rejected_[i].load(std::memory_order_relaxed)));
  }
  Single(&out, "hitbox_sessions", "gauge", "Sessions open.", static_cast<double>(gauges.sessions));
  Single(&out, "hitbox_colliders", "gauge", "Colliders in all sessions.",
         static_cast<double>(gauges.colliders));
  Single(&out, "hitbox_maps", "gauge", "Shared maps loaded at start (--maps).",
         static_cast<double>(gauges.maps));
  Single(&out, "hitbox_map_memory_bytes", "gauge",
         "Bytes the shared maps hold, once however many sessions use them.",
         static_cast<double>(gauges.map_memory_bytes));
  Single(&out, "hitbox_history_memory_bytes", "gauge",
         "Bytes of lag-compensation history (none yet: always 0).",
         static_cast<double>(gauges.history_memory_bytes));
  Single(&out, "hitbox_session_memory_bytes", "gauge",
         "Bytes all sessions hold (what --max-memory caps).",
         static_cast<double>(gauges.session_memory_bytes));
  Single(&out, "hitbox_answer_memory_bytes", "gauge",
         "Bytes of answers in flight (what --max-inflight-bytes caps).",
         static_cast<double>(gauges.answer_memory_bytes));
  Single(&out, "hitbox_tick_streams_open", "gauge", "Tick streams open.",
         static_cast<double>(tick_streams_.load(std::memory_order_relaxed)));
  Single(&out, "hitbox_sessions_expired_total", "counter",
         "Sessions deleted by the idle timeout.",
         static_cast<double>(sessions_expired_.load(std::memory_order_relaxed)));
  Single(&out, "hitbox_process_resident_memory_bytes", "gauge",
         "Resident set size of hitboxd, bytes (/proc/self/statm).",
         static_cast<double>(ProcessResidentBytes()));
  return out;
}

grpc::experimental::Interceptor* MetricsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  const int rpc = metrics_->RpcIndex(info->method() == nullptr ? "" : info->method());
  if (rpc < 0) return nullptr;  // not hitbox.v1.Hitbox: health, reflection
  return new MetricsInterceptor(metrics_, rpc);
}

uint64_t ProcessResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  return resident_pages * static_cast<uint64_t>(page > 0 ? page : 4096);
}

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& host_port, std::function<std::string()> render,
    const std::function<void(httplib::Server*)>& add_routes, size_t threads) {
  const size_t colon = host_port.rfind(':');
  int port = -1;
  std::string host;
  if (colon != std::string::npos) {
    host = host_port.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    try {
      size_t used = 0;
      port = std::stoi(host_port.substr(colon + 1), &used);
      if (used != host_port.size() - colon - 1) port = -1;
    } catch (const std::exception&) {
      port = -1;
    }
  }
  if (host.empty() || port < 0 || port > 65535) {
    return Error{ErrorCode::kInvalidArgument,
                 "--http-listen: expected HOST:PORT, got '" + host_port + "'"};
  }
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  e->http_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *e->http_;
  // A few workers of its own (never a query thread): scrapes are rare, an
  // inspector page polls over one or two connections kept alive briefly.
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_keep_alive_timeout(2);
  // SO_REUSEADDR only (httplib also sets SO_REUSEPORT, which would let two
  // servers share the port silently).
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  http.Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                    httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  if (add_routes) add_routes(&http);
  if (port == 0) {
    e->port_ = http.bind_to_any_port(host);
  } else if (http.bind_to_port(host, port)) {
    e->port_ = port;
  }
  if (e->port_ <= 0) {
    return Error{ErrorCode::kFailedPrecondition,
                 "--http-listen: cannot listen on " + host_port +
                     " (address in use, or not an address of this host)"};
  }
  e->thread_ = std::thread([&http] { http.listen_after_bind(); });
  // stop() is only heard once the loop runs: wait for it (a few ms at most).
  for (int i = 0; i < 5000 && !http.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return e;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (http_ != nullptr) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace hitbox::server
