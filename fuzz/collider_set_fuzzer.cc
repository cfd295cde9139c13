// Fuzz target: change batches and queries on a core ColliderSet, decoded from
// the bytes (ByteReader: ids from a small space so changes collide, doubles
// from a table of extremes or raw bits). Checks after every step:
//  - Apply / AddBulk either fail and leave the set exactly as it was (revision,
//    size, every collider, TreeValidate()), or succeed and the set equals a
//    std::map model of it; batches whose inputs are all in a plausible range
//    succeed exactly when the model says the ids allow it;
//  - batches may carry ticks (a history of 4), and some queries rewind: they
//    answer as the same query on a set built from ForEachAtTick's world;
//  - query results obey the filter, max_hits, sorting and [0, 1] fractions,
//    RunBatch equals one-by-one Run, and every output field is finite when
//    the set and the query are within the checked range (fuzz_util.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <map>
#include <variant>
#include <vector>

#include "fuzz_util.h"
#include "hitbox/world/collider_set.h"

namespace hitbox::fuzz {
namespace {

// HITBOX_FUZZ_TRACE=1: print every decoded step (to read a reproducer).
const bool kTrace = std::getenv("HITBOX_FUZZ_TRACE") != nullptr;

const char* KindName(ColliderChange::Kind k) {
  switch (k) {
    case ColliderChange::Kind::kAdd: return "add";
    case ColliderChange::Kind::kReplace: return "replace";
    case ColliderChange::Kind::kMove: return "move";
    default: return "remove";
  }
}

void Trace(const Collider& c, const char* what) {
  if (!kTrace) return;
  std::fprintf(stderr, "  %s id=%llu %s pose=%s layer=%u\n", what, (unsigned long long)c.id,
               c.shape.ToString().c_str(), ToString(c.pose).c_str(), c.layer);
}

void Trace(const Query& q) {
  if (!kTrace) return;
  if (const auto* o = std::get_if<OverlapQuery>(&q)) {
    std::fprintf(stderr, "  overlap %s pose=%s contact=%d\n", o->shape.ToString().c_str(),
                 ToString(o->pose).c_str(), o->want_contact);
  } else if (const auto* c = std::get_if<CastQuery>(&q)) {
    std::fprintf(stderr, "  cast %s pose=%s translation=%s all=%d\n", c->shape.ToString().c_str(),
                 ToString(c->pose).c_str(), ToString(c->translation).c_str(), c->all_hits);
  } else {
    const auto& r = std::get<RayQuery>(q);
    std::fprintf(stderr, "  ray origin=%s translation=%s all=%d\n", ToString(r.origin).c_str(),
                 ToString(r.translation).c_str(), r.all_hits);
  }
}

constexpr int kMaxOps = 48;
constexpr size_t kMaxBatch = 24;

struct Model {
  std::map<uint64_t, Collider> colliders;
  uint64_t revision = 0;
};

uint64_t ReadId(ByteReader& in) {
  const uint8_t b = in.U8();
  // Mostly a small id space so changes hit existing colliders; sometimes any id.
  return (b & 0xC0) == 0xC0 ? in.U64() : static_cast<uint64_t>(b & 0x1F);
}

Collider ReadCollider(ByteReader& in, bool* plausible) {
  Collider c;
  c.id = ReadId(in);
  bool valid = false;
  c.shape = in.ReadShape(&valid);
  c.pose = in.ReadPose();
  const uint8_t layer = in.U8();
  c.layer = layer < 0xF0 ? layer % 32 : layer;  // sometimes > 31
  c.user_data = in.U64();
  *plausible = valid && c.layer <= kMaxLayer && InCheckedRange(c.shape) && InCheckedRange(c.pose) &&
               c.pose.rotation.IsFinite() && c.pose.rotation.IsNormalized(1e-9);
  return c;
}

bool ModelPlausible(const Model& m) {
  for (const auto& [id, c] : m.colliders) {
    if (!InCheckedRange(c.shape) || !InCheckedRange(c.pose)) return false;
  }
  return true;
}

void CheckSetEqualsModel(const ColliderSet& set, const Model& m) {
  HITBOX_FUZZ_CHECK(set.revision() == m.revision, "revision %llu, model %llu",
                    (unsigned long long)set.revision(), (unsigned long long)m.revision);
  HITBOX_FUZZ_CHECK(set.size() == m.colliders.size(), "size %zu, model %zu", set.size(),
                    m.colliders.size());
  for (const auto& [id, want] : m.colliders) {
    const Collider* got = set.Find(id);
    HITBOX_FUZZ_CHECK(got != nullptr, "collider %llu missing", (unsigned long long)id);
    HITBOX_FUZZ_CHECK(got->shape == want.shape && got->layer == want.layer &&
                          got->user_data == want.user_data,
                      "collider %llu differs from the model", (unsigned long long)id);
    HITBOX_FUZZ_CHECK(got->pose.position == want.pose.position, "collider %llu moved",
                      (unsigned long long)id);
  }
  size_t visited = 0;
  set.ForEach([&](const Collider& c) {
    ++visited;
    HITBOX_FUZZ_CHECK(m.colliders.count(c.id) == 1, "unexpected collider %llu",
                      (unsigned long long)c.id);
  });
  HITBOX_FUZZ_CHECK(visited == m.colliders.size(), "ForEach visited %zu", visited);
  const std::string tree = set.TreeValidate();
  HITBOX_FUZZ_CHECK(tree.empty(), "TreeValidate: %s", tree.c_str());
}

// Applies a batch to the model: false (and the model unchanged) when an id
// rule rejects it.
bool ModelApply(Model* m, const std::vector<ColliderChange>& changes) {
  std::map<uint64_t, Collider> next = m->colliders;
  for (const ColliderChange& ch : changes) {
    const uint64_t id = ch.collider.id;
    const bool exists = next.count(id) == 1;
    switch (ch.kind) {
      case ColliderChange::Kind::kAdd:
        if (exists) return false;
        next[id] = ch.collider;
        break;
      case ColliderChange::Kind::kReplace:
        if (!exists) return false;
        next[id] = ch.collider;
        break;
      case ColliderChange::Kind::kMove:
        if (!exists) return false;
        next[id].pose = ch.collider.pose;
        break;
      case ColliderChange::Kind::kRemove:
        if (!exists) return false;
        next.erase(id);
        break;
      case ColliderChange::Kind::kAddWatch:
      case ColliderChange::Kind::kRemoveWatch:
        return false;  // the fuzzer makes no watch changes
    }
  }
  m->colliders = std::move(next);
  ++m->revision;
  return true;
}

QueryFilter ReadFilter(ByteReader& in) {
  QueryFilter f;
  const uint8_t mode = in.U8();
  f.mask = (mode & 1) ? in.U32() : 0xFFFFFFFFu;
  const int ignored = (mode >> 1) & 3;
  for (int i = 0; i < ignored; ++i) f.ignore.push_back(ReadId(in));
  f.max_hits = (mode & 8) ? in.U8() % 8 : 0;
  return f;
}

// A query and whether its sizes and coordinates are in the checked range.
Query ReadQuery(ByteReader& in, bool* plausible) {
  bool valid = false;
  switch (in.U8() % 3) {
    case 0: {
      OverlapQuery q;
      q.shape = in.ReadShape(&valid);
      q.pose = in.ReadPose();
      q.filter = ReadFilter(in);
      q.want_contact = in.Bool();
      *plausible = InCheckedRange(q.shape) && InCheckedRange(q.pose);
      return q;
    }
    case 1: {
      CastQuery q;
      q.shape = in.ReadShape(&valid);
      q.pose = in.ReadPose();
      q.translation = in.ReadVec3();
      q.filter = ReadFilter(in);
      q.all_hits = in.Bool();
      *plausible = InCheckedRange(q.shape) && InCheckedRange(q.pose) && InCheckedCoord(q.translation);
      return q;
    }
    default: {
      RayQuery q;
      q.origin = in.ReadVec3();
      q.translation = in.ReadVec3();
      q.filter = ReadFilter(in);
      q.all_hits = in.Bool();
      *plausible = InCheckedCoord(q.origin) && InCheckedCoord(q.translation);
      return q;
    }
  }
}

const QueryFilter& FilterOf(const Query& q) {
  if (const auto* o = std::get_if<OverlapQuery>(&q)) return o->filter;
  if (const auto* c = std::get_if<CastQuery>(&q)) return c->filter;
  return std::get<RayQuery>(q).filter;
}

void CheckHitOwner(const ColliderSet& set, const QueryFilter& f, uint64_t id, uint64_t user_data) {
  const Collider* c = set.Find(id);
  HITBOX_FUZZ_CHECK(c != nullptr, "hit on unknown collider %llu", (unsigned long long)id);
  HITBOX_FUZZ_CHECK(c->user_data == user_data, "user_data of %llu", (unsigned long long)id);
  HITBOX_FUZZ_CHECK(f.Accepts(id, c->layer), "hit %llu not accepted by the filter",
                    (unsigned long long)id);
}

// `rewound` (at_tick): hits may name colliders removed or replaced since,
// whose owners the present set no longer knows.
void CheckResult(const ColliderSet& set, const Query& q, const QueryResult& r, bool check_finite,
                 bool rewound) {
  const QueryFilter& f = FilterOf(q);
  if (std::holds_alternative<OverlapQuery>(q)) {
    const bool want_contact = std::get<OverlapQuery>(q).want_contact;
    HITBOX_FUZZ_CHECK(r.hits.empty(), "overlap query returned cast hits");
    if (f.max_hits != 0) HITBOX_FUZZ_CHECK(r.overlaps.size() <= f.max_hits, "max_hits exceeded");
    for (size_t i = 0; i < r.overlaps.size(); ++i) {
      const OverlapHit& h = r.overlaps[i];
      if (!rewound) CheckHitOwner(set, f, h.id, h.user_data);
      if (i > 0) HITBOX_FUZZ_CHECK(r.overlaps[i - 1].id < h.id, "overlaps not sorted by id");
      HITBOX_FUZZ_CHECK(h.contact.has_value() == want_contact, "contact presence");
      if (h.contact && check_finite) {
        const Contact& c = *h.contact;
        HITBOX_FUZZ_CHECK(Finite(c.depth) && Finite(c.normal) && Finite(c.point_a) &&
                              Finite(c.point_b),
                          "non-finite contact on %llu: depth %g normal %s a %s b %s",
                          (unsigned long long)h.id, c.depth, ToString(c.normal).c_str(),
                          ToString(c.point_a).c_str(), ToString(c.point_b).c_str());
        HITBOX_FUZZ_CHECK(c.depth >= 0.0, "negative depth %g", c.depth);
      }
    }
    return;
  }
  const bool all_hits = std::holds_alternative<CastQuery>(q) ? std::get<CastQuery>(q).all_hits
                                                             : std::get<RayQuery>(q).all_hits;
  HITBOX_FUZZ_CHECK(r.overlaps.empty(), "cast query returned overlaps");
  if (!all_hits) HITBOX_FUZZ_CHECK(r.hits.size() <= 1, "closest-hit query returned %zu", r.hits.size());
  if (f.max_hits != 0) HITBOX_FUZZ_CHECK(r.hits.size() <= f.max_hits, "max_hits exceeded");
  for (size_t i = 0; i < r.hits.size(); ++i) {
    const CastHit& h = r.hits[i];
    if (!rewound) CheckHitOwner(set, f, h.id, h.user_data);
    // Always, whatever the inputs: core refuses sizes and coordinates beyond
    // the validated ranges (the huge-size NaN fractions of the first runs).
    HITBOX_FUZZ_CHECK(h.fraction >= 0.0 && h.fraction <= 1.0, "fraction %.17g", h.fraction);
    if (i > 0) {
      const CastHit& p = r.hits[i - 1];
      HITBOX_FUZZ_CHECK(p.fraction < h.fraction || (p.fraction == h.fraction && p.id < h.id),
                        "hits not sorted by (fraction, id)");
    }
    if (h.started_overlapping()) HITBOX_FUZZ_CHECK(h.fraction == 0.0, "started inside at %g", h.fraction);
    if (check_finite) {
      HITBOX_FUZZ_CHECK(Finite(h.normal) && Finite(h.point) && Finite(h.depth),
                        "non-finite cast hit on %llu: fraction %.17g normal %s point %s depth %g",
                        (unsigned long long)h.id, h.fraction, ToString(h.normal).c_str(),
                        ToString(h.point).c_str(), h.depth);
      HITBOX_FUZZ_CHECK(h.depth >= 0.0, "negative depth %g", h.depth);
    }
  }
}

bool SameResult(const QueryResult& a, const QueryResult& b) {
  if (a.overlaps.size() != b.overlaps.size() || a.hits.size() != b.hits.size()) return false;
  for (size_t i = 0; i < a.overlaps.size(); ++i) {
    if (a.overlaps[i].id != b.overlaps[i].id) return false;
  }
  for (size_t i = 0; i < a.hits.size(); ++i) {
    if (a.hits[i].id != b.hits[i].id) return false;
    // NaN-safe bitwise comparison: the same query must give the same answer.
    if (std::memcmp(&a.hits[i].fraction, &b.hits[i].fraction, sizeof(double)) != 0) return false;
  }
  return true;
}

bool SamePoseBits(const Pose& a, const Pose& b) {
  const double pa[7] = {a.position.x, a.position.y, a.position.z, a.rotation.x,
                        a.rotation.y, a.rotation.z, a.rotation.w};
  const double pb[7] = {b.position.x, b.position.y, b.position.z, b.rotation.x,
                        b.rotation.y, b.rotation.z, b.rotation.w};
  return std::memcmp(pa, pb, sizeof(pa)) == 0;
}

// A rewound query answers as the same query in the present of a set built
// from ForEachAtTick's world at that tick (the poses history places), when
// that set stores those poses bit for bit (it normalizes rotations).
void CheckRewoundEqualsRebuilt(const ColliderSet& set, const Query& q, const QueryResult& got,
                               bool set_plausible) {
  const double t = *std::visit([](const auto& x) { return x.at_tick; }, q);
  std::vector<Collider> world;
  std::map<uint64_t, int> seen;
  const Status listed = set.ForEachAtTick(t, [&](const Collider& c) {
    world.push_back(c);
    ++seen[c.id];
  });
  HITBOX_FUZZ_CHECK(listed.ok(), "ForEachAtTick(%.17g): %s", t, listed.ToString().c_str());
  for (const auto& [id, count] : seen) {
    HITBOX_FUZZ_CHECK(count == 1, "collider %llu listed %d times at tick %.17g",
                      (unsigned long long)id, count, t);
  }
  ColliderSet rebuilt;
  const Status added = rebuilt.AddBulk(world);
  if (!set_plausible && !added.ok()) return;
  HITBOX_FUZZ_CHECK(added.ok(), "the world at tick %.17g does not load: %s", t,
                    added.ToString().c_str());
  for (const Collider& c : world) {
    if (!SamePoseBits(rebuilt.Find(c.id)->pose, c.pose)) return;  // not comparable bit for bit
  }
  Query present = q;
  std::visit([](auto& x) { x.at_tick.reset(); }, present);
  QueryResult want;
  rebuilt.Run(present, &want);
  HITBOX_FUZZ_CHECK(SameResult(got, want),
                    "rewound to %.17g: %zu hits / %zu overlaps, the world rebuilt there %zu / %zu",
                    t, got.hits.size(), got.overlaps.size(), want.hits.size(),
                    want.overlaps.size());
}

}  // namespace
}  // namespace hitbox::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hitbox;
  using namespace hitbox::fuzz;
  ByteReader in(data, size);
  ColliderSet set;
  // A short history: batches of op 2 carry ticks, so a few of them reach its
  // prune, and op 6 rewinds some of its queries.
  set.SetHistoryTicks(4);
  uint64_t next_tick = 1;
  Model model;
  for (int op = 0; op < kMaxOps && !in.empty(); ++op) {
    const int op_kind = in.U8() % 8;
    switch (op_kind) {
      case 0:
      case 1:
      case 2: {  // Apply a change batch.
        const size_t n = in.U8() % kMaxBatch;
        std::vector<ColliderChange> changes;
        bool plausible = true;
        for (size_t i = 0; i < n; ++i) {
          const uint8_t kind = in.U8() % 4;
          bool ok = true;
          Collider c = ReadCollider(in, &ok);
          switch (kind) {
            case 0: changes.push_back(ColliderChange::Add(c)); break;
            case 1: changes.push_back(ColliderChange::Replace(c)); break;
            case 2:
              changes.push_back(ColliderChange::Move(c.id, c.pose));
              ok = InCheckedRange(c.pose) && c.pose.rotation.IsFinite() &&
                   c.pose.rotation.IsNormalized(1e-9);
              break;
            default: changes.push_back(ColliderChange::Remove(c.id)); ok = true; break;
          }
          plausible = plausible && ok;
        }
        for (const ColliderChange& ch : changes) Trace(ch.collider, KindName(ch.kind));
        const Status s = op_kind == 2 ? set.Apply(changes, next_tick++) : set.Apply(changes);
        if (kTrace) std::fprintf(stderr, "apply: %s\n", s.ToString().c_str());
        Model predicted = model;
        const bool model_ok = ModelApply(&predicted, changes);
        if (plausible) {
          HITBOX_FUZZ_CHECK(s.ok() == model_ok, "Apply: %s, the model says %s",
                            s.ToString().c_str(), model_ok ? "ok" : "rejected");
        }
        if (s.ok()) {
          HITBOX_FUZZ_CHECK(model_ok, "Apply accepted a batch the id rules reject");
          model = std::move(predicted);
        }
        CheckSetEqualsModel(set, model);
        break;
      }
      case 3: {  // AddBulk.
        const size_t n = in.U8() % kMaxBatch;
        std::vector<Collider> colliders;
        bool plausible = true;
        for (size_t i = 0; i < n; ++i) {
          bool ok = true;
          colliders.push_back(ReadCollider(in, &ok));
          plausible = plausible && ok;
        }
        std::vector<ColliderChange> as_changes;
        for (const Collider& c : colliders) as_changes.push_back(ColliderChange::Add(c));
        Model predicted = model;
        const bool model_ok = ModelApply(&predicted, as_changes);
        for (const Collider& c : colliders) Trace(c, "bulk");
        const Status s = set.AddBulk(colliders);
        if (kTrace) std::fprintf(stderr, "add bulk: %s\n", s.ToString().c_str());
        if (plausible) {
          HITBOX_FUZZ_CHECK(s.ok() == model_ok, "AddBulk: %s, the model says %s",
                            s.ToString().c_str(), model_ok ? "ok" : "rejected");
        }
        if (s.ok()) {
          HITBOX_FUZZ_CHECK(model_ok, "AddBulk accepted a batch the id rules reject");
          model = std::move(predicted);
        }
        CheckSetEqualsModel(set, model);
        break;
      }
      case 4:
      case 5:
      case 6: {  // A batch of queries, run one by one and as a batch.
        const size_t n = 1 + in.U8() % 4;
        std::vector<Query> queries;
        std::vector<bool> plausible;
        for (size_t i = 0; i < n; ++i) {
          bool p = true;
          Query q = ReadQuery(in, &p);
          if (!ColliderSet::ValidateQuery(q).ok()) continue;  // the server rejects these
          if (const auto ticks = set.Ticks(); op_kind == 6 && ticks && i % 2 == 1) {
            // At a tick of the window, whole or between two.
            const double newest = static_cast<double>(ticks->newest);
            const double at = std::max(static_cast<double>(ticks->oldest),
                                       newest - 0.75 * static_cast<double>(i));
            std::visit([at](auto& x) { x.at_tick = at; }, q);
          }
          queries.push_back(std::move(q));
          plausible.push_back(p);
        }
        const bool set_plausible = ModelPlausible(model);
        std::vector<QueryResult> one(queries.size());
        for (size_t i = 0; i < queries.size(); ++i) {
          Trace(queries[i]);
          set.Run(queries[i], &one[i]);
          const bool rewound =
              std::visit([](const auto& x) { return x.at_tick.has_value(); }, queries[i]);
          CheckResult(set, queries[i], one[i], set_plausible && plausible[i], rewound);
          if (rewound) CheckRewoundEqualsRebuilt(set, queries[i], one[i], set_plausible);
        }
        std::vector<QueryResult> batch(queries.size());
        set.RunBatch(queries, batch);
        for (size_t i = 0; i < queries.size(); ++i) {
          HITBOX_FUZZ_CHECK(SameResult(one[i], batch[i]), "RunBatch differs from Run on query %zu", i);
        }
        if (set_plausible && set.size() > 0) {
          const Aabb b = set.Bounds();
          HITBOX_FUZZ_CHECK(Finite(b.min) && Finite(b.max), "non-finite Bounds()");
        }
        break;
      }
      default: {  // Rebuild the tree; answers and contents must not change.
        if (kTrace) std::fprintf(stderr, "rebuild\n");
        set.RebuildTree();
        CheckSetEqualsModel(set, model);
        const auto stats = set.GetTreeStats();
        (void)stats;
        (void)set.MemoryBytes();
        break;
      }
    }
  }
  return 0;
}
