// Fuzz target: sequences of hitbox.v1 requests through wire conversion and the
// service handlers (HitboxService::Do*, DoTick) of an in-process service, on
// one or more sessions. The bytes are a list of calls:
//   [selector u8][length u16 little-endian][length bytes of serialized request]
// (selector & 0x3F) % 9 picks the rpc (CreateSession, GetSession, ListSessions,
// DeleteSession, ApplyChanges, GetColliders, Query, Tick, Tick on a new
// stream); selector & 0x80 replaces the request's session_id with "fuzz", the
// session every input starts with; selector & 0x40 builds ApplyChanges, Query
// and Tick requests from core values decoded from the bytes (extreme doubles
// included; see Decode) instead of parsing them. Bytes that do not parse are
// skipped. Checks: no crash or sanitizer error, never INTERNAL or UNKNOWN,
// OK answers are consistent (one result per query, tags echoed, fractions in
// [0, 1], revision and size agree with GetSession), every
// response serializes. HITBOX_FUZZ_TRACE=1 prints the decoded requests.
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include <google/protobuf/stubs/logging.h>

#include "hitbox/v1/hitbox.pb.h"
#include "hitbox/wire/convert.h"
#include "service.h"

namespace hitbox::fuzz {
namespace {

constexpr int kMaxCalls = 24;
constexpr const char* kSession = "fuzz";

server::ServiceOptions Options() {
  server::ServiceOptions o;
  o.threads = 1;  // deterministic: batches run on the calling thread
  o.limits.max_sessions = 4;
  o.limits.max_message_bytes = 1 << 20;
  o.limits.max_page_size = 64;
  o.limits.session.max_colliders = 256;
  o.limits.session.max_changes_per_message = 128;
  o.limits.session.max_queries_per_message = 32;
  o.limits.session.max_hits_per_query = 64;
  // A short history: a few ticks of an input reach its prune and its ring's wrap.
  o.limits.session.history_ticks = 8;
  return o;
}

void CheckStatus(const grpc::Status& st, const char* rpc) {
  HITBOX_FUZZ_CHECK(st.error_code() != grpc::StatusCode::INTERNAL &&
                        st.error_code() != grpc::StatusCode::UNKNOWN,
                    "%s answered %d: %s", rpc, static_cast<int>(st.error_code()),
                    st.error_message().c_str());
  if (!st.ok()) HITBOX_FUZZ_CHECK(!st.error_message().empty(), "%s: error without a message", rpc);
}

void CheckSerializes(const google::protobuf::Message& m) {
  std::string out;
  HITBOX_FUZZ_CHECK(m.SerializeToString(&out), "response does not serialize");
}

void CheckResults(const google::protobuf::RepeatedPtrField<v1::Query>& queries,
                  const google::protobuf::RepeatedPtrField<v1::QueryResult>& results) {
  HITBOX_FUZZ_CHECK(queries.size() == results.size(), "%d queries, %d results", queries.size(),
                    results.size());
  for (int i = 0; i < results.size(); ++i) {
    HITBOX_FUZZ_CHECK(results[i].tag() == queries[i].tag(), "tag of result %d", i);
    for (const auto& h : results[i].hits()) {
      HITBOX_FUZZ_CHECK(h.fraction() >= 0.0 && h.fraction() <= 1.0, "fraction %.17g", h.fraction());
    }
  }
}

// After an OK change, GetSession agrees with the response.
void CheckSessionState(server::HitboxService& svc, const std::string& id, uint64_t revision,
                       uint64_t count) {
  v1::GetSessionRequest req;
  req.set_session_id(id);
  v1::SessionInfo info;
  const grpc::Status st = svc.DoGetSession(req, &info);
  HITBOX_FUZZ_CHECK(st.ok(), "GetSession after an OK change: %s", st.error_message().c_str());
  HITBOX_FUZZ_CHECK(info.revision() == revision && info.collider_count() == count,
                    "session at revision %llu with %llu colliders, the change said %llu / %llu",
                    (unsigned long long)info.revision(), (unsigned long long)info.collider_count(),
                    (unsigned long long)revision, (unsigned long long)count);
}

// HITBOX_FUZZ_TRACE=1: print every decoded request (to read a reproducer).
const bool kTrace = std::getenv("HITBOX_FUZZ_TRACE") != nullptr;

template <typename Req>
bool Parse(std::string_view bytes, bool force_session, Req* req) {
  if (!req->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
  if constexpr (!std::is_same_v<Req, v1::ListSessionsRequest>) {
    if (force_session) req->set_session_id(kSession);
  }
  if (kTrace) {
    std::fprintf(stderr, "%s { %s }\n", req->GetDescriptor()->name().c_str(),
                 req->ShortDebugString().c_str());
  }
  return true;
}

// Structured decoding (selector & 0x40): changes and queries built from core
// values read with ByteReader (extreme doubles included) and converted with
// wire::ToProto, so calls reach the handlers' deeper paths more often than
// mutated protobuf bytes do.
void ReadChanges(ByteReader& in, google::protobuf::RepeatedPtrField<v1::ColliderChange>* out) {
  const int n = in.U8() % 16;
  for (int i = 0; i < n; ++i) {
    const uint8_t kind = in.U8() % 4;
    Collider c;
    c.id = in.U8() % 16;
    bool valid = false;
    c.shape = in.ReadShape(&valid);
    c.pose = in.ReadPose();
    c.layer = in.U8() % 34;
    c.user_data = in.U8();
    ColliderChange ch = kind == 0   ? ColliderChange::Add(c)
                        : kind == 1 ? ColliderChange::Replace(c)
                        : kind == 2 ? ColliderChange::Move(c.id, c.pose)
                                    : ColliderChange::Remove(c.id);
    wire::ToProto(ch, out->Add());
  }
}

void ReadQueries(ByteReader& in, google::protobuf::RepeatedPtrField<v1::Query>* out) {
  const int n = in.U8() % 8;
  for (int i = 0; i < n; ++i) {
    QueryFilter f;
    const uint8_t flags = in.U8();
    if (flags & 1) f.mask = in.U32();
    if (flags & 2) f.max_hits = in.U8();
    if (flags & 4) f.ignore.push_back(in.U8() % 16);
    const bool all = (flags & 8) != 0;
    const bool rewound = (flags & 16) != 0;  // at_tick: a tick and 256ths of one
    bool valid = false;
    Query q;
    switch (in.U8() % 3) {
      case 0: {
        OverlapQuery o{.shape = in.ReadShape(&valid), .pose = in.ReadPose(), .filter = f};
        o.want_contact = all;
        q = o;
        break;
      }
      case 1: {
        CastQuery c{.shape = in.ReadShape(&valid), .pose = in.ReadPose()};
        c.translation = in.ReadVec3();
        c.filter = f;
        c.all_hits = all;
        q = c;
        break;
      }
      default: {
        RayQuery r{.origin = in.ReadVec3()};
        r.translation = in.ReadVec3();
        r.filter = f;
        r.all_hits = all;
        q = r;
        break;
      }
    }
    v1::Query* m = out->Add();
    wire::ToProto(q, m);
    m->set_tag(static_cast<uint64_t>(i));
    if (rewound) m->set_at_tick(in.U8() + in.U8() / 256.0);
  }
}

// Fills `req` from the bytes: structured for the requests that carry changes
// or queries when `structured`, else parsed as protobuf.
template <typename Req>
bool Decode(std::string_view bytes, bool force_session, bool structured, Req* req) {
  constexpr bool kHasBody = std::is_same_v<Req, v1::ApplyChangesRequest> ||
                            std::is_same_v<Req, v1::QueryRequest> ||
                            std::is_same_v<Req, v1::TickRequest>;
  if constexpr (kHasBody) {
    if (structured) {
      ByteReader in(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      const uint8_t flags = in.U8();
      if (!(flags & 1)) req->set_session_id(kSession);
      if constexpr (std::is_same_v<Req, v1::ApplyChangesRequest>) {
        if (flags & 2) req->set_expected_revision(in.U8());
        ReadChanges(in, req->mutable_changes());
      } else if constexpr (std::is_same_v<Req, v1::QueryRequest>) {
        ReadQueries(in, req->mutable_queries());
      } else {
        req->set_tick(in.U8());
        ReadChanges(in, req->mutable_changes());
        ReadQueries(in, req->mutable_queries());
      }
      if (kTrace) {
        std::fprintf(stderr, "%s (structured) { %s }\n", req->GetDescriptor()->name().c_str(),
                     req->ShortDebugString().c_str());
      }
      return true;
    }
  }
  return Parse(bytes, force_session, req);
}

}  // namespace
}  // namespace hitbox::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in strings is logged per parse
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hitbox;
  using namespace hitbox::fuzz;
  server::HitboxService svc(Options());
  {
    v1::CreateSessionRequest req;
    req.set_session_id(kSession);
    v1::SessionInfo info;
    HITBOX_FUZZ_CHECK(svc.DoCreateSession(req, &info).ok(), "cannot create the first session");
  }
  auto stream = std::make_unique<server::HitboxService::TickStream>();
  ByteReader in(data, size);
  for (int call = 0; call < kMaxCalls && !in.empty(); ++call) {
    const uint8_t sel = in.U8();
    const bool force = (sel & 0x80) != 0;
    const bool structured = (sel & 0x40) != 0;
    const std::string_view bytes = in.Bytes(in.U16());
    switch ((sel & 0x3F) % 9) {
      case 0: {
        v1::CreateSessionRequest req;
        if (!Parse(bytes, force, &req)) break;
        v1::SessionInfo resp;
        const grpc::Status st = svc.DoCreateSession(req, &resp);
        CheckStatus(st, "CreateSession");
        if (st.ok()) {
          HITBOX_FUZZ_CHECK(resp.collider_count() == 0 && resp.revision() == 0, "new session not empty");
          HITBOX_FUZZ_CHECK(req.session_id().empty() || resp.session_id() == req.session_id(),
                            "created under another id");
        }
        CheckSerializes(resp);
        break;
      }
      case 1: {
        v1::GetSessionRequest req;
        if (!Parse(bytes, force, &req)) break;
        v1::SessionInfo resp;
        CheckStatus(svc.DoGetSession(req, &resp), "GetSession");
        CheckSerializes(resp);
        break;
      }
      case 2: {
        v1::ListSessionsResponse resp;
        CheckStatus(svc.DoListSessions(&resp), "ListSessions");
        HITBOX_FUZZ_CHECK(resp.sessions_size() <= 4, "more sessions than max_sessions");
        CheckSerializes(resp);
        break;
      }
      case 3: {
        v1::DeleteSessionRequest req;
        if (!Parse(bytes, force, &req)) break;
        CheckStatus(svc.DoDeleteSession(req), "DeleteSession");
        break;
      }
      case 4: {
        v1::ApplyChangesRequest req;
        if (!Decode(bytes, force, structured, &req)) break;
        v1::ApplyChangesResponse resp;
        const grpc::Status st = svc.DoApplyChanges(req, &resp);
        CheckStatus(st, "ApplyChanges");
        if (st.ok()) {
          HITBOX_FUZZ_CHECK(resp.collider_count() <= 256, "past max_colliders");
          CheckSessionState(svc, req.session_id(), resp.revision(), resp.collider_count());
        }
        CheckSerializes(resp);
        break;
      }
      case 5: {
        v1::GetCollidersRequest req;
        if (!Parse(bytes, force, &req)) break;
        v1::GetCollidersResponse resp;
        const grpc::Status st = svc.DoGetColliders(req, &resp);
        CheckStatus(st, "GetColliders");
        if (st.ok()) {
          for (const auto& c : resp.colliders()) {
            bool requested = false;
            for (uint64_t id : req.ids()) requested = requested || id == c.id();
            HITBOX_FUZZ_CHECK(requested, "GetColliders returned an id not asked for");
          }
        }
        CheckSerializes(resp);
        break;
      }
      case 6: {
        v1::QueryRequest req;
        if (!Decode(bytes, force, structured, &req)) break;
        v1::QueryResponse resp;
        const grpc::Status st = svc.DoQuery(req, &resp);
        CheckStatus(st, "Query");
        if (st.ok()) CheckResults(req.queries(), resp.results());
        CheckSerializes(resp);
        break;
      }
      default: {
        if ((sel & 0x3F) % 9 == 8) stream = std::make_unique<server::HitboxService::TickStream>();
        v1::TickRequest req;
        if (!Decode(bytes, force, structured, &req)) break;
        v1::TickResponse resp;
        const grpc::Status ended = svc.DoTick(stream.get(), req, &resp);
        if (!ended.ok()) {
          // The stream's session was deleted: the stream ends with NOT_FOUND
          // and no response; a new stream starts for the next ticks.
          CheckStatus(ended, "Tick");
          HITBOX_FUZZ_CHECK(ended.error_code() == grpc::StatusCode::NOT_FOUND,
                            "a tick ended its stream with a code other than NOT_FOUND");
          HITBOX_FUZZ_CHECK(resp.ByteSizeLong() == 0, "an ended stream's tick has a response");
          stream = std::make_unique<server::HitboxService::TickStream>();
          break;
        }
        HITBOX_FUZZ_CHECK(resp.tick() == req.tick(), "tick not echoed");
        if (resp.has_error()) {
          const auto code = static_cast<grpc::StatusCode>(resp.error().code());
          CheckStatus(grpc::Status(code, resp.error().message()), "Tick");
          HITBOX_FUZZ_CHECK(code != grpc::StatusCode::OK, "tick error with code OK");
          HITBOX_FUZZ_CHECK(resp.results_size() == 0, "rejected tick with results");
        } else {
          CheckResults(req.queries(), resp.results());
        }
        CheckSerializes(resp);
        break;
      }
    }
  }
  return 0;
}
