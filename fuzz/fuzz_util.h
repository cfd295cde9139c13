// Helpers shared by the libFuzzer targets: a forward byte reader that decodes
// structured values (with a table of extreme doubles), its writer twin for
// generating seeds, finiteness checks, and a scratch file for the targets whose
// entry point takes a path.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "hitbox/math/math.h"

namespace hitbox::fuzz {

/// Aborts (a libFuzzer crash) with a message when `cond` is false.
#define HITBOX_FUZZ_CHECK(cond, ...)                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n", __FILE__,      \
                   __LINE__, #cond);                                              \
      std::fprintf(stderr, "  " __VA_ARGS__);                                     \
      std::fprintf(stderr, "\n");                                                 \
      std::abort();                                                               \
    }                                                                             \
  } while (0)

/// Doubles that break geometry code: zeros, signed infinities, NaN, the
/// largest and smallest normal and denormal values, and ordinary numbers.
inline constexpr double kInterestingDoubles[] = {
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    10.0,
    -10.0,
    1e-6,
    1e6,
    1e-9,
    1e9,
    1e20,
    1e100,
    1e150,
    1e200,
    1e300,
    1e308,
    -1e308,
    std::numeric_limits<double>::max(),
    -std::numeric_limits<double>::max(),
    std::numeric_limits<double>::min(),         // 2.2250738585072014e-308, smallest normal
    std::numeric_limits<double>::denorm_min(),  // 5e-324
    1e-310,                                     // a denormal
    -1e-310,
    1e-300,
    std::numeric_limits<double>::infinity(),
    -std::numeric_limits<double>::infinity(),
    std::numeric_limits<double>::quiet_NaN(),
    1.0 + 1e-15,
    1.0 - 1e-7,
    0.7071067811865476,
};
inline constexpr size_t kInterestingCount = sizeof(kInterestingDoubles) / sizeof(double);

/// Reads values front to back; past the end every read returns zero bytes.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  size_t remaining() const { return empty() ? 0 : size_ - pos_; }

  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t U16() { return static_cast<uint16_t>(U8() | (U8() << 8)); }
  uint32_t U32() { return static_cast<uint32_t>(U16()) | (static_cast<uint32_t>(U16()) << 16); }
  uint64_t U64() { return static_cast<uint64_t>(U32()) | (static_cast<uint64_t>(U32()) << 32); }
  bool Bool() { return (U8() & 1) != 0; }
  /// `n` bytes (fewer at the end).
  std::string_view Bytes(size_t n) {
    const size_t k = std::min(n, remaining());
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), k);
    pos_ += k;
    return s;
  }

  /// A double: tag byte, then by tag % 4: 0 an entry of kInterestingDoubles
  /// (next byte), 1 a small value int16 / 64, 2 the raw 8-byte bit pattern,
  /// 3 int16 / 256 * 10^(int8 % 40) (wide but mostly well-behaved scales).
  double Double() {
    const uint8_t tag = U8();
    switch (tag % 4) {
      case 0: return kInterestingDoubles[U8() % kInterestingCount];
      case 1: return static_cast<int16_t>(U16()) / 64.0;
      case 2: {
        const uint64_t bits = U64();
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
      }
      default: {
        const double m = static_cast<int16_t>(U16()) / 256.0;
        const int e = static_cast<int8_t>(U8()) % 40;
        return m * std::pow(10.0, e);
      }
    }
  }
  Vec3 ReadVec3() {
    const double x = Double();
    const double y = Double();
    return {x, y, Double()};
  }
  /// A quaternion: mode byte % 4: 0 identity, 1 normalized from 4 doubles
  /// (identity when that fails), 2 the 4 raw doubles, 3 axis-angle.
  Quat ReadQuat() {
    const uint8_t mode = U8() % 4;
    if (mode == 0) return Quat::Identity();
    if (mode == 3) {
      const Vec3 axis = ReadVec3();
      const double angle = Double();
      const Quat q = Quat::FromAxisAngle(axis, angle);
      return q.IsFinite() && q.IsNormalized() ? q : Quat::Identity();
    }
    const double x = Double();
    const double y = Double();
    const double z = Double();
    const Quat q{x, y, z, Double()};
    if (mode == 2) return q;
    const Quat n = q.Normalized();
    return n.IsFinite() && n.IsNormalized() ? n : Quat::Identity();
  }
  Pose ReadPose() {
    const Vec3 p = ReadVec3();
    return Pose(p, ReadQuat());
  }
  /// A shape from kind byte + sizes; when Shape::Make rejects the sizes,
  /// `*valid` is false and the default unit sphere is returned. Kind byte % 8:
  /// 0..3 sphere, box, capsule, cylinder from decoded sizes; 4..7 small shapes
  /// with shared data from a scale (a double) and bytes: a convex hull of 4..11
  /// grid points, a mesh of 1..6 quads, a heightfield of 2..5 x 2..5 samples, a
  /// compound of 1..3 primitives (geometry_fuzzer.cc fuzzes their construction
  /// in depth; here they are colliders and query shapes).
  Shape ReadShape(bool* valid) {
    Result<Shape> r = Shape();
    switch (U8() % 8) {
      case 0: r = Shape::MakeSphere(Double()); break;
      case 1: r = Shape::MakeBox(ReadVec3()); break;
      case 2: {
        const double rad = Double();
        r = Shape::MakeCapsule(rad, Double());
        break;
      }
      case 3: {
        const double rad = Double();
        r = Shape::MakeCylinder(rad, Double());
        break;
      }
      case 4: {
        const double s = Double();
        ConvexHull h;
        const int n = 4 + U8() % 8;
        for (int i = 0; i < n; ++i) h.points.push_back(SmallPoint() * s);
        r = Shape::Make(h);
        break;
      }
      case 5: {
        const double s = Double();
        TriangleMeshShape m;
        const uint32_t quads = 1 + U8() % 6;
        for (uint32_t i = 0; i <= quads; ++i) {
          const double h0 = static_cast<int8_t>(U8()) / 16.0, h1 = static_cast<int8_t>(U8()) / 16.0;
          m.vertices.push_back(Vec3{static_cast<double>(i), h0, 0.0} * s);
          m.vertices.push_back(Vec3{static_cast<double>(i), h1, 1.0} * s);
        }
        for (uint32_t i = 0; i < quads; ++i) {
          m.triangles.push_back({2 * i, 2 * i + 1, 2 * i + 3});
          m.triangles.push_back({2 * i, 2 * i + 3, 2 * i + 2});
        }
        r = Shape::Make(m);
        break;
      }
      case 6: {
        HeightfieldShape f;
        f.rows = 2 + U8() % 4;
        f.cols = 2 + U8() % 4;
        f.cell_size_x = Double();
        f.cell_size_z = Double();
        const double s = Double();
        for (uint32_t i = 0; i < f.rows * f.cols; ++i) f.heights.push_back(static_cast<int8_t>(U8()) * s);
        r = Shape::Make(f);
        break;
      }
      default: {
        Compound c;
        const int n = 1 + U8() % 3;
        for (int i = 0; i < n; ++i) {
          const uint8_t k = U8() % 4;  // a primitive child
          Shape child;
          switch (k) {
            case 0: child = OrSphere(Shape::MakeSphere(Double())); break;
            case 1: child = OrSphere(Shape::MakeBox(ReadVec3())); break;
            default: {
              const double rad = Double();
              child = OrSphere(Shape::MakeCapsule(rad, Double()));
              break;
            }
          }
          c.children.push_back({child, ReadPose()});
        }
        r = Shape::Make(c);
        break;
      }
    }
    *valid = r.ok();
    return r.ok() ? *r : Shape();
  }
  static Shape OrSphere(const Result<Shape>& r) { return r.ok() ? *r : Shape(); }
  /// Three int8 coordinates.
  Vec3 SmallPoint() {
    const double x = static_cast<int8_t>(U8());
    const double y = static_cast<int8_t>(U8());
    return {x, y, static_cast<double>(static_cast<int8_t>(U8()))};
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

/// Writes what ByteReader reads (for seed generators).
class ByteWriter {
 public:
  void U8(uint8_t v) { out_.push_back(v); }
  void U16(uint16_t v) { U8(static_cast<uint8_t>(v)); U8(static_cast<uint8_t>(v >> 8)); }
  void U32(uint32_t v) { U16(static_cast<uint16_t>(v)); U16(static_cast<uint16_t>(v >> 16)); }
  void U64(uint64_t v) { U32(static_cast<uint32_t>(v)); U32(static_cast<uint32_t>(v >> 32)); }
  void Bytes(std::string_view s) { out_.insert(out_.end(), s.begin(), s.end()); }
  /// An exact double (raw bits).
  void Double(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof d);
    U8(2);
    U64(bits);
  }
  /// Entry `i` of kInterestingDoubles.
  void Interesting(size_t i) { U8(0); U8(static_cast<uint8_t>(i)); }
  void WriteVec3(const Vec3& v) { Double(v.x); Double(v.y); Double(v.z); }
  void WriteQuat(const Quat& q) {
    if (q == Quat::Identity()) {
      U8(0);
      return;
    }
    U8(2);
    Double(q.x); Double(q.y); Double(q.z); Double(q.w);
  }
  void WritePose(const Pose& p) { WriteVec3(p.position); WriteQuat(p.rotation); }
  /// A sphere, box, capsule or cylinder (the kinds with inline sizes).
  void WriteShape(const Shape& s) {
    U8(static_cast<uint8_t>(s.kind()));
    switch (s.kind()) {
      case ShapeKind::kSphere: Double(s.radius()); break;
      case ShapeKind::kBox: WriteVec3(s.half_extents()); break;
      default: Double(s.radius()); Double(s.half_height()); break;
    }
  }
  const std::vector<uint8_t>& data() const { return out_; }

 private:
  std::vector<uint8_t> out_;
};

inline bool Finite(double v) { return std::isfinite(v); }
inline bool Finite(const Vec3& v) { return v.IsFinite(); }

/// The finiteness property ("every output field is finite") is checked when
/// every size and coordinate of the inputs lies in this range: the whole
/// accepted range (shapes.h, geometry.proto). Wider inputs are rejected by
/// validation and still fuzzed for crashes and sanitizer errors.
inline constexpr double kCheckedMinSize = kMinShapeSize;
inline constexpr double kCheckedMaxSize = kMaxShapeSize;
inline constexpr double kCheckedMaxCoord = kMaxCoordinate;

inline bool InCheckedSize(double v) { return v == 0.0 || (v >= kCheckedMinSize && v <= kCheckedMaxSize); }
inline bool InCheckedCoord(double v) { return std::fabs(v) <= kCheckedMaxCoord; }
inline bool InCheckedCoord(const Vec3& v) {
  return InCheckedCoord(v.x) && InCheckedCoord(v.y) && InCheckedCoord(v.z);
}
inline bool InCheckedRange(const Shape& s) {
  switch (s.kind()) {
    case ShapeKind::kSphere: return InCheckedSize(s.radius());
    case ShapeKind::kBox:
      return InCheckedSize(s.half_extents().x) && InCheckedSize(s.half_extents().y) &&
             InCheckedSize(s.half_extents().z);
    default: return InCheckedSize(s.radius()) && InCheckedSize(s.half_height());
  }
}
inline bool InCheckedRange(const Pose& p) { return InCheckedCoord(p.position); }

/// Issue 9's validated coordinate range (core rejects |coordinate| > 1e9 m).
/// The file loaders check finiteness only, so for a file with coordinates
/// beyond it, core's rejection is expected rather than a loader bug.
inline constexpr double kCoreMaxCoordinate = 1e9;
inline bool BeyondCoreRange(const Vec3& v) {
  return std::fabs(v.x) > kCoreMaxCoordinate || std::fabs(v.y) > kCoreMaxCoordinate ||
         std::fabs(v.z) > kCoreMaxCoordinate;
}
inline bool BeyondCoreRange(const Collider& c) { return BeyondCoreRange(c.pose.position); }
inline bool BeyondCoreRange(const Query& q) {
  if (const auto* o = std::get_if<OverlapQuery>(&q)) return BeyondCoreRange(o->pose.position);
  if (const auto* c = std::get_if<CastQuery>(&q)) {
    return BeyondCoreRange(c->pose.position) || BeyondCoreRange(c->translation);
  }
  const auto& r = std::get<RayQuery>(q);
  return BeyondCoreRange(r.origin) || BeyondCoreRange(r.translation);
}

/// A file the targets whose entry point takes a path write their input to
/// (one per process, in /dev/shm when it exists), removed at exit.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& suffix) {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    path_ = std::string(dir) + "/hitbox-fuzz-" + std::to_string(getpid()) + suffix;
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }
  /// Replaces the file's content.
  void Write(const void* data, size_t size) const {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) std::abort();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
  }

 private:
  std::string path_;
};

}  // namespace hitbox::fuzz
