// The answer of a surface sweep from its triangles' hits, whatever order
// they come in: the earliest fraction, and among the hits within a tie of
// it (kSweepGap of travel) the lowest input triangle. For merged meshes
// (MeshGroups) the rule holds per member, members compared by (fraction,
// member) as the world compares colliders.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "hitbox/collision/collide.h"

namespace hitbox {

/// A sweep of merged meshes (MeshGroups): each member answers as its own
/// mesh would, and the sweep gives the winning member's answer.
struct MergedSweep {
  /// The merged input index where each member starts (ascending, from 0).
  std::span<const uint32_t> first;
  /// A member whose answer comes after this cannot win (the world's best so
  /// far); its answer may be left incomplete.
  double bound = 1.0;
  /// Out: the member of the answer.
  uint32_t member = 0;
};

class SweepTies {
 public:
  /// `tie`: kSweepGap as a fraction of the travel (0 without travel).
  /// `members`: the merged input index where each member starts (ascending,
  /// members[0] == 0); empty for one mesh. `limit`: no hit later than this
  /// can win (a later hit is passed over).
  SweepTies(double tie, std::span<const uint32_t> members, double limit = 1.0)
      : tie_(tie), members_(members), limit_(std::min(limit, 1.0)), bound_(limit_) {
    kept().clear();
  }

  /// Sweep and visit no further than this: a hit later cannot change the answer.
  double limit() const { return limit_; }

  /// True when triangle `orig` cannot change the answer whatever its hit:
  /// once a hit is at fraction 0 (nothing comes earlier), a higher input
  /// index than a winning candidate's.
  bool PassedOver(uint32_t orig) const { return orig > zero_threshold_; }
  /// True while no triangle is passed over (no hit at fraction 0 yet): a
  /// caller may then skip working out the index PassedOver takes.
  bool PassesNone() const { return zero_threshold_ == UINT32_MAX; }

  /// A triangle's hit (its own fraction, whatever the limit it was swept with).
  void Add(uint32_t orig, const CastResult& s) {
    if (s.fraction > limit_) return;
    std::vector<Hit>& hits = kept();
    if (s.fraction < earliest_) {
      earliest_ = s.fraction;
      limit_ = std::min(bound_, earliest_ + tie_);
      std::erase_if(hits, [&](const Hit& h) { return h.fraction > limit_; });
    }
    hits.push_back({s.fraction, orig, MemberOf(orig), s});
    if (earliest_ == 0.0) UpdateZeroThreshold();
  }

  /// The answer (sub_shape: the merged input index); *member: its member.
  CastResult Result(uint32_t* member = nullptr) const {
    const std::vector<Hit>& hits = kept();
    CastResult out;
    if (hits.empty()) return out;
    // The winning member: the lowest with a hit at the earliest fraction
    // (its own earliest, and no member's comes before it).
    uint32_t win_member = UINT32_MAX;
    for (const Hit& h : hits) {
      if (h.fraction == earliest_) win_member = std::min(win_member, h.member);
    }
    const Hit* win = nullptr;
    for (const Hit& h : hits) {
      if (h.member == win_member && h.fraction <= earliest_ + tie_ &&
          (win == nullptr || h.orig < win->orig)) {
        win = &h;
      }
    }
    const bool inside = win->s.state == CastState::kStartedOverlapping || earliest_ == 0.0;
    out.state = inside ? CastState::kStartedOverlapping : win->s.state;
    out.fraction = earliest_;
    out.normal = win->s.normal;
    out.point = win->s.point;
    out.sub_shape = win->orig;
    if (member != nullptr) *member = win_member;
    return out;
  }

 private:
  struct Hit {
    double fraction;
    uint32_t orig;
    uint32_t member;
    CastResult s;
  };
  // Kept between calls: no allocation per sweep (one sweep at a time per thread).
  static std::vector<Hit>& kept() {
    static thread_local std::vector<Hit> hits;
    return hits;
  }
  uint32_t MemberOf(uint32_t orig) const {
    if (members_.size() < 2) return 0;
    return static_cast<uint32_t>(std::upper_bound(members_.begin(), members_.end(), orig) -
                                 members_.begin()) -
           1;
  }
  // The lowest member with a hit at 0 wins; a triangle of a higher member,
  // or of it above its lowest candidate within the tie, cannot.
  void UpdateZeroThreshold() {
    uint32_t m = UINT32_MAX;
    for (const Hit& h : kept()) {
      if (h.fraction == 0.0) m = std::min(m, h.member);
    }
    for (const Hit& h : kept()) {
      if (h.member == m && h.fraction <= tie_) zero_threshold_ = std::min(zero_threshold_, h.orig);
    }
  }

  double tie_;
  std::span<const uint32_t> members_;
  double limit_;
  double bound_;
  double earliest_ = 2.0;
  uint32_t zero_threshold_ = UINT32_MAX;
};

}  // namespace hitbox
