// The 64-player arena tick workload (loadgen.h): world, players and the
// queries of one tick.
#include <cmath>
#include <random>

#include "hitbox/loadgen.h"

namespace hitbox::loadgen {
namespace {

constexpr double kHalf = 30.0;       // the floor is [-30, 30]^2 at y = 0
constexpr double kCell = 2.0;        // floor mesh cell
constexpr double kRadius = 0.4;      // player capsule
constexpr double kHalfHeight = 0.5;
constexpr double kSkin = 0.01;       // MoveSettings default
constexpr double kTickSeconds = 1.0 / 60.0;
constexpr double kWalkSpeed = 6.0;   // m/s
constexpr double kFallPerTick = 0.02;

Collider Fixed(uint64_t id, const Shape& shape, const Pose& pose) {
  Collider c;
  c.id = id;
  c.shape = shape;
  c.pose = pose;
  return c;
}

Shape FloorMesh() {
  TriangleMeshShape m;
  const int n = static_cast<int>(2 * kHalf / kCell);
  for (int i = 0; i <= n; ++i) {
    for (int j = 0; j <= n; ++j) m.vertices.push_back({-kHalf + i * kCell, 0.0, -kHalf + j * kCell});
  }
  const auto v = [n](int i, int j) { return static_cast<uint32_t>(i * (n + 1) + j); };
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      m.triangles.push_back({v(i, j), v(i, j + 1), v(i + 1, j)});
      m.triangles.push_back({v(i + 1, j), v(i, j + 1), v(i + 1, j + 1)});
    }
  }
  return *Shape::Make(m);
}

// A direction in the floor plane from a hash of (seed, player, second): one
// splitmix64 step (Steele et al. 2014), cheap next to the queries it feeds
// (seeding a Mersenne twister per call cost a quarter of a tick).
Vec3 WalkDirection(uint64_t seed, size_t player, uint64_t second) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + player * 1000003ull + second + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const double a = static_cast<double>(z >> 11) * (2.0 * M_PI / 9007199254740992.0);
  return {std::cos(a), 0.0, std::sin(a)};
}

}  // namespace

Arena GenerateArena(const ArenaOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Arena a;
  a.player_shape = *Shape::MakeCapsule(kRadius, kHalfHeight);
  uint64_t id = 1;
  a.colliders.push_back(Fixed(id++, FloorMesh(), Pose()));
  // Walls around the floor, 4 m high.
  const Shape wall_x = *Shape::MakeBox({kHalf + 1, 2, 0.5});
  const Shape wall_z = *Shape::MakeBox({0.5, 2, kHalf + 1});
  a.colliders.push_back(Fixed(id++, wall_x, Pose({0, 2, kHalf + 0.5})));
  a.colliders.push_back(Fixed(id++, wall_x, Pose({0, 2, -kHalf - 0.5})));
  a.colliders.push_back(Fixed(id++, wall_z, Pose({kHalf + 0.5, 2, 0})));
  a.colliders.push_back(Fixed(id++, wall_z, Pose({-kHalf - 0.5, 2, 0})));
  // A staircase of five 0.2 m steps climbing along +x from x = 10 (z in [-20, -14]).
  for (int k = 1; k <= 5; ++k) {
    const double front = 10.0 + 0.6 * (k - 1);
    a.colliders.push_back(Fixed(id++, *Shape::MakeBox({(20.0 - front) / 2, 0.1 * k, 3}),
                                Pose({(20.0 + front) / 2, 0.1 * k, -17})));
  }
  // Two ramps: 20 degrees (walkable) and 50 degrees (too steep).
  for (const auto& [degrees, z] : {std::pair{20.0, 14.0}, std::pair{50.0, 22.0}}) {
    const double t = degrees * M_PI / 180.0;
    a.colliders.push_back(Fixed(id++, *Shape::MakeBox({4, 0.5, 3}),
                                Pose({-12, 4 * std::sin(t) - 0.5 * std::cos(t), z},
                                     Quat::FromAxisAngle({0, 0, 1}, t))));
  }
  // Pillars and crates scattered over the rest.
  for (int k = 0; k < 24; ++k) {
    const Vec3 p{(u(rng) * 2 - 1) * (kHalf - 2), 2.0, (u(rng) * 2 - 1) * (kHalf - 2)};
    a.colliders.push_back(Fixed(id++, *Shape::MakeCylinder(0.3 + 0.5 * u(rng), 2.0), Pose(p)));
  }
  for (int k = 0; k < 32; ++k) {
    const double h = 0.2 + 0.6 * u(rng);
    const Vec3 p{(u(rng) * 2 - 1) * (kHalf - 2), h, (u(rng) * 2 - 1) * (kHalf - 2)};
    a.colliders.push_back(Fixed(id++, *Shape::MakeBox({h, h, h}),
                                Pose(p, Quat::FromAxisAngle({0, 1, 0}, u(rng) * M_PI))));
  }
  // Players on free floor: their capsule, grown by the skin and lifted off
  // the floor by two, touches nothing (and no other player).
  ColliderSet world;
  (void)world.AddBulk(a.colliders);
  const Shape fat = *Shape::MakeCapsule(kRadius + kSkin, kHalfHeight);
  const double stand = kRadius + kHalfHeight + kSkin;
  for (int tries = 0; a.spawn.size() < o.players && tries < 100000; ++tries) {
    const Vec3 p{(u(rng) * 2 - 1) * (kHalf - 2), stand, (u(rng) * 2 - 1) * (kHalf - 2)};
    std::vector<OverlapHit> hits;
    world.Overlap(OverlapQuery{fat, Pose(p + Vec3{0, 2 * kSkin, 0}), {}, false}, &hits);
    bool near_player = false;
    for (const Vec3& q : a.spawn) near_player = near_player || (q - p).Length() < 1.0;
    if (!hits.empty() || near_player) continue;
    Collider c = Fixed(kArenaPlayerBase + a.spawn.size(), a.player_shape, Pose(p));
    c.layer = 1;
    a.colliders.push_back(c);
    a.spawn.push_back(p);
  }
  return a;
}

namespace {
// Appends tick `tick`'s moves (ArenaTickQueries) to *out.
void AddArenaMoves(const Arena& a, const ArenaOptions& o, const std::vector<Vec3>& positions,
                   uint64_t tick, std::vector<Query>* out) {
  const uint64_t second = static_cast<uint64_t>(static_cast<double>(tick) * kTickSeconds);
  for (size_t i = 0; i < positions.size(); ++i) {
    MoveQuery m;
    m.shape = a.player_shape;
    m.pose = Pose(positions[i]);
    m.displacement = WalkDirection(o.seed, i, second) * (kWalkSpeed * kTickSeconds) +
                     Vec3{0, -kFallPerTick, 0};
    m.apply_to_id = kArenaPlayerBase + i;
    out->push_back(std::move(m));
  }
}
}  // namespace

std::vector<Query> ArenaMoveQueries(const Arena& a, const ArenaOptions& o,
                                    const std::vector<Vec3>& positions, uint64_t tick) {
  std::vector<Query> out;
  out.reserve(positions.size());
  AddArenaMoves(a, o, positions, tick, &out);
  return out;
}

std::vector<Query> ArenaTickQueries(const Arena& a, const ArenaOptions& o,
                                    const std::vector<Vec3>& positions, uint64_t tick) {
  std::vector<Query> out;
  out.reserve(positions.size() + o.casts_per_tick + o.rays_per_tick + o.overlaps_per_tick +
              o.ground_checks_per_tick);
  AddArenaMoves(a, o, positions, tick, &out);
  const uint64_t second = static_cast<uint64_t>(static_cast<double>(tick) * kTickSeconds);
  const size_t n = positions.size();
  for (size_t k = 0; k < o.casts_per_tick && n > 0; ++k) {
    const size_t p = ArenaSweepPlayer(o, k);
    CastQuery c;
    c.shape = a.player_shape;
    c.pose = Pose(positions[p]);
    c.translation = WalkDirection(o.seed, p, second) * 2.0;
    c.filter.ignore = {kArenaPlayerBase + p};
    out.push_back(std::move(c));
  }
  for (size_t k = 0; k < o.rays_per_tick && n > 0; ++k) {
    const size_t shooter = (tick * 7 + k) % n;
    RayQuery r;
    r.origin = positions[shooter] + Vec3{0, 0.7, 0};
    r.translation = WalkDirection(o.seed + 1, shooter, tick * 4 + k / n) * 50.0 +
                    Vec3{0, -0.5, 0};
    r.filter.ignore = {kArenaPlayerBase + shooter};
    out.push_back(std::move(r));
  }
  for (size_t k = 0; k < o.overlaps_per_tick && n > 0; ++k) {
    OverlapQuery q;
    q.shape = *Shape::MakeSphere(3.0);
    q.pose = Pose(positions[(tick * 13 + k) % n]);
    q.filter.mask = 1u << 1;  // players only
    out.push_back(std::move(q));
  }
  for (size_t k = 0; k < o.ground_checks_per_tick && n > 0; ++k) {
    const size_t p = k % n;
    RayQuery r;
    r.origin = positions[p];
    r.translation = Vec3{0, -(kHalfHeight + kRadius + 0.2), 0};
    r.filter.ignore = {kArenaPlayerBase + p};
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace hitbox::loadgen
