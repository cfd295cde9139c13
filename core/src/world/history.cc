// Pose history of a ColliderSet: recording, window pruning, batch undo and
// placing colliders at a past (real-valued) tick.
#include "world/history.h"

#include <algorithm>
#include <cmath>

#include "hitbox/format.h"

namespace hitbox {

Quat Slerp(const Quat& q0, const Quat& q1_in, double s) {
  Quat q1 = q1_in;
  double c = q0.x * q1.x + q0.y * q1.y + q0.z * q1.z + q0.w * q1.w;
  if (c < 0.0) {
    q1 = Quat{-q1.x, -q1.y, -q1.z, -q1.w};
    c = -c;
  }
  if (c > 0.9995) {
    const double a = 1.0 - s;
    return Quat{a * q0.x + s * q1.x, a * q0.y + s * q1.y, a * q0.z + s * q1.z,
                a * q0.w + s * q1.w}
        .Normalized();
  }
  const double theta = std::acos(c);
  const double a = std::sin((1.0 - s) * theta);
  const double b = std::sin(s * theta);
  const double d = std::sin(theta);
  return Quat{(a * q0.x + b * q1.x) / d, (a * q0.y + b * q1.y) / d, (a * q0.z + b * q1.z) / d,
              (a * q0.w + b * q1.w) / d};
}

Pose InterpolatePose(const Pose& a, const Pose& b, double s) {
  if (a.position == b.position && a.rotation == b.rotation) return a;  // did not move
  const Vec3 p{a.position.x + s * (b.position.x - a.position.x),
               a.position.y + s * (b.position.y - a.position.y),
               a.position.z + s * (b.position.z - a.position.z)};
  return {p, Slerp(a.rotation, b.rotation, s)};
}

namespace internal {
namespace {

/// Slack of history boxes, as for the set's leaves (collider_set.cc).
constexpr double kBoxSlack = 1e-4;
/// Extra margin of a track's tree box, so that a few ticks of motion do not
/// touch the tree.
constexpr double kFatMargin = 0.5;

}  // namespace

TickRange History::Range() const {
  TickRange r;
  r.newest = newest_;
  r.oldest = newest_ - first_ + 1 > window_ ? newest_ - window_ + 1 : first_;
  return r;
}

Status History::CheckTick(uint64_t tick, const std::string& field) const {
  if (tick > kMaxTick) {
    return Status(ErrorCode::kInvalidArgument,
                  field + ": " + std::to_string(tick) + " is above the largest tick 2^53");
  }
  if (has_ticks_ && tick < newest_) {
    return Status(ErrorCode::kInvalidArgument,
                  field + ": " + std::to_string(tick) + " is lower than the session's newest tick " +
                      std::to_string(newest_) + " (ticks only increase)");
  }
  return Status::Ok();
}

bool History::InRange(double t) const {
  if (!has_ticks_) return false;
  const TickRange r = Range();
  return t >= static_cast<double>(r.oldest) && t <= static_cast<double>(r.newest);
}

Status History::CheckAt(double t, const std::string& field) const {
  if (!has_ticks_) {
    return Status(ErrorCode::kOutOfRange,
                  field + ": tick " + FormatDouble(t) +
                      " is not available: no tick recorded yet (changes carry no tick)");
  }
  if (InRange(t)) return Status::Ok();
  const TickRange r = Range();
  return Status(ErrorCode::kOutOfRange,
                field + ": tick " + FormatDouble(t) + " is outside the history: oldest tick " +
                    std::to_string(r.oldest) + ", newest tick " + std::to_string(r.newest));
}

void History::BeginBatch(std::optional<uint64_t> tick, uint64_t revision_before,
                         std::vector<uint64_t>* untracked) {
  BatchLog log;
  if (logs_.size() == 2) {
    log = std::move(logs_.front());
    logs_.erase(logs_.begin());
    log.ops.clear();
  }
  log.revision_before = revision_before;
  log.has_ticks = has_ticks_;
  log.first = first_;
  log.newest = newest_;
  if (tick && (!has_ticks_ || *tick > newest_)) {
    if (has_ticks_) {
      // Pruning relative to the newest committed tick keeps all an undo of
      // this batch needs; older logs may point at freed tracks: drop them.
      Prune(Range().oldest, untracked);
      // The new log keeps a dropped one's buffer: a tick per batch (the
      // server's Tick stream) then allocates no undo log in steady state.
      if (log.ops.capacity() == 0 && !logs_.empty()) {
        log.ops = std::move(logs_.back().ops);
        log.ops.clear();
      }
      logs_.clear();
    } else {
      first_ = *tick;
    }
    has_ticks_ = true;
    newest_ = *tick;
  }
  logs_.push_back(std::move(log));
}

uint32_t History::NewTrack(const Collider& c, uint64_t born, const Pose& first_pose,
                           uint64_t first_tick) {
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(tracks_.size());
    tracks_.emplace_back();
  }
  Track& t = tracks_[slot];
  t.collider = c;
  t.born = born;
  t.died = kAlive;
  t.samples.Reset(PoseSample{first_tick, first_pose});
  t.radius = RoundUp(c.shape.BoundingRadius());
  t.in_use = true;
  RecomputeBox(t);
  t.leaf = tree_.CreateLeaf(t.box.Expanded(kFatMargin), slot, c.layer);
  Log({UndoOp::kNewSlot, slot, c.id, 0, {}});
  return slot;
}

void History::FreeTrack(uint32_t slot) {
  Track& t = tracks_[slot];
  if (t.leaf != DynamicTree::kNull) tree_.DestroyLeaf(t.leaf);
  t = Track{};
  free_.push_back(slot);
}

void History::SetLive(uint64_t id, uint64_t slot) {
  const auto it = live_.find(id);
  Log({UndoOp::kLive, 0, id, it == live_.end() ? kNoSlot : it->second, {}});
  if (slot == kNoSlot) {
    if (it != live_.end()) live_.erase(it);
  } else {
    live_[id] = static_cast<uint32_t>(slot);
  }
}

void History::GrowBox(Track& t, const Pose& pose) {
  const double r = static_cast<double>(t.radius) + kBoxSlack;
  t.box = t.box.Union(Aabb{pose.position, pose.position}.Expanded(r));
}

void History::RecomputeBox(Track& t) {
  t.box = Aabb{};
  for (size_t i = 0; i < t.samples.size(); ++i) GrowBox(t, t.samples[i].pose);
  t.box_tick = newest_;
}

void History::SetPose(uint32_t slot, const Pose& pose) {
  Track& t = tracks_[slot];
  const Vec3 from = t.samples.back().pose.position;
  if (t.samples.back().tick == newest_) {
    Log({UndoOp::kSetSample, slot, t.collider.id, 0, t.samples.back()});
    t.samples.back().pose = pose;
  } else {
    Log({UndoOp::kPopSample, slot, t.collider.id, 0, {}});
    t.samples.PushBack({newest_, pose});
  }
  GrowBox(t, pose);
  // The box grows with the collider's path over the window: reach ahead, as
  // the set's moved leaves do.
  if (!tree_.LeafContains(t.leaf, t.box)) {
    tree_.MoveLeaf(t.leaf, FatBoxAhead(t.box, kFatMargin, pose.position - from));
  }
}

void History::OnAdd(const Collider& c) {
  if (!Tracking()) return;
  SetLive(c.id, NewTrack(c, newest_, c.pose, newest_));
}

void History::OnMove(const Collider& now, const Pose& before) {
  auto it = live_.find(now.id);
  if (it == live_.end()) {
    if (!Tracking()) return;
    // First change inside the window: it was at `before` all along.
    const uint32_t slot = NewTrack(now, 0, before, 0);
    SetLive(now.id, slot);
    it = live_.find(now.id);
  }
  SetPose(it->second, now.pose);
}

void History::OnRemove(const Collider& before) {
  auto it = live_.find(before.id);
  if (it == live_.end()) {
    if (!Tracking()) return;
    const uint32_t slot = NewTrack(before, 0, before.pose, 0);
    SetLive(before.id, slot);
    it = live_.find(before.id);
  }
  const uint32_t slot = it->second;
  Log({UndoOp::kDied, slot, before.id, tracks_[slot].died, {}});
  tracks_[slot].died = newest_;
  SetLive(before.id, kNoSlot);
}

void History::Prune(uint64_t oldest, std::vector<uint64_t>* untracked) {
  for (uint32_t slot = 0; slot < tracks_.size(); ++slot) {
    Track& t = tracks_[slot];
    if (!t.in_use) continue;
    if (t.died != kAlive && t.died <= oldest) {
      FreeTrack(slot);
      continue;
    }
    // Keep the last sample at or before `oldest` (the pose then) and the later ones.
    const size_t at_or_before = t.samples.CountAtOrBefore(oldest);
    if (at_or_before > 1) t.samples.DropFront(at_or_before - 1);
    if (t.died == kAlive && t.samples.size() == 1 && t.born <= oldest) {
      // Unchanged over the whole window: the set's copy is exact again.
      untracked->push_back(t.collider.id);
      live_.erase(t.collider.id);
      FreeTrack(slot);
      continue;
    }
    if (newest_ - t.box_tick >= window_) {
      RecomputeBox(t);
      tree_.MoveLeaf(t.leaf, t.box.Expanded(kFatMargin));
    }
  }
}

void History::UndoTo(uint64_t revision, std::vector<uint64_t>* touched) {
  while (!logs_.empty() && logs_.back().revision_before >= revision) {
    BatchLog& log = logs_.back();
    for (auto op = log.ops.rbegin(); op != log.ops.rend(); ++op) {
      switch (op->kind) {
        case UndoOp::kPopSample: tracks_[op->slot].samples.PopBack(); break;
        case UndoOp::kSetSample: tracks_[op->slot].samples.back() = op->sample; break;
        case UndoOp::kDied: tracks_[op->slot].died = op->value; break;
        case UndoOp::kNewSlot: FreeTrack(op->slot); break;
        case UndoOp::kLive:
          if (op->value == kNoSlot) {
            live_.erase(op->id);
          } else {
            live_[op->id] = static_cast<uint32_t>(op->value);
          }
          touched->push_back(op->id);
          break;
      }
    }
    has_ticks_ = log.has_ticks;
    first_ = log.first;
    newest_ = log.newest;
    logs_.pop_back();
  }
}

void History::PlaceAt(uint32_t slot, double at, const Reach& reach,
                      PlacedColliders* out) const {
  const Track& t = tracks_[slot];
  const double kf = std::floor(at);
  const uint64_t k = static_cast<uint64_t>(kf);
  const auto sample_at = [&t](uint64_t tick) -> const Pose& {
    return t.samples[t.samples.CountAtOrBefore(tick) - 1].pose;
  };
  const bool exact = at == kf;
  if (exact ? !(t.born <= k && k < t.died) : !(t.born <= k && k + 1 < t.died)) return;
  const Pose& p0 = sample_at(k);
  const Pose* p1 = exact ? &p0 : &sample_at(k + 1);
  const bool still = exact || (p0.position == p1->position && p0.rotation == p1->rotation);
  const double s = at - kf;
  const Vec3 position =
      still ? p0.position
            : Vec3{p0.position.x + s * (p1->position.x - p0.position.x),
                   p0.position.y + s * (p1->position.y - p0.position.y),
                   p0.position.z + s * (p1->position.z - p0.position.z)};
  // Cull by the bounding sphere before the rotation (slerp) is computed.
  const double dd = Dot(reach.d, reach.d);
  const Vec3 m = position - reach.from;
  const double u = dd > 0.0 ? std::clamp(Dot(m, reach.d) / dd, 0.0, 1.0) : 0.0;
  const double r = reach.radius + static_cast<double>(t.radius) + 1e-3;
  if ((m - reach.d * u).LengthSq() > r * r) return;
  out->colliders.push_back(t.collider);
  Pose& pose = out->colliders.back().pose;
  if (still) {
    pose = p0;  // exactly as the set held it then
  } else {
    // As a set holding the interpolated pose would: normalized once more.
    pose = InterpolatePose(p0, *p1, s);
    pose.rotation = pose.rotation.Normalized();
  }
  out->radius.push_back(t.radius);
}

void History::PlaceInBox(double t, const FloatAabb& box, uint32_t mask, const Reach& reach,
                         PlacedColliders* out) const {
  QueryTree(tree_, box, mask, [&](uint32_t slot, uint32_t) { PlaceAt(slot, t, reach, out); });
}

size_t History::SampleCount() const {
  size_t n = 0;
  for (const Track& t : tracks_) n += t.samples.size();
  return n;
}

size_t History::MemoryBytes() const {
  size_t bytes = tracks_.capacity() * sizeof(Track) + free_.capacity() * sizeof(uint32_t) +
                 tree_.MemoryBytes() +
                 (live_.empty() ? 0 : live_.bucket_count() * sizeof(void*)) +
                 live_.size() * (sizeof(std::pair<uint64_t, uint32_t>) + 2 * sizeof(void*));
  for (const Track& t : tracks_) {
    bytes += t.samples.capacity() * sizeof(PoseSample) + t.collider.shape.DataBytes();
  }
  for (const BatchLog& l : logs_) bytes += l.ops.capacity() * sizeof(UndoOp);
  return bytes;
}

}  // namespace internal
}  // namespace hitbox
