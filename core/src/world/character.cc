// Collide-and-slide character movement (see character.h): lift out of ground
// that rose into the shape, then slide (sweep, stop `skin` short, clip the
// motion against the planes met as Quake's PM_SlideMove; Fauerby 2003), step
// up over walls when on the ground, and snap down to walkable ground. Walls
// steeper than max_slope_degrees act as vertical, so walking never climbs them.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "world/character_internal.h"

namespace hitbox::internal {
namespace {

/// Motion shorter than this (metres) ends a pass.
constexpr double kMinMove = 1e-9;
/// A hit closer than skin * (1 + kSkinSlack) along its normal is "at the
/// skin" already: the shape does not move towards it (so a shape resting at
/// the skin keeps its position bit for bit despite the sweep's tolerance).
constexpr double kSkinSlack = 0.1;
/// Most lifts out of ground that rose into the shape (LiftAndProbe).
constexpr int kMaxLifts = 4;
/// Most planes one slide pass remembers (more are a corner anyway).
constexpr int kMaxPlanes = 8;
/// Two plane normals closer than this (1 - cos) are the same plane.
constexpr double kSamePlane = 1e-9;
/// Horizontal progress shorter than asked by more than this (m) is "blocked".
constexpr double kBlockedTolerance = 1e-6;
/// Below this length a crease direction is degenerate (parallel planes).
constexpr double kMinCrease = 1e-9;
/// Radians per degree.
constexpr double kRadiansPerDegree = 0.017453292519943295;

/// What a slide pass met.
struct PassInfo {
  /// A non-walkable surface took motion away.
  bool wall = false;
  /// The motion was stopped (corner, turned back, or the iteration cap).
  bool stopped = false;
};

class Mover {
 public:
  Mover(const MoveQuery& q, MoveWorld& world) : q_(q), world_(world) {
    const MoveSettings& s = q.settings;
    up_ = UnitOf(s.up);
    skin_ = s.skin_width;
    // A hair of slack so a surface exactly at the limit counts as walkable.
    // The last slope's cosine is kept: a game's moves share their settings.
    thread_local double last_slope = 0.0, last_cos = 1.0;  // cos(0) = 1
    const double slope = s.max_slope_degrees * kRadiansPerDegree;
    if (std::bit_cast<uint64_t>(slope) != std::bit_cast<uint64_t>(last_slope)) {
      last_slope = slope;
      last_cos = std::cos(slope);
    }
    cos_slope_ = last_cos - 1e-12;
  }

  void Run(MoveResult* out) {
    const Vec3 origin = q_.pose.position;
    Vec3 start = origin;
    CastHit start_ground;
    const bool grounded_at_start = LiftAndProbe(&start, &start_ground);
    const Vec3 disp = q_.displacement;
    const double rise = Dot(disp, up_);
    const Vec3 horizontal = disp - up_ * rise;

    // Every field of *out is set below; its contacts keep their capacity
    // (a result reused from tick to tick allocates nothing in steady state).
    out->stepped = false;
    out->ground_id = 0;
    out->ground_sub_shape = 0;
    out->ground_normal = Vec3::Zero();
    std::vector<MoveContact>& plain_contacts = out->contacts;
    plain_contacts.clear();
    PassInfo plain_info;
    Vec3 pos = Slide(start, disp, /*level=*/false, &plain_info, &plain_contacts);
    bool stopped = plain_info.stopped;

    // The step pass's contacts: per-thread scratch, swapped into *out when
    // the step is kept (the scratch then keeps the plain pass's buffer).
    thread_local std::vector<MoveContact> step_contacts;
    step_contacts.clear();
    const MoveSettings& s = q_.settings;
    if (s.step_height > 0.0 && grounded_at_start && plain_info.wall && rise <= 0.0 &&
        horizontal.Length() > kMinMove) {
      PassInfo step_info;
      Vec3 stepped;
      if (TryStep(start, Dot(start_ground.point, up_), horizontal, rise, &stepped, &step_info,
                  &step_contacts) &&
          Horizontal(stepped - start).Length() > Horizontal(pos - start).Length() + kMinMove) {
        pos = stepped;
        plain_contacts.swap(step_contacts);
        stopped = step_info.stopped;
        out->stepped = true;
      }
    }

    CastHit ground;
    bool on_ground = Probe(pos, &ground);
    if (s.ground_snap_distance > 0.0 && grounded_at_start && rise <= 0.0 && !on_ground) {
      CastHit g;
      const Vec3 down = up_ * -(s.ground_snap_distance + skin_);
      const Vec3 snapped = Advance(pos, down, &g);
      if (g.fraction < 1.0 && Walkable(g.normal)) {
        pos = snapped;
        plain_contacts.push_back(ContactOf(g));
        on_ground = Probe(pos, &ground);
      }
    }

    out->position = pos;
    out->displacement = pos - origin;
    out->on_ground = on_ground;
    if (out->on_ground) {
      out->ground_id = ground.id;
      out->ground_sub_shape = ground.sub_shape;
      out->ground_normal = ground.normal;
    }
    const Vec3 lost = horizontal - Horizontal(out->displacement);
    out->blocked = stopped || lost.Length() > kBlockedTolerance;
  }

 private:
  Vec3 Horizontal(const Vec3& v) const { return v - up_ * Dot(v, up_); }
  bool Walkable(const Vec3& n) const { return Dot(n, up_) >= cos_slope_; }

  static MoveContact ContactOf(const CastHit& h) {
    return MoveContact{h.id, h.sub_shape, h.normal, h.point};
  }

  // How far along `dir` (unit) the shape may go towards hit `h` found at
  // `hit_dist`: to `skin` from its plane, never towards a hit already within
  // the skin (or started touching), never backwards.
  double SafeDistance(const CastHit& h, const Vec3& dir, double hit_dist) const {
    if (h.started_overlapping()) return 0.0;
    const double closing = -Dot(dir, h.normal);
    if (closing <= 0.0) return std::max(0.0, hit_dist - skin_);  // normal not facing the motion
    if (hit_dist * closing <= skin_ * (1.0 + kSkinSlack)) return 0.0;
    return std::max(0.0, hit_dist - skin_ / closing);
  }

  // Sweeps straight from `from` by `delta`, stopping at the skin. *hit gets
  // the hit (fraction 1 on a miss). Returns the end position.
  Vec3 Advance(const Vec3& from, const Vec3& delta, CastHit* hit) {
    *hit = CastHit{};  // fraction 1: a miss
    const double len = delta.Length();
    if (len <= kMinMove) return from;
    if (!world_.Sweep(from, delta, hit)) {
      hit->fraction = 1.0;
      return from + delta;
    }
    const Vec3 dir = delta / len;
    return from + dir * SafeDistance(*hit, dir, hit->fraction * len);
  }

  // Probe(*pos, ground), after lifting the shape out of walkable ground that
  // rose into it since its last move (a platform the game raised): the
  // probe's own sweep finds that overlap, the shape goes up along `up` to
  // the skin above it (up to kMaxLifts times; a ceiling stops the lift).
  bool LiftAndProbe(Vec3* pos, CastHit* ground) {
    for (int lifts = 0;; ++lifts) {
      CastHit h;
      if (!world_.Probe(*pos, up_ * (-2.0 * skin_ * (1.0 + kSkinSlack)), &h)) return false;
      if (!Walkable(h.normal)) return false;
      const double n_up = Dot(h.normal, up_);
      if (lifts == kMaxLifts || !h.started_overlapping() || n_up <= 0.0 || h.depth <= skin_) {
        *ground = h;
        return true;
      }
      CastHit ceiling;
      *pos = Advance(*pos, up_ * ((h.depth + skin_) / n_up), &ceiling);
      if (ceiling.fraction < 1.0) return Probe(*pos, ground);
    }
  }

  // Walkable ground within about two skins below `pos`? Fills *ground.
  bool Probe(const Vec3& pos, CastHit* ground) {
    CastHit h;
    if (!world_.Probe(pos, up_ * (-2.0 * skin_ * (1.0 + kSkinSlack)), &h)) return false;
    if (!Walkable(h.normal)) return false;
    if (ground != nullptr) *ground = h;
    return true;
  }

  // The plane a hit puts on the motion `rem`: the hit's normal, or for a
  // non-walkable surface (any surface when `level`) that would lift the
  // motion, the vertical wall through it. *wall tells whether the plane is
  // not walkable ground.
  Vec3 PlaneOf(const Vec3& n, const Vec3& rem, bool level, bool* wall) const {
    *wall = !Walkable(n);
    if (!*wall && !level) return n;
    const double n_up = Dot(n, up_);
    if (n_up <= 0.0) return n;  // a wall or a ceiling: never lifts
    const Vec3 slid = rem - n * Dot(rem, n);
    if (Dot(slid, up_) <= std::max(0.0, Dot(rem, up_))) return n;
    const Vec3 flat = n - up_ * n_up;
    const double len = flat.Length();
    return len > kMinCrease ? flat / len : n;
  }

  // Clips `rem` against planes[0, count): unchanged when it goes into none;
  // else projected on one plane it then leaves all others alone, or along the
  // crease of two; else zero (a corner). Zero too when the result would go
  // against `desired`.
  static Vec3 Clip(const Vec3& rem, const Vec3* planes, int count, const Vec3& desired) {
    auto leaves_all = [&](const Vec3& v, int skip_a, int skip_b) {
      for (int k = 0; k < count; ++k) {
        if (k == skip_a || k == skip_b) continue;
        if (Dot(v, planes[k]) < -1e-12 * v.Length()) return false;
      }
      return true;
    };
    if (leaves_all(rem, -1, -1)) return rem;
    Vec3 out = Vec3::Zero();
    bool found = false;
    for (int i = 0; i < count && !found; ++i) {
      const double into = Dot(rem, planes[i]);
      if (into >= 0.0) continue;
      const Vec3 v = rem - planes[i] * into;
      if (leaves_all(v, i, -1)) {
        out = v;
        found = true;
      }
    }
    for (int i = 0; i < count && !found; ++i) {
      for (int j = i + 1; j < count && !found; ++j) {
        const Vec3 crease = Cross(planes[i], planes[j]);
        const double len = crease.Length();
        if (len <= kMinCrease) continue;
        const Vec3 dir = crease / len;
        const Vec3 v = dir * Dot(rem, dir);
        if (leaves_all(v, i, j)) {
          out = v;
          found = true;
        }
      }
    }
    if (Dot(out, desired) <= 0.0) return Vec3::Zero();
    return out;
  }

  // One slide pass from `from` by `delta`; appends its contacts. A `level`
  // pass (the side pass of a step) never rises: the step height alone
  // decides what is climbed.
  Vec3 Slide(const Vec3& from, const Vec3& delta, bool level, PassInfo* info,
             std::vector<MoveContact>* contacts) {
    Vec3 pos = from;
    Vec3 rem = delta;
    // The motion a pass may still make progress along: the desired one, less
    // its fall once walkable ground has held the shape.
    Vec3 want = delta;
    Vec3 planes[kMaxPlanes];
    int count = 0;
    int it = 0;
    for (; it < q_.settings.max_iterations; ++it) {
      const double len = rem.Length();
      if (len <= kMinMove) break;
      CastHit h;
      if (!world_.Sweep(pos, rem, &h)) {
        pos += rem;
        rem = Vec3::Zero();
        break;
      }
      contacts->push_back(ContactOf(h));
      const Vec3 dir = rem / len;
      const double moved = SafeDistance(h, dir, h.fraction * len);
      if (moved > 0.0) {  // else rem stays exactly as it was
        pos += dir * moved;
        rem = dir * (len - moved);
      }
      bool wall = false;
      Vec3 n = PlaneOf(h.normal, rem, level, &wall);
      if (Dot(n, rem) >= 0.0 && !h.started_overlapping()) {
        // A hit whose normal does not face the motion (rounding at a
        // grazing contact): stop towards it rather than sweep it again.
        n = -dir;
      } else if (!level && !wall && Dot(n, up_) > 0.0 && Dot(rem, up_) <= 0.0) {
        // Walkable ground holds a shape that is not rising: its fall ends
        // here, and the rest of the motion follows the ground's plane
        // vertically, so motion along the ground is kept whole and standing
        // still on a slope does not slide down it.
        want = Horizontal(want);
        Vec3 along = Horizontal(rem);
        if (Dot(along, want) <= 0.0) along = Vec3::Zero();  // never turned back
        rem = along - up_ * (Dot(along, n) / Dot(n, up_));
      }
      if (wall && Dot(rem, n) < 0.0) info->wall = true;
      bool known = false;
      for (int k = 0; k < count; ++k) known = known || Dot(planes[k], n) >= 1.0 - kSamePlane;
      if (!known) {
        if (count == kMaxPlanes) {
          rem = Vec3::Zero();
          info->stopped = true;
          break;
        }
        planes[count++] = n;
      }
      rem = Clip(rem, planes, count, want);
      if (rem.Length() <= kMinMove) {
        info->stopped = want.Length() > kMinMove;
        rem = Vec3::Zero();
        break;
      }
    }
    if (it == q_.settings.max_iterations && rem.Length() > kMinMove) info->stopped = true;
    return pos;
  }

  // Step up by step_height, slide `horizontal`, come down by what was risen
  // plus the desired fall (-rise). True when it lands on walkable ground
  // whose contact is at most step_height above the start's ground contact
  // (height `ground`): a rounded shape resting on the lip of a taller step
  // has not climbed it.
  bool TryStep(const Vec3& start, double ground, const Vec3& horizontal, double rise, Vec3* end,
               PassInfo* info, std::vector<MoveContact>* contacts) {
    CastHit h;
    const Vec3 raised = Advance(start, up_ * q_.settings.step_height, &h);
    if (h.fraction < 1.0) contacts->push_back(ContactOf(h));
    const double risen = Dot(raised - start, up_);
    if (risen <= kMinMove) return false;
    const Vec3 side = Slide(raised, horizontal, /*level=*/true, info, contacts);
    const Vec3 landed = Advance(side, up_ * -(risen - rise + skin_), &h);
    if (h.fraction >= 1.0 || !Walkable(h.normal)) return false;
    if (Dot(h.point, up_) - ground > q_.settings.step_height + skin_) return false;
    contacts->push_back(ContactOf(h));
    *end = landed;
    return true;
  }

  const MoveQuery& q_;
  MoveWorld& world_;
  Vec3 up_;
  double skin_ = 0.0;
  double cos_slope_ = 0.0;
};

}  // namespace

void RunMove(const MoveQuery& q, MoveWorld& world, MoveResult* out) {
  Mover(q, world).Run(out);  // sets every field of *out (its contacts' buffer kept)
}

}  // namespace hitbox::internal
