// Fuzz target: proto -> core conversion of the messages a client sends
// (ColliderChange, Query, Collider) and of the answers a client reads
// (QueryResult). The first byte picks the message, the rest is its serialized
// form. Checks: what wire accepts, core accepts too (ColliderSet::Apply /
// ValidateQuery); a query converts alike alone and in a list (the list's
// fast path); accepted values round-trip (core -> proto -> core -> proto
// gives the same message, doubles within a few ulps); FormatDouble reads back to the same double.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>

#include "fuzz_util.h"
#include "hitbox/format.h"
#include "hitbox/world/collider_set.h"
#include "hitbox/v1/hitbox.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox::fuzz {
namespace {

std::string Bytes(const google::protobuf::Message& m) {
  std::string s;
  HITBOX_FUZZ_CHECK(m.SerializeToString(&s), "does not serialize");
  return s;
}

template <typename Core, typename Proto>
void RoundTrip(const Core& value, const char* what) {
  Proto once;
  wire::ToProto(value, &once);
  auto again = wire::FromProto(once, "x");
  HITBOX_FUZZ_CHECK(again.ok(), "%s: ToProto of an accepted value is rejected: %s", what,
                    again.error().message.c_str());
  Proto twice;
  wire::ToProto(*again, &twice);
  // Approximately: FromProto normalizes quaternions, and normalizing twice may
  // move the last bit.
  HITBOX_FUZZ_CHECK(google::protobuf::util::MessageDifferencer::ApproximatelyEquals(once, twice),
                    "%s does not round-trip:\n%s\n%s", what, once.DebugString().c_str(),
                    twice.DebugString().c_str());
}

bool SameDouble(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace
}  // namespace hitbox::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in strings is logged per parse
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hitbox;
  using namespace hitbox::fuzz;
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  const void* body = data + 1;
  const int body_size = static_cast<int>(size - 1);
  switch (sel % 4) {
    case 0: {
      v1::ColliderChange msg;
      if (!msg.ParseFromArray(body, body_size)) return 0;
      auto change = wire::FromProto(msg, "change");
      if (!change.ok()) {
        HITBOX_FUZZ_CHECK(!change.error().message.empty(), "error without a message");
        return 0;
      }
      RoundTrip<ColliderChange, v1::ColliderChange>(*change, "ColliderChange");
      // Core accepts what wire accepted (for kinds other than add, after an add
      // of the id; a watch after its collider, a watch's removal after the watch).
      ColliderSet set;
      if (change->kind == ColliderChange::Kind::kAddWatch) {
        if (change->watch->attach_to) {
          HITBOX_FUZZ_CHECK(
              set.Apply({{ColliderChange::Add(Collider{.id = *change->watch->attach_to})}}).ok(),
              "setup add");
        }
      } else if (change->kind == ColliderChange::Kind::kRemoveWatch) {
        Watch w;
        w.id = change->collider.id;
        HITBOX_FUZZ_CHECK(set.Apply({{ColliderChange::AddWatch(std::move(w))}}).ok(),
                          "setup add_watch");
      } else if (change->kind != ColliderChange::Kind::kAdd) {
        HITBOX_FUZZ_CHECK(set.Apply({{ColliderChange::Add(Collider{.id = change->collider.id})}}).ok(),
                          "setup add");
      }
      const Status s = set.Apply({{*change}});
      HITBOX_FUZZ_CHECK(s.ok(), "wire accepted a change core rejects: %s", s.ToString().c_str());
      break;
    }
    case 1: {
      v1::Query msg;
      if (!msg.ParseFromArray(body, body_size)) return 0;
      // A query list converts the common queries on a fast path of its own:
      // it must give what the single conversion gives, value and error text.
      {
        wire::Repeated<v1::Query> list;
        *list.Add() = msg;
        std::vector<Query> converted;
        const Status listed = wire::FromProto(list, &converted);
        auto single = wire::FromProto(msg, "queries[0]");
        HITBOX_FUZZ_CHECK(listed.ok() == single.ok(), "list %s, single %s",
                          listed.ToString().c_str(),
                          single.ok() ? "OK" : single.error().message.c_str());
        if (!listed.ok()) {
          HITBOX_FUZZ_CHECK(listed.message() == single.error().message,
                            "list error '%s', single error '%s'", listed.message().c_str(),
                            single.error().message.c_str());
        } else {
          HITBOX_FUZZ_CHECK(converted.size() == 1, "list of one gave %zu", converted.size());
          v1::Query from_list, from_single;
          wire::ToProto(converted[0], &from_list);
          wire::ToProto(*single, &from_single);
          HITBOX_FUZZ_CHECK(Bytes(from_list) == Bytes(from_single),
                            "list and single conversions differ:\n%s\n%s",
                            from_list.DebugString().c_str(), from_single.DebugString().c_str());
        }
      }
      auto q = wire::FromProto(msg, "query");
      if (!q.ok()) return 0;
      RoundTrip<Query, v1::Query>(*q, "Query");
      const Status s = ColliderSet::ValidateQuery(*q);
      HITBOX_FUZZ_CHECK(s.ok(), "wire accepted a query core rejects: %s", s.ToString().c_str());
      break;
    }
    case 2: {
      v1::Collider msg;
      if (!msg.ParseFromArray(body, body_size)) return 0;
      auto c = wire::FromProto(msg, "collider");
      if (!c.ok()) return 0;
      RoundTrip<Collider, v1::Collider>(*c, "Collider");
      ColliderSet set;
      const Collider one[] = {*c};
      const Status s = set.AddBulk(one);
      HITBOX_FUZZ_CHECK(s.ok(), "wire accepted a collider core rejects: %s", s.ToString().c_str());
      HITBOX_FUZZ_CHECK(set.TreeValidate().empty(), "tree after one collider");
      break;
    }
    default: {
      v1::QueryResult msg;
      if (msg.ParseFromArray(body, body_size)) {
        const QueryResult r = wire::ResultFromProto(msg);
        v1::QueryResult back;
        wire::ToProto(r, msg.tag(), &back);
        (void)Bytes(back);
      }
      // FormatDouble of the first 8 bytes reads back exactly.
      if (size >= 9) {
        double d;
        std::memcpy(&d, data + 1, sizeof d);
        const std::string text = FormatDouble(d);
        const double back = std::strtod(text.c_str(), nullptr);
        HITBOX_FUZZ_CHECK(SameDouble(d, back), "FormatDouble(%.17g) = '%s'", d, text.c_str());
      }
      break;
    }
  }
  return 0;
}
