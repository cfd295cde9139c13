// The packed form of a tick (wire/packed.h, TickRequest.packed): conversion
// round trips, every validation error, and the same ticks answered bit for
// bit alike in both forms through an in-process server.
#include <atomic>
#include <bit>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include "hitbox/client.h"
#include "hitbox/loadgen.h"
#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/wire/convert.h"
#include "hitbox/wire/message_arena.h"
#include "hitbox/wire/packed.h"
#include "server.h"

// Heap allocations of the thread while it counts (malloc, calloc and realloc,
// which operator new and protobuf's arena blocks come to), as
// hitbox-arena-bench counts them: the test of a warm tick's encode and decode.
// Not under ASan, TSan or MSan, whose own malloc must not be replaced.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HITBOX_COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define HITBOX_COUNT_MALLOC 0
#endif
#endif
#ifndef HITBOX_COUNT_MALLOC
#define HITBOX_COUNT_MALLOC 1
#endif

namespace {
thread_local bool t_counting = false;
thread_local size_t t_allocations = 0;
}  // namespace

#if HITBOX_COUNT_MALLOC
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* malloc(size_t size) {
  if (t_counting) ++t_allocations;
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  if (t_counting) ++t_allocations;
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  if (t_counting) ++t_allocations;
  return __libc_realloc(p, size);
}
}
#endif

namespace hitbox {
namespace {

using wire::Repeated;

// ---------------------------------------------------------------------------
// Bit-exact comparison of answers and queries.

bool Same(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
bool Same(const Vec3& a, const Vec3& b) { return Same(a.x, b.x) && Same(a.y, b.y) && Same(a.z, b.z); }

// Every field of two answers, to the bit; "" when equal, else the first difference.
std::string Diff(const QueryResult& a, const QueryResult& b) {
  std::ostringstream out;
  if (a.tag != b.tag) out << "tag " << a.tag << " vs " << b.tag;
  if (a.truncated != b.truncated) out << "truncated";
  if (a.hits.size() != b.hits.size()) out << "hit count " << a.hits.size() << " vs " << b.hits.size();
  if (a.overlaps.size() != b.overlaps.size()) out << "overlap count";
  if (a.move.has_value() != b.move.has_value()) out << "move presence";
  if (!out.str().empty()) return out.str();
  for (size_t i = 0; i < a.hits.size(); ++i) {
    const CastHit &x = a.hits[i], &y = b.hits[i];
    if (x.state != y.state || !Same(x.fraction, y.fraction) || !Same(x.normal, y.normal) ||
        !Same(x.point, y.point) || !Same(x.depth, y.depth) || x.sub_shape != y.sub_shape ||
        x.id != y.id || x.user_data != y.user_data) {
      out << "hit[" << i << "] differs";
    }
  }
  for (size_t i = 0; i < a.overlaps.size(); ++i) {
    const OverlapHit &x = a.overlaps[i], &y = b.overlaps[i];
    if (x.id != y.id || x.user_data != y.user_data || x.sub_shape != y.sub_shape ||
        x.contact.has_value() != y.contact.has_value() ||
        (x.contact && (!Same(x.contact->depth, y.contact->depth) ||
                       !Same(x.contact->normal, y.contact->normal) ||
                       !Same(x.contact->point_a, y.contact->point_a) ||
                       !Same(x.contact->point_b, y.contact->point_b)))) {
      out << "overlap[" << i << "] differs";
    }
  }
  if (a.move) {
    const MoveResult &x = *a.move, &y = *b.move;
    if (!Same(x.position, y.position) || !Same(x.displacement, y.displacement) ||
        x.on_ground != y.on_ground || x.ground_id != y.ground_id ||
        x.ground_sub_shape != y.ground_sub_shape || !Same(x.ground_normal, y.ground_normal) ||
        x.stepped != y.stepped || x.blocked != y.blocked ||
        x.contacts.size() != y.contacts.size()) {
      out << "move differs";
    } else {
      for (size_t i = 0; i < x.contacts.size(); ++i) {
        const MoveContact &p = x.contacts[i], &q = y.contacts[i];
        if (p.id != q.id || p.sub_shape != q.sub_shape || !Same(p.normal, q.normal) ||
            !Same(p.point, q.point)) {
          out << "move contact[" << i << "] differs";
        }
      }
    }
  }
  return out.str();
}

// A query as the message form hands it to the server.
Query ThroughMessage(const Query& q, bool from_collider) {
  v1::Query m;
  wire::ToProto(q, &m, !from_collider);
  if (from_collider) m.set_shape_from_collider(7);
  Result<Query> back = wire::FromProto(m, "q");
  EXPECT_TRUE(back.ok()) << back.error().message;
  return back.ok() ? *back : q;
}

// Two decoded queries, field by field (shapes by kind and size).
std::string Diff(const Query& a, const Query& b) {
  if (a.index() != b.index()) return "kind";
  std::ostringstream out;
  const auto common = [&](const auto& x, const auto& y) {
    if (x.tag != y.tag) out << "tag ";
    if (x.filter.mask != y.filter.mask) out << "mask ";
    if (x.filter.max_hits != y.filter.max_hits) out << "max_hits ";
    if (x.filter.ignore != y.filter.ignore) out << "ignore ";
    if (x.at_tick.has_value() != y.at_tick.has_value() || (x.at_tick && !Same(*x.at_tick, *y.at_tick))) {
      out << "at_tick ";
    }
  };
  const auto placed = [&](const auto& x, const auto& y) {
    if (x.shape.kind() != y.shape.kind() || !Same(x.shape.radius(), y.shape.radius()) ||
        !Same(x.shape.half_height(), y.shape.half_height()) ||
        !Same(x.shape.half_extents(), y.shape.half_extents())) {
      out << "shape ";
    }
    if (!Same(x.pose.position, y.pose.position) || !Same(x.pose.rotation.x, y.pose.rotation.x) ||
        !Same(x.pose.rotation.y, y.pose.rotation.y) || !Same(x.pose.rotation.z, y.pose.rotation.z) ||
        !Same(x.pose.rotation.w, y.pose.rotation.w)) {
      out << "pose ";
    }
  };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        common(x, y);
        if constexpr (std::is_same_v<T, RayQuery>) {
          if (!Same(x.origin, y.origin) || !Same(x.translation, y.translation)) out << "ray ";
          if (x.all_hits != y.all_hits) out << "all_hits ";
        } else if constexpr (std::is_same_v<T, CastQuery>) {
          placed(x, y);
          if (!Same(x.translation, y.translation) || !Same(x.contact_offset, y.contact_offset) ||
              x.all_hits != y.all_hits || x.skip_started_contact != y.skip_started_contact) {
            out << "cast ";
          }
        } else if constexpr (std::is_same_v<T, OverlapQuery>) {
          placed(x, y);
          if (x.want_contact != y.want_contact) out << "want_contact ";
        } else {
          placed(x, y);
          if (!Same(x.displacement, y.displacement) || x.apply_to_id != y.apply_to_id ||
              !Same(x.settings.skin_width, y.settings.skin_width) ||
              x.settings.max_iterations != y.settings.max_iterations ||
              !Same(x.settings.step_height, y.settings.step_height)) {
            out << "move ";
          }
        }
      },
      a);
  return out.str();
}

// Seeded queries of every kind and option the packed form carries, and some
// it does not (at_tick, move settings: sent as messages).
// `at`: the at_tick of about one query in ten (none when unset).
std::vector<Query> MixedQueries(uint64_t seed, size_t n, std::optional<double> at_tick = 0.0) {
  std::mt19937_64 rng(seed);
  const auto u = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  const auto point = [&] { return Vec3{u(-20, 20), u(-2, 6), u(-20, 20)}; };
  const auto shape = [&]() -> Shape {
    switch (rng() % 5) {
      case 0: return *Shape::MakeSphere(u(0.2, 3));
      case 1: return *Shape::MakeBox({u(0.2, 2), u(0.2, 2), u(0.2, 2)});
      case 2: return *Shape::MakeCapsule(0.4, 0.5);  // shared by many: one table entry
      case 3: return *Shape::MakeCylinder(u(0.2, 2), u(0, 2));
      default: return *Shape::Make(ConvexHull{{{-1, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}}});
    }
  };
  const auto pose = [&] {
    if (rng() % 2 == 0) return Pose(point());
    Quat q(u(-1, 1), u(-1, 1), u(-1, 1), u(-1, 1));
    return Pose(point(), q.LengthSq() > 1e-6 ? q.Normalized() : Quat::Identity());
  };
  const auto filter = [&] {
    QueryFilter f;
    if (rng() % 3 == 0) f.mask = static_cast<uint32_t>(rng() % 8);
    if (rng() % 4 == 0) f.max_hits = static_cast<uint32_t>(1 + rng() % 3);
    for (uint64_t k = rng() % 3; k-- > 0;) f.ignore.push_back(loadgen::kArenaPlayerBase + rng() % 8);
    return f;
  };
  std::vector<Query> out;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t tag = rng() % 3 == 0 ? rng() : 0;
    const std::optional<double> at = rng() % 10 == 0 ? at_tick : std::nullopt;
    switch (rng() % 4) {
      case 0: {
        RayQuery q;
        q.origin = point();
        q.translation = Vec3{u(-30, 30), u(-10, 10), u(-30, 30)};
        q.filter = filter();
        q.all_hits = rng() % 3 == 0;
        q.tag = tag;
        q.at_tick = at;
        out.push_back(q);
        break;
      }
      case 1: {
        CastQuery q;
        q.shape = shape();
        q.pose = pose();
        q.translation = Vec3{u(-10, 10), u(-5, 5), u(-10, 10)};
        q.filter = filter();
        q.all_hits = rng() % 3 == 0;
        if (rng() % 3 == 0) q.contact_offset = u(0, 0.1);
        q.skip_started_contact = rng() % 4 == 0;
        q.tag = tag;
        q.at_tick = at;
        out.push_back(q);
        break;
      }
      case 2: {
        OverlapQuery q;
        q.shape = shape();
        q.pose = pose();
        q.filter = filter();
        q.want_contact = rng() % 2 == 0;
        q.tag = tag;
        q.at_tick = at;
        out.push_back(q);
        break;
      }
      default: {
        MoveQuery q;
        q.shape = *Shape::MakeCapsule(0.4, 0.5);
        q.pose = Pose(point());
        q.displacement = Vec3{u(-1, 1), -0.2, u(-1, 1)};
        q.filter = filter();
        if (rng() % 4 == 0) q.settings.step_height = 0.5;
        q.tag = tag;
        q.at_tick = at;
        out.push_back(q);
        break;
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Queries: packed and decoded again equal the message form's.

TEST(PackedQueries, RoundTripMatchesMessageForm) {
  const std::vector<Query> queries = MixedQueries(1, 400);
  std::vector<std::optional<uint64_t>> from(queries.size());
  for (size_t i = 0; i < queries.size(); i += 7) {
    if (!std::holds_alternative<RayQuery>(queries[i])) from[i] = 7;
  }
  v1::TickRequest req;
  wire::ToPacked(queries, from, req.mutable_packed(), req.mutable_queries());
  EXPECT_GT(req.queries_size(), 0);  // at_tick and settings went as messages
  EXPECT_LT(req.packed().shapes_size(), 300);  // the shared capsule is sent once per run
  // Through the wire bytes, as the server parses them.
  v1::TickRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(req.SerializeAsString()));
  std::vector<Query> back;
  std::vector<wire::ShapeFrom> shapes_from;
  const Status st = wire::FromPacked(parsed.packed(), parsed.queries(), &back, &shapes_from);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(back.size(), queries.size());
  size_t k = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    const Query want = ThroughMessage(queries[i], from[i].has_value());
    EXPECT_EQ(Diff(back[i], want), "") << "query " << i;
    if (from[i]) {
      ASSERT_LT(k, shapes_from.size());
      EXPECT_EQ(shapes_from[k].first, i);
      EXPECT_EQ(shapes_from[k].second, 7u);
      ++k;
    }
  }
  EXPECT_EQ(k, shapes_from.size());
}

// A tick whose queries all have a packed form sends no message.
TEST(PackedQueries, ArenaTickIsAllColumns) {
  const loadgen::ArenaOptions options;
  const loadgen::Arena arena = loadgen::GenerateArena(options);
  const std::vector<Query> queries = loadgen::ArenaTickQueries(arena, options, arena.spawn, 1);
  v1::TickRequest req;
  wire::ToPacked(queries, {}, req.mutable_packed(), req.mutable_queries());
  EXPECT_EQ(req.queries_size(), 0);
  EXPECT_EQ(req.packed().kinds_size(), static_cast<int>(queries.size()));
  EXPECT_EQ(req.packed().shapes_size(), 2);  // the players' capsule, the explosions' sphere
}

// A packed request and what its columns are first.
v1::PackedQueries ArenaPacked(size_t n = 397) {
  const loadgen::ArenaOptions options;
  const loadgen::Arena arena = loadgen::GenerateArena(options);
  std::vector<Query> queries = loadgen::ArenaTickQueries(arena, options, arena.spawn, 1);
  queries.resize(std::min(n, queries.size()));
  v1::TickRequest req;
  wire::ToPacked(queries, {}, req.mutable_packed(), req.mutable_queries());
  return req.packed();
}

Status Decode(const v1::PackedQueries& p, const Repeated<v1::Query>& messages = {}) {
  std::vector<Query> out;
  std::vector<wire::ShapeFrom> from;
  return wire::FromPacked(p, messages, &out, &from);
}

// Every malformed column is INVALID_ARGUMENT naming it.
TEST(PackedQueries, ValidationNamesTheColumn) {
  const v1::PackedQueries good = ArenaPacked();
  ASSERT_TRUE(Decode(good).ok());
  const auto expect = [&](const std::function<void(v1::PackedQueries*)>& breakit,
                          const std::string& message) {
    v1::PackedQueries p = good;
    breakit(&p);
    const Status st = Decode(p);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << message;
    EXPECT_NE(st.message().find(message), std::string::npos) << st.message();
  };
  // A dropped value of each column.
  expect([](auto* p) { p->mutable_casts()->mutable_translation()->RemoveLast(); },
         "packed.casts.translation: 191 values for 64 casts (3 each)");
  expect([](auto* p) { p->mutable_rays()->mutable_origin()->RemoveLast(); },
         "packed.rays.origin: 791 values for 264 rays (3 each)");
  expect([](auto* p) { p->mutable_rays()->mutable_translation()->Add(1.0); },
         "packed.rays.translation: 793 values for 264 rays");
  expect([](auto* p) { p->mutable_moves()->mutable_displacement()->RemoveLast(); },
         "packed.moves.displacement: 191 values for 64 moves");
  expect([](auto* p) { p->mutable_moves()->mutable_apply_to_id()->RemoveLast(); },
         "packed.moves.apply_to_id: 63 values for 64 moves with apply_to_id");
  expect([](auto* p) { p->mutable_position()->RemoveLast(); }, "packed.position: ");
  expect([](auto* p) { p->mutable_shape_index()->RemoveLast(); }, "packed.shape_index: ");
  expect([](auto* p) { p->mutable_ignore_ids()->RemoveLast(); }, "packed.ignore_ids: ");
  expect([](auto* p) { p->mutable_ignore_counts()->RemoveLast(); }, "packed.ignore_counts: ");
  expect([](auto* p) { p->mutable_masks()->RemoveLast(); }, "packed.masks: ");
  expect([](auto* p) { p->mutable_flags()->RemoveLast(); }, "packed.flags: ");
  expect([](auto* p) { p->add_tags(1); }, "packed.tags: 1 values for 397 packed queries");
  expect([](auto* p) { p->add_max_hits(1); }, "packed.max_hits: ");
  expect([](auto* p) { p->add_rotation(1); }, "packed.rotation: 1 values for 0 rotated queries");
  expect([](auto* p) { p->add_from_collider(1); }, "packed.from_collider: ");
  expect([](auto* p) { p->mutable_casts()->add_contact_offset(0.0); },
         "packed.casts.contact_offset: 1 values for 64 casts (or none)");
  // Bad values.
  expect([](auto* p) { p->mutable_rays()->set_origin(4, std::nan("")); },
         "packed.rays.origin[4] must be finite, got nan");
  expect([](auto* p) { p->mutable_casts()->set_translation(0, INFINITY); },
         "packed.casts.translation[0] must be finite, got inf");
  expect([](auto* p) { p->mutable_moves()->set_displacement(2, 2e9); },
         "packed.moves.displacement[2] must be within +-1e9 metres");
  expect([](auto* p) { p->set_position(1, -std::nan("")); }, "packed.position[1] must be finite");
  expect([](auto* p) { p->set_kinds(3, 9); }, "packed.kinds[3]: unknown kind 9");
  expect([](auto* p) { p->set_kinds(3, 0); }, "packed.kinds[3]: unknown kind 0");
  expect([](auto* p) { p->set_shape_index(0, 2); }, "packed.shape_index[0]: 2 is past the 2 shapes");
  expect([](auto* p) { p->set_flags(0, 64); }, "packed.flags[0]: flags 64 on a move");
  expect([](auto* p) { p->set_flags(200, 16); }, "packed.flags[200]: flags 16 on a ray");
  expect([](auto* p) { p->set_flags(200, 32); }, "packed.flags[200]: flags 32 on a ray");
  expect([](auto* p) { p->set_ignore_counts(0, 300); },
         "packed.ignore_counts[0]: 300 ignore ids, at most 256");
  expect([](auto* p) { p->mutable_shapes(0)->mutable_capsule()->set_radius(-1); },
         "packed.shapes[0].capsule.radius");
  expect([](auto* p) { p->mutable_shapes(0)->mutable_mesh(); },
         "packed.shapes[0]: a collider-only shape");
  expect([](auto* p) {
    p->set_flags(0, p->flags(0) | wire::kPackedRotated);
    for (double v : {0.0, 0.0, 0.0, 2.0}) p->add_rotation(v);
  }, "packed.rotation[0..]: quaternion norm 2 is not 1");
  expect([](auto* p) {
    p->set_flags(0, p->flags(0) | wire::kPackedRotated);
    for (double v : {0.0, std::nan(""), 0.0, 1.0}) p->add_rotation(v);
  }, "packed.rotation[0..] must be finite");
  expect([](auto* p) { p->mutable_casts()->mutable_contact_offset()->Resize(64, -1.0); },
         "packed.casts.contact_offset[0]: must be finite and in [0, 1000] metres, got -1");
  expect([](auto* p) { p->add_kinds(v1::PACKED_MESSAGE); },
         "packed.kinds: 1 PACKED_MESSAGE entries for 0 queries");
}

// A misaligned column (values shifted by one query) decodes to other queries:
// the round trip notices.
TEST(PackedQueries, MisalignedColumnChangesQueries) {
  const v1::PackedQueries good = ArenaPacked();
  std::vector<Query> a, b;
  std::vector<wire::ShapeFrom> from;
  ASSERT_TRUE(wire::FromPacked(good, {}, &a, &from).ok());
  v1::PackedQueries shifted = good;
  auto* origin = shifted.mutable_rays()->mutable_origin();
  std::rotate(origin->begin(), origin->begin() + 3, origin->end());
  ASSERT_TRUE(wire::FromPacked(shifted, {}, &b, &from).ok());
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += Diff(a[i], b[i]).empty() ? 0 : 1;
  EXPECT_EQ(differ, 264u);  // every ray
}

// ---------------------------------------------------------------------------
// Answers: packed and decoded again equal the message form's.

std::vector<QueryResult> SampleResults(const std::vector<Query>& queries, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto u = [&] { return std::uniform_real_distribution<double>(-5, 5)(rng); };
  const auto v = [&] { return Vec3{u(), u(), u()}; };
  std::vector<QueryResult> out(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    QueryResult& r = out[i];
    r.tag = std::visit([](const auto& q) { return q.tag; }, queries[i]);
    r.truncated = rng() % 5 == 0;
    if (std::holds_alternative<OverlapQuery>(queries[i])) {
      for (uint64_t k = rng() % 4; k-- > 0;) {
        OverlapHit h;
        h.id = rng();
        h.user_data = rng();
        h.sub_shape = static_cast<uint32_t>(rng());
        if (rng() % 2 == 0) h.contact = Contact{u(), v(), v(), v()};
        r.overlaps.push_back(h);
      }
    } else if (std::holds_alternative<MoveQuery>(queries[i])) {
      MoveResult m;
      m.position = v();
      m.displacement = v();
      m.on_ground = rng() % 2 == 0;
      m.ground_id = rng();
      m.ground_sub_shape = static_cast<uint32_t>(rng());
      m.ground_normal = m.on_ground ? v() : Vec3{};
      m.stepped = rng() % 2 == 0;
      m.blocked = rng() % 2 == 0;
      for (uint64_t k = rng() % 5; k-- > 0;) {
        m.contacts.push_back(MoveContact{rng(), static_cast<uint32_t>(rng()), v(), v()});
      }
      r.move = m;
    } else {
      for (uint64_t k = rng() % 3; k-- > 0;) {
        CastHit h;
        h.state = rng() % 2 == 0 ? CastState::kHit : CastState::kStartedOverlapping;
        h.fraction = u();
        h.normal = v();
        h.point = v();
        h.depth = -0.0;
        h.sub_shape = static_cast<uint32_t>(rng());
        h.id = rng();
        h.user_data = rng();
        r.hits.push_back(h);
      }
    }
  }
  return out;
}

TEST(PackedResults, RoundTripMatchesMessageForm) {
  const std::vector<Query> queries = MixedQueries(2, 300);
  const std::vector<QueryResult> results = SampleResults(queries, 3);
  v1::TickResponse resp;
  wire::ToPacked(queries, results, resp.mutable_packed());
  v1::TickResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(resp.SerializeAsString()));
  // Decoded into buffers holding answers of another tick: all overwritten.
  std::vector<QueryResult> back = SampleResults(MixedQueries(9, 300), 4);
  const Status st = wire::FromPacked(parsed.packed(), queries.size(), &back);
  ASSERT_TRUE(st.ok()) << st.message();
  for (size_t i = 0; i < queries.size(); ++i) {
    v1::QueryResult m;
    wire::ToProto(results[i], results[i].tag, &m);
    const QueryResult want = wire::ResultFromProto(m);
    EXPECT_EQ(Diff(back[i], want), "") << "result " << i;
  }
}

// A dropped or misaligned answer column is an error or a different answer.
TEST(PackedResults, DroppedOrMisalignedColumnIsNoticed) {
  const std::vector<Query> queries = MixedQueries(5, 200);
  const std::vector<QueryResult> results = SampleResults(queries, 6);
  v1::PackedResults good;
  wire::ToPacked(queries, results, &good);
  std::vector<QueryResult> out;
  ASSERT_TRUE(wire::FromPacked(good, queries.size(), &out).ok());
  const auto broken = [&](const std::function<void(v1::PackedResults*)>& f) {
    v1::PackedResults p = good;
    f(&p);
    return wire::FromPacked(p, queries.size(), &out);
  };
  EXPECT_EQ(broken([](auto* p) { p->mutable_hits()->mutable_point()->RemoveLast(); }).code(),
            ErrorCode::kInternal);
  EXPECT_EQ(broken([](auto* p) { p->mutable_hits()->mutable_counts()->RemoveLast(); }).code(),
            ErrorCode::kInternal);
  EXPECT_EQ(broken([](auto* p) { p->mutable_moves()->mutable_contact_id()->RemoveLast(); }).code(),
            ErrorCode::kInternal);
  EXPECT_EQ(broken([](auto* p) { p->mutable_overlaps()->mutable_contact_depth()->RemoveLast(); })
                .code(),
            ErrorCode::kInternal);
  EXPECT_EQ(broken([](auto* p) { p->mutable_moves()->mutable_flags()->RemoveLast(); }).code(),
            ErrorCode::kInternal);
  EXPECT_EQ(broken([](auto* p) { p->mutable_kinds()->RemoveLast(); }).code(), ErrorCode::kInternal);
  EXPECT_EQ(broken([](auto* p) { p->set_kinds(0, 1); }).code(), ErrorCode::kInternal);
  // Shifted by one hit: decodes, to other answers.
  ASSERT_TRUE(broken([](auto* p) {
                auto* f = p->mutable_hits()->mutable_fraction();
                std::rotate(f->begin(), f->begin() + 1, f->end());
              }).ok());
  size_t differ = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    v1::QueryResult m;
    wire::ToProto(results[i], results[i].tag, &m);
    differ += Diff(out[i], wire::ResultFromProto(m)).empty() ? 0 : 1;
  }
  EXPECT_GT(differ, 10u);
}

// Once its buffers are warm, a tick's packed round trip (the client's
// request, the server's decode with its kept PackedScratch, the server's
// answer, the client's decode into a kept result) allocates nothing: the
// per-tick cost the Tick stream's kept arenas and buffers are there for.
TEST(PackedTick, WarmTickEncodesAndDecodesWithoutAllocating) {
  if (!HITBOX_COUNT_MALLOC) GTEST_SKIP() << "malloc is the sanitizer's: not counted";
  const loadgen::ArenaOptions options;
  const loadgen::Arena arena = loadgen::GenerateArena(options);
  std::vector<std::optional<uint64_t>> from(options.players);  // the moves by collider id
  for (size_t p = 0; p < options.players; ++p) from[p] = loadgen::kArenaPlayerBase + p;
  wire::MessageArena client_out, server_in, server_out, client_in;
  std::string request_bytes, response_bytes;
  std::vector<Query> decoded;
  std::vector<wire::ShapeFrom> shapes_from;
  wire::PackedScratch scratch;
  std::vector<QueryResult> kept;
  for (uint64_t t = 1; t <= 6; ++t) {
    const std::vector<Query> queries = loadgen::ArenaTickQueries(arena, options, arena.spawn, t);
    from.resize(queries.size());
    const std::vector<QueryResult> results = SampleResults(queries, 3);
    t_allocations = 0;
    t_counting = t > 3;  // three ticks to warm the arenas' blocks and the buffers
    v1::TickRequest* req = client_out.Fresh<v1::TickRequest>();
    wire::ToPacked(queries, from, req->mutable_packed(), req->mutable_queries());
    req->set_packed_results(true);
    ASSERT_TRUE(req->SerializeToString(&request_bytes));
    v1::TickRequest* parsed = server_in.Fresh<v1::TickRequest>();
    ASSERT_TRUE(parsed->ParseFromString(request_bytes));
    const Status st =
        wire::FromPacked(parsed->packed(), parsed->queries(), &decoded, &shapes_from, &scratch);
    v1::TickResponse* resp = server_out.Fresh<v1::TickResponse>();
    wire::ToPacked(decoded, results, resp->mutable_packed());
    ASSERT_TRUE(resp->SerializeToString(&response_bytes));
    v1::TickResponse* answer = client_in.Fresh<v1::TickResponse>();
    ASSERT_TRUE(answer->ParseFromString(response_bytes));
    const Status back = wire::FromPacked(answer->packed(), queries.size(), &kept);
    t_counting = false;
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(back.ok()) << back.message();
    ASSERT_EQ(decoded.size(), queries.size());
    EXPECT_EQ(shapes_from.size(), options.players);
    EXPECT_EQ(parsed->packed().shapes_size(), 2);
    if (t > 3) {
      EXPECT_EQ(t_allocations, 0u) << "tick " << t;
    }
  }
}

// ---------------------------------------------------------------------------
// Through a server: the same ticks in both forms, answers bit for bit alike.

class PackedService : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.service.threads = 1;
    auto srv = server::HitboxServer::Start(options);
    ASSERT_TRUE(srv.ok()) << srv.status().ToString();
    srv_ = std::move(*srv);
    client_ = std::make_unique<Client>(srv_->InProcessChannel());
  }
  void TearDown() override {
    client_.reset();
    srv_->Shutdown(std::chrono::milliseconds(0));
    srv_->Wait();
  }
  std::unique_ptr<server::HitboxServer> srv_;
  std::unique_ptr<Client> client_;
};

// The message form, the packed form and a blocking stream (packed, on
// gRPC's synchronous API) answer the same ticks bit for bit.
TEST_F(PackedService, SameTicksEveryFormBitForBit) {
  const loadgen::ArenaOptions options;
  const loadgen::Arena arena = loadgen::GenerateArena(options);
  for (const char* id : {"message", "packed", "blocking"}) {
    ASSERT_TRUE(client_->CreateSession(id).ok());
    ASSERT_TRUE(client_->AddColliders(id, arena.colliders).ok());
  }
  TickStreamOptions message_form;
  message_form.packed = false;
  std::unique_ptr<TickStream> a = client_->OpenTickStream("message", message_form);
  std::unique_ptr<TickStream> b = client_->OpenTickStream("packed");
  TickStreamOptions blocking;
  blocking.blocking = true;
  std::unique_ptr<TickStream> c = client_->OpenTickStream("blocking", blocking);
  std::vector<Vec3> positions = arena.spawn;
  TickResult ra, rb, rc;  // kept from tick to tick, as a game does
  size_t hits = 0, moves_on_ground = 0;
  for (uint64_t t = 1; t <= 40; ++t) {
    std::vector<Query> queries = loadgen::ArenaTickQueries(arena, options, positions, t);
    const size_t players = positions.size();
    // Extra queries of every option; every third tick some sweeps by id.
    const std::optional<double> at =
        t > 1 ? std::optional<double>(static_cast<double>(t - 1) - (t > 2 && t % 2 == 0 ? 0.5 : 0.0))
              : std::nullopt;
    for (Query& q : MixedQueries(t, 60, at)) queries.push_back(std::move(q));
    std::vector<ShapeFromCollider> from;
    if (t % 3 == 0) {
      for (size_t k = 0; k < options.casts_per_tick; ++k) {
        from.push_back({players + k, loadgen::kArenaPlayerBase + loadgen::ArenaSweepPlayer(options, k)});
      }
    }
    const RpcStatus sa = a->TickInto({}, queries, from, &ra);
    const RpcStatus sb = b->TickInto({}, queries, from, &rb);
    const RpcStatus sc = c->TickInto({}, queries, from, &rc);
    ASSERT_TRUE(sa.ok()) << sa.ToString();
    ASSERT_TRUE(sb.ok()) << sb.ToString();
    ASSERT_TRUE(sc.ok()) << sc.ToString();
    EXPECT_EQ(ra.revision, rb.revision);
    EXPECT_EQ(rb.revision, rc.revision);
    ASSERT_EQ(ra.results.size(), queries.size());
    ASSERT_EQ(rb.results.size(), queries.size());
    ASSERT_EQ(rc.results.size(), queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      ASSERT_EQ(Diff(ra.results[i], rb.results[i]), "") << "tick " << t << " query " << i;
      ASSERT_EQ(Diff(rb.results[i], rc.results[i]), "") << "tick " << t << " query " << i;
      hits += ra.results[i].hits.size() + ra.results[i].overlaps.size();
    }
    for (size_t i = 0; i < players; ++i) {
      positions[i] = rb.results[i].move->position;
      moves_on_ground += rb.results[i].move->on_ground ? 1 : 0;
    }
  }
  EXPECT_GT(hits, 1000u);  // the comparison saw real answers
  EXPECT_GT(moves_on_ground, 100u);
  EXPECT_TRUE(a->Finish().ok());
  EXPECT_TRUE(b->Finish().ok());
  EXPECT_TRUE(c->Finish().ok());
}

// A malformed packed tick is refused in band, naming the column; the stream
// goes on and nothing stored changes (not even the tick's changes).
TEST_F(PackedService, BadPackedTickIsRefusedAndChangesNothing) {
  const loadgen::ArenaOptions options;
  const loadgen::Arena arena = loadgen::GenerateArena(options);
  ASSERT_TRUE(client_->CreateSession("s").ok());
  ASSERT_TRUE(client_->AddColliders("s", arena.colliders).ok());
  const uint64_t revision = client_->GetSession("s")->revision;
  std::unique_ptr<v1::Hitbox::Stub> stub = v1::Hitbox::NewStub(srv_->InProcessChannel());
  grpc::ClientContext ctx;
  auto stream = stub->Tick(&ctx);
  v1::TickRequest req;
  req.set_session_id("s");
  req.set_tick(1);
  req.set_packed_results(true);
  *req.mutable_packed() = ArenaPacked();
  req.mutable_packed()->mutable_rays()->set_translation(7, std::nan(""));
  // A change in the same tick: refused with the queries.
  v1::ColliderChange* c = req.add_changes();
  c->mutable_add()->set_id(42);
  c->mutable_add()->mutable_shape()->mutable_sphere()->set_radius(1);
  ASSERT_TRUE(stream->Write(req));
  v1::TickResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_EQ(resp.error().message(), "packed.rays.translation[7] must be finite, got nan");
  EXPECT_FALSE(resp.has_packed());
  // Too many queries: RESOURCE_EXHAUSTED before any decoding.
  req.mutable_packed()->mutable_rays()->set_translation(7, 1.0);
  req.mutable_packed()->mutable_kinds()->Resize(1 << 20, v1::PACKED_RAY);
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_NE(resp.error().message().find("packed.kinds: 1048576 queries, at most"),
            std::string::npos)
      << resp.error().message();
  EXPECT_EQ(client_->GetSession("s")->revision, revision);
  EXPECT_EQ(client_->GetSession("s")->collider_count, arena.colliders.size());
  // The stream goes on: a good packed tick, answered packed, moves applied.
  *req.mutable_packed() = ArenaPacked(64);
  req.clear_changes();
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_FALSE(resp.has_error()) << resp.error().message();
  EXPECT_EQ(resp.results_size(), 0);
  EXPECT_EQ(resp.packed().kinds_size(), 64);
  EXPECT_EQ(resp.packed().moves().position_size(), 64 * 3);
  // The same ticks without packed_results: QueryResult messages.
  req.set_packed_results(false);
  req.set_tick(2);
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_FALSE(resp.has_error()) << resp.error().message();
  EXPECT_EQ(resp.results_size(), 64);
  EXPECT_FALSE(resp.has_packed());
  EXPECT_GT(client_->GetSession("s")->revision, revision);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// Counts the TickRequests a channel sends, and those in the packed form.
class TickFormCounter final : public grpc::experimental::Interceptor {
 public:
  TickFormCounter(std::atomic<int>* ticks, std::atomic<int>* packed) : ticks_(ticks), packed_(packed) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      const auto* req = static_cast<const v1::TickRequest*>(methods->GetSendMessage());
      ++*ticks_;
      if (req != nullptr && req->has_packed()) ++*packed_;
    }
    methods->Proceed();
  }

 private:
  std::atomic<int>* ticks_;
  std::atomic<int>* packed_;
};

class TickFormCounterFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  TickFormCounterFactory(std::atomic<int>* ticks, std::atomic<int>* packed)
      : ticks_(ticks), packed_(packed) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    if (std::string_view(info->method()) != "/hitbox.v1.Hitbox/Tick") return nullptr;
    return new TickFormCounter(ticks_, packed_);
  }

 private:
  std::atomic<int>* ticks_;
  std::atomic<int>* packed_;
};

// hitboxd says it takes the packed form (GetServerInfo, to a session's token
// once tokens are enforced), so a default stream sends it; the same stream
// to a server that does not know the rpc sends messages (client_test.cc).
TEST(PackedServerInfo, HitboxdTakesPackedTicksAndDefaultStreamsSendThem) {
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.service.threads = 1;
  options.service.auth.admin_token = "admin-token-of-this-test";
  auto srv = server::HitboxServer::Start(options);
  ASSERT_TRUE(srv.ok()) << srv.status().ToString();
  std::string token;
  {
    ClientOptions admin;
    admin.token = options.service.auth.admin_token;
    Client client((*srv)->InProcessChannel(), admin);
    RpcResult<SessionInfo> created = client.CreateSession("s");
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    token = created->token;
    const loadgen::Arena arena = loadgen::GenerateArena(loadgen::ArenaOptions{});
    ASSERT_TRUE(client.AddColliders("s", arena.colliders).ok());
  }
  // No token: the rpc is refused as ListMaps is.
  std::unique_ptr<v1::Hitbox::Stub> stub = v1::Hitbox::NewStub((*srv)->InProcessChannel());
  {
    grpc::ClientContext ctx;
    v1::ServerInfo info;
    EXPECT_EQ(stub->GetServerInfo(&ctx, {}, &info).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token);
    v1::ServerInfo info;
    ASSERT_TRUE(stub->GetServerInfo(&ctx, {}, &info).ok());
    EXPECT_TRUE(info.packed_ticks());
  }
  std::atomic<int> ticks{0}, packed{0};
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> counters;
  counters.push_back(std::make_unique<TickFormCounterFactory>(&ticks, &packed));
  Client client(grpc::experimental::CreateCustomChannelWithInterceptors(
      "127.0.0.1:" + std::to_string((*srv)->port()), grpc::InsecureChannelCredentials(),
      grpc::ChannelArguments(), std::move(counters)));
  client.SetSessionToken("s", token);
  std::unique_ptr<TickStream> stream = client.OpenTickStream("s");
  const std::vector<Query> rays(5, RayQuery{{0, 2, 0}, {40, 0, 0}, {}, false});
  TickResult out;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->TickInto({}, rays, {}, &out).ok());
  ASSERT_EQ(out.results.size(), rays.size());
  EXPECT_EQ(ticks.load(), 3);
  EXPECT_EQ(packed.load(), 3);
  EXPECT_TRUE(stream->Finish().ok());
  (*srv)->Shutdown(std::chrono::milliseconds(0));
  (*srv)->Wait();
}

}  // namespace
}  // namespace hitbox
