#include "obj_stream.h"

#include <tiny_obj_loader.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <utility>

namespace hitbox::import {
namespace {

/// A vertex index as ObjShape holds it.
uint32_t Wrap(int vi) { return static_cast<uint32_t>(vi); }

/// Whether (tx, ty) is inside the triangle (vx, vy): the crossing test
/// (W. R. Franklin's pnpoly) as tinyobjloader computes it.
bool Inside(const double* vx, const double* vy, double tx, double ty) {
  bool inside = false;
  for (int i = 0, j = 2; i < 3; j = i++) {
    if ((vy[i] > ty) != (vy[j] > ty) &&
        tx < (vx[j] - vx[i]) * (ty - vy[i]) / (vy[j] - vy[i]) + vx[i]) {
      inside = !inside;
    }
  }
  return inside;
}

/// Reads one file's callbacks into objects. LoadObj resolves and
/// triangulates an object's faces when the object ends ("o", "g", the end
/// of the file), against the vertices read by then; so does this, and a
/// polygon whose corners are all read already is triangulated at once.
class ShapeReader {
 public:
  ShapeReader(ObjText* text, std::istream* in, const std::function<void(ObjShape*)>& on_shape)
      : text_(*text), in_(*in), on_shape_(on_shape) {
    StartSection();
  }

  /// Ends the last object; the error that stopped the reading, if any.
  Status Finish() {
    if (error_.empty() && in_.bad()) error_ = "cannot read the file";
    if (error_.empty() && (static_cast<size_t>(count_) != text_.positions.size() ||
                           section_ + 1 != text_.sections.size())) {
      error_ = "the file changed while it was read";
    }
    if (error_.empty()) EndSection(End::kFile);
    if (!error_.empty()) return Invalid(error_);
    return Status::Ok();
  }

  static void Vertex(void* self, double /*x*/, double /*y*/, double /*z*/, double /*w*/) {
    static_cast<ShapeReader*>(self)->AddVertex();
  }
  static void Face(void* self, tinyobj::index_t* corners, int n) {
    static_cast<ShapeReader*>(self)->AddFace(corners, static_cast<size_t>(n));
  }
  static void Group(void* self, const char** names, int n) {
    // LoadObj names the group its names joined by spaces.
    std::string name;
    for (int i = 0; i < n; ++i) {
      if (i > 0) name += ' ';
      name += names[i];
    }
    static_cast<ShapeReader*>(self)->NewObject(End::kGroup, std::move(name));
  }
  static void Object(void* self, const char* name) {
    static_cast<ShapeReader*>(self)->NewObject(End::kObject, name);
  }

 private:
  enum class End { kGroup, kObject, kFile };
  /// A polygon read before some of its corners, triangulated at its
  /// object's end into `at` of its triangles.
  struct Pending {
    size_t at;
    std::vector<int> corners;
  };

  bool Read(int vi) const { return vi >= 0 && vi < count_; }

  /// Coordinate `axis` of vertex `vi` (read) as the importer stores it: the
  /// double nearest the file's text (ReadObjText's).
  double At(int vi, int axis) const {
    return text_.positions.Coordinate(static_cast<size_t>(vi), axis);
  }

  /// Counts the next vertex; its position is ReadObjText's, not
  /// tinyobjloader's (which can be a few ulps off).
  void AddVertex() {
    if (static_cast<size_t>(count_) >= text_.positions.size()) {
      return Stop("the file changed while it was read");
    }
    ++count_;
  }

  void AddFace(const tinyobj::index_t* raw, size_t n) {
    if (n < 3) return;  // LoadObj drops it (a warning)
    // An index counts from 1, or back from the vertices read (-1: the last).
    corners_.resize(n);
    bool read = true;
    for (size_t k = 0; k < n; ++k) {
      const int i = raw[k].vertex_index;
      corners_[k] = i > 0 ? i - 1 : (i < 0 ? count_ + i : -1);
      read = read && Read(corners_[k]);
    }
    if (n == 3) {
      triangles_.push_back({Wrap(corners_[0]), Wrap(corners_[1]), Wrap(corners_[2])});
    } else if (read) {
      Triangulate(corners_, &triangles_);
    } else {
      pending_.push_back({triangles_.size(), corners_});
    }
  }

  /// The triangles of a polygon of 4+ corners, as LoadObj cuts one but by
  /// the exact coordinates (At), appended to `out`; false for a quad with a
  /// corner not read.
  bool Triangulate(const std::vector<int>& c, std::vector<Triangle>* out) const {
    if (c.size() > 4) {
      ClipEars(c, out);
      return true;
    }
    if (!Read(c[0]) || !Read(c[1]) || !Read(c[2]) || !Read(c[3])) return false;
    // Split along the shorter diagonal by the exact coordinates; on a tie,
    // along 1-3.
    double d02 = 0.0;
    double d13 = 0.0;
    for (int a = 0; a < 3; ++a) {
      const double e02 = At(c[2], a) - At(c[0], a);
      const double e13 = At(c[3], a) - At(c[1], a);
      d02 += e02 * e02;
      d13 += e13 * e13;
    }
    const auto add = [out, &c](int a, int b, int d) {
      out->push_back({Wrap(c[a]), Wrap(c[b]), Wrap(c[d])});
    };
    if (d02 < d13) {
      add(0, 1, 2);
      add(0, 2, 3);
    } else {
      add(0, 1, 3);
      add(1, 2, 3);
    }
    return true;
  }

  /// tinyobjloader's built-in ear clipping (its exportGroupsToShape, with
  /// TINYOBJLOADER_USE_MAPBOX_EARCUT not defined) step for step, the same
  /// arithmetic in the same order, on the exact coordinates (At) rather
  /// than tinyobjloader's own (a few ulps off at times). A corner not read
  /// lies at (0, 0) of the plane and is never found inside.
  void ClipEars(std::vector<int> left, std::vector<Triangle>* out) const {
    // The plane: the axes other than the largest of the first corner's
    // normal (its edges' cross product) that is not ~0; x-y by default.
    int axes[2] = {1, 2};
    const size_t n = left.size();
    for (size_t k = 0; k < n; ++k) {
      const int p0 = left[k], p1 = left[(k + 1) % n], p2 = left[(k + 2) % n];
      if (!Read(p0) || !Read(p1) || !Read(p2)) continue;
      double e0[3];
      double e1[3];
      for (int a = 0; a < 3; ++a) {
        e0[a] = At(p1, a) - At(p0, a);
        e1[a] = At(p2, a) - At(p1, a);
      }
      const double cx = std::fabs(e0[1] * e1[2] - e0[2] * e1[1]);
      const double cy = std::fabs(e0[2] * e1[0] - e0[0] * e1[2]);
      const double cz = std::fabs(e0[0] * e1[1] - e0[1] * e1[0]);
      constexpr double kEpsilon = std::numeric_limits<double>::epsilon();
      if (cx > kEpsilon || cy > kEpsilon || cz > kEpsilon) {
        if (!(cx > cy && cx > cz)) {
          axes[0] = 0;
          if (cz > cx && cz > cy) axes[1] = 1;
        }
        break;
      }
    }
    // Cut off the first ear from `guess` on: a corner that turns the way
    // the triangle's signed area says, with no other corner inside.
    size_t guess = 0;
    size_t tries = n;
    size_t had = n;
    while (left.size() > 3 && tries > 0) {
      const size_t m = left.size();
      if (guess >= m) guess -= m;
      if (had != m) {
        had = m;
        tries = m;
      } else {
        --tries;
      }
      int ear[3];
      double vx[3];
      double vy[3];
      for (size_t k = 0; k < 3; ++k) {
        ear[k] = left[(guess + k) % m];
        vx[k] = Read(ear[k]) ? At(ear[k], axes[0]) : 0.0;
        vy[k] = Read(ear[k]) ? At(ear[k], axes[1]) : 0.0;
      }
      const double e0x = vx[1] - vx[0];
      const double e0y = vy[1] - vy[0];
      const double e1x = vx[2] - vx[1];
      const double e1y = vy[2] - vy[1];
      const double cross = e0x * e1y - e0y * e1x;
      const double area = (vx[0] * vy[1] - vy[0] * vx[1]) * 0.5;
      bool cut = !(cross * area < 0.0);
      for (size_t k = 3; k < m && cut; ++k) {
        const int other = left[(guess + k) % m];
        cut = !(Read(other) && Inside(vx, vy, At(other, axes[0]), At(other, axes[1])));
      }
      if (!cut) {
        ++guess;
        continue;
      }
      out->push_back({Wrap(ear[0]), Wrap(ear[1]), Wrap(ear[2])});
      left.erase(left.begin() + static_cast<std::ptrdiff_t>((guess + 1) % m));
    }
    if (left.size() == 3) out->push_back({Wrap(left[0]), Wrap(left[1]), Wrap(left[2])});
  }

  void NewObject(End end, std::string name) {
    if (!error_.empty()) return;
    EndSection(end);
    if (!error_.empty()) return;
    ++section_;
    name_ = std::move(name);
    StartSection();
  }

  void StartSection() {
    if (section_ < text_.sections.size()) triangles_.reserve(text_.sections[section_].triangles);
  }

  /// As LoadObj ends an object: its pending polygons triangulated, and the
  /// object kept when it has a triangle, or (at an "o" line) an "l" or "p"
  /// line's vertex; handed on when it has a triangle.
  void EndSection(End end) {
    if (!pending_.empty() && !Resolve()) return;
    const bool lines =
        end == End::kObject && section_ < text_.sections.size() && text_.sections[section_].lines;
    if (!triangles_.empty() || lines) {
      const size_t index = shapes_++;
      if (!triangles_.empty()) {
        ObjShape shape{index, name_, std::move(triangles_), end == End::kFile};
        on_shape_(&shape);
      }
    }
    std::vector<Triangle>().swap(triangles_);
  }

  /// Puts the pending polygons' triangles in their places; false (and the
  /// reading stopped) on a quad with a corner still not read.
  bool Resolve() {
    std::vector<Triangle> all;
    all.reserve(triangles_.size() + 2 * pending_.size());
    size_t from = 0;
    for (const Pending& p : pending_) {
      all.insert(all.end(), triangles_.begin() + static_cast<std::ptrdiff_t>(from),
                 triangles_.begin() + static_cast<std::ptrdiff_t>(p.at));
      from = p.at;
      if (!Triangulate(p.corners, &all)) {
        BadQuad(p.corners);
        return false;
      }
    }
    all.insert(all.end(), triangles_.begin() + static_cast<std::ptrdiff_t>(from), triangles_.end());
    triangles_.swap(all);
    pending_.clear();
    return true;
  }

  void BadQuad(const std::vector<int>& corners) {
    std::string face = "f";
    for (int vi : corners) face += ' ' + std::to_string(vi + 1);
    const int bad =
        *std::find_if(corners.begin(), corners.end(), [this](int vi) { return !Read(vi); });
    Stop(ObjShapeName(shapes_, name_) + ": face '" + face + "' uses vertex " +
         std::to_string(bad + 1) +
         (bad < 0
              ? ", before the first vertex"
              : ", beyond the " + std::to_string(count_) + " vertices read by the object's end") +
         " (tinyobjloader: face with invalid vertex index)");
  }

  /// Ends the reading with `error`: tinyobjloader's loop stops at a failed stream.
  void Stop(std::string error) {
    error_ = std::move(error);
    in_.setstate(std::ios::failbit);
  }

  ObjText& text_;
  std::istream& in_;
  const std::function<void(ObjShape*)>& on_shape_;
  int count_ = 0;  // vertices read (LoadObj counts them in an int)
  size_t section_ = 0;
  size_t shapes_ = 0;  // LoadObj's shapes so far
  std::string name_;
  std::vector<Triangle> triangles_;  // the object's so far
  std::vector<Pending> pending_;
  std::vector<int> corners_;
  std::string error_;
};

}  // namespace

std::string ObjShapeName(size_t index, const std::string& name) {
  return name.empty() ? "object #" + std::to_string(index) : "object '" + name + "'";
}

Status StreamObjShapes(const std::string& path, ObjText* text,
                       const std::function<void(ObjShape*)>& on_shape) {
  std::ifstream in(path);
  if (!in) return Invalid("Cannot open file [" + path + "]");
  ShapeReader reader(text, &in, on_shape);
  tinyobj::callback_t callbacks;
  callbacks.vertex_cb = &ShapeReader::Vertex;
  callbacks.index_cb = &ShapeReader::Face;
  callbacks.group_cb = &ShapeReader::Group;
  callbacks.object_cb = &ShapeReader::Object;
  // No material reader: materials are not read, and no warnings kept.
  tinyobj::LoadObjWithCallback(in, callbacks, &reader, /*readMatFn=*/nullptr, /*warn=*/nullptr,
                               /*err=*/nullptr);
  return reader.Finish();
}

}  // namespace hitbox::import
