#include "hitbox/cases/case_file.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <istream>
#include <memory>
#include <streambuf>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "hitbox/format.h"

namespace hitbox::cases {
namespace {

using nlohmann::json;

// Parse errors carry the JSON path of the offending field.
struct ParseError {
  std::string path;
  std::string what;
};

const json& Field(const json& j, const char* key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) throw ParseError{path + "." + key, "missing"};
  return j.at(key);
}

double Number(const json& j, const std::string& path) {
  if (!j.is_number()) throw ParseError{path, "not a number"};
  return j.get<double>();
}

uint64_t Uint64(const json& j, const std::string& path) {
  // nlohmann keeps non-negative integers as exact uint64 (never via double).
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
  throw ParseError{path, "not an unsigned integer"};
}

Vec3 ReadVec3(const json& j, const std::string& path) {
  if (!j.is_array() || j.size() != 3) throw ParseError{path, "expected [x, y, z]"};
  return {Number(j[0], path + "[0]"), Number(j[1], path + "[1]"), Number(j[2], path + "[2]")};
}

// A unit quaternion (within kQuatNormTolerance, as core and the wire accept),
// returned normalized: queries are not validated again before they run.
Quat ReadQuat(const json& j, const std::string& path) {
  if (!j.is_array() || j.size() != 4) throw ParseError{path, "expected [x, y, z, w]"};
  const Quat q{Number(j[0], path + "[0]"), Number(j[1], path + "[1]"), Number(j[2], path + "[2]"),
               Number(j[3], path + "[3]")};
  if (!q.IsFinite() || !q.IsNormalized(kQuatNormTolerance)) {
    throw ParseError{path,
                     "quaternion norm " + FormatDouble(q.Length()) + " is not 1 (tolerance 1e-6)"};
  }
  return q.Normalized();
}

// The "rotation" of a query body, identity when left out.
Quat OptionalQuat(const json& body, const std::string& path) {
  if (!body.contains("rotation")) return Quat{};
  return ReadQuat(body.at("rotation"), path + ".rotation");
}

Shape ReadShape(const json& j, const std::string& path) {
  if (!j.is_object() || j.size() != 1) throw ParseError{path, "expected one shape kind"};
  const std::string kind = j.begin().key();
  const json& s = j.begin().value();
  const std::string p = path + "." + kind;
  Result<Shape> r = Shape::MakeSphere(1.0);
  if (kind == "sphere") {
    r = Shape::MakeSphere(Number(Field(s, "radius", p), p + ".radius"));
  } else if (kind == "box") {
    r = Shape::MakeBox(ReadVec3(Field(s, "half_extents", p), p + ".half_extents"));
  } else if (kind == "capsule") {
    r = Shape::MakeCapsule(Number(Field(s, "radius", p), p + ".radius"),
                           Number(Field(s, "half_height", p), p + ".half_height"));
  } else if (kind == "cylinder") {
    r = Shape::MakeCylinder(Number(Field(s, "radius", p), p + ".radius"),
                            Number(Field(s, "half_height", p), p + ".half_height"));
  } else if (kind == "convex_hull") {
    const json& pts = Field(s, "points", p);
    if (!pts.is_array()) throw ParseError{p + ".points", "expected an array of [x, y, z]"};
    ConvexHull hull;
    for (size_t i = 0; i < pts.size(); ++i) {
      hull.points.push_back(ReadVec3(pts[i], p + ".points[" + std::to_string(i) + "]"));
    }
    r = Shape::Make(hull);
  } else if (kind == "mesh") {
    const json& verts = Field(s, "vertices", p);
    const json& tris = Field(s, "triangles", p);
    if (!verts.is_array()) throw ParseError{p + ".vertices", "expected an array of [x, y, z]"};
    if (!tris.is_array()) throw ParseError{p + ".triangles", "expected an array of [a, b, c]"};
    TriangleMeshShape mesh;
    mesh.vertices.reserve(verts.size());
    for (size_t i = 0; i < verts.size(); ++i) {
      mesh.vertices.push_back(ReadVec3(verts[i], p + ".vertices[" + std::to_string(i) + "]"));
    }
    mesh.triangles.reserve(tris.size());
    for (size_t i = 0; i < tris.size(); ++i) {
      const std::string ti = p + ".triangles[" + std::to_string(i) + "]";
      if (!tris[i].is_array() || tris[i].size() != 3) throw ParseError{ti, "expected [a, b, c]"};
      std::array<uint32_t, 3> t{};
      for (int k = 0; k < 3; ++k) {
        const std::string tk = ti + "[" + std::to_string(k) + "]";
        const uint64_t v = Uint64(tris[i][k], tk);
        if (v > 0xFFFFFFFFull) throw ParseError{tk, "exceeds 32 bits"};
        t[k] = static_cast<uint32_t>(v);
      }
      mesh.triangles.push_back(t);
    }
    r = Shape::Make(std::move(mesh));  // its arrays freed as the build goes
  } else if (kind == "heightfield") {
    HeightfieldShape h;
    const uint64_t rows = Uint64(Field(s, "rows", p), p + ".rows");
    const uint64_t cols = Uint64(Field(s, "cols", p), p + ".cols");
    if (rows > 0xFFFFFFFFull) throw ParseError{p + ".rows", "exceeds 32 bits"};
    if (cols > 0xFFFFFFFFull) throw ParseError{p + ".cols", "exceeds 32 bits"};
    h.rows = static_cast<uint32_t>(rows);
    h.cols = static_cast<uint32_t>(cols);
    const json& cell = Field(s, "cell_size", p);
    if (!cell.is_array() || cell.size() != 2) throw ParseError{p + ".cell_size", "expected [dx, dz]"};
    h.cell_size_x = Number(cell[0], p + ".cell_size[0]");
    h.cell_size_z = Number(cell[1], p + ".cell_size[1]");
    const json& hs = Field(s, "heights", p);
    if (!hs.is_array()) throw ParseError{p + ".heights", "expected an array of numbers"};
    h.heights.reserve(hs.size());
    for (size_t i = 0; i < hs.size(); ++i) {
      h.heights.push_back(Number(hs[i], p + ".heights[" + std::to_string(i) + "]"));
    }
    r = Shape::Make(h);
  } else if (kind == "compound") {
    const json& children = Field(s, "children", p);
    if (!children.is_array()) {
      throw ParseError{p + ".children", "expected an array of {shape, position, rotation}"};
    }
    Compound compound;
    compound.children.reserve(children.size());
    for (size_t i = 0; i < children.size(); ++i) {
      const std::string ci = p + ".children[" + std::to_string(i) + "]";
      const json& shape = Field(children[i], "shape", ci);
      // Collider-only kinds are refused before reading them (no recursion).
      if (shape.is_object() && shape.size() == 1) {
        const std::string k = shape.begin().key();
        if (k == "mesh" || k == "heightfield" || k == "compound") {
          throw ParseError{ci + ".shape", "a " + k + " cannot be a compound child"};
        }
      }
      CompoundChild child;
      child.shape = ReadShape(shape, ci + ".shape");
      child.pose.position = ReadVec3(Field(children[i], "position", ci), ci + ".position");
      child.pose.rotation = ReadQuat(Field(children[i], "rotation", ci), ci + ".rotation");
      compound.children.push_back(std::move(child));
    }
    r = Shape::Make(compound);
  } else {
    throw ParseError{path, "unknown shape kind '" + kind + "'"};
  }
  if (!r.ok()) throw ParseError{p, r.error().message};
  return *r;
}

uint32_t ReadMask(const json& q, const std::string& path) {
  if (!q.contains("mask")) return 0xFFFFFFFFu;
  const uint64_t m = Uint64(q.at("mask"), path + ".mask");
  if (m > 0xFFFFFFFFull) throw ParseError{path + ".mask", "exceeds 32 bits"};
  return static_cast<uint32_t>(m);
}

std::vector<uint64_t> IdList(const json& j, const char* key, const std::string& path) {
  std::vector<uint64_t> out;
  if (!j.contains(key)) return out;
  const json& a = j.at(key);
  if (!a.is_array()) throw ParseError{path + "." + key, "not an array"};
  for (size_t i = 0; i < a.size(); ++i) {
    out.push_back(Uint64(a[i], path + "." + key + "[" + std::to_string(i) + "]"));
  }
  return out;
}

// The query of `q` (overlap, sweep, raycast or move) into cq->kind and
// cq->query; id and at_tick are the caller's.
void ReadQueryBody(const json& q, const std::string& p, CaseQuery* out) {
  CaseQuery& cq = *out;
  if (q.contains("overlap")) {
    const json& o = q.at("overlap");
    const std::string op = p + ".overlap";
    OverlapQuery oq;
    oq.shape = ReadShape(Field(o, "shape", op), op + ".shape");
    if (!IsConvexKind(oq.shape.kind())) {
      throw ParseError{op + ".shape", "a " + std::string(ShapeKindName(oq.shape.kind())) +
                                          " is a collider only, not a query shape"};
    }
    oq.pose.position = ReadVec3(Field(o, "position", op), op + ".position");
    oq.pose.rotation = OptionalQuat(o, op);
    oq.filter.mask = ReadMask(o, op);
    cq.kind = QueryKind::kOverlap;
    cq.query = oq;
  } else if (q.contains("sweep")) {
    const json& s = q.at("sweep");
    const std::string sp = p + ".sweep";
    CastQuery c;
    c.shape = ReadShape(Field(s, "shape", sp), sp + ".shape");
    if (!IsConvexKind(c.shape.kind())) {
      throw ParseError{sp + ".shape", "a " + std::string(ShapeKindName(c.shape.kind())) +
                                          " is a collider only, not a query shape"};
    }
    c.pose.position = ReadVec3(Field(s, "position", sp), sp + ".position");
    c.pose.rotation = OptionalQuat(s, sp);
    c.translation = ReadVec3(Field(s, "translation", sp), sp + ".translation");
    c.filter.mask = ReadMask(s, sp);
    cq.kind = QueryKind::kSweep;
    cq.query = c;
  } else if (q.contains("raycast")) {
    const json& r = q.at("raycast");
    const std::string rp = p + ".raycast";
    RayQuery rq;
    rq.origin = ReadVec3(Field(r, "origin", rp), rp + ".origin");
    rq.translation = ReadVec3(Field(r, "translation", rp), rp + ".translation");
    rq.filter.mask = ReadMask(r, rp);
    cq.kind = QueryKind::kRaycast;
    cq.query = rq;
  } else if (q.contains("move")) {
    const json& m = q.at("move");
    const std::string mp = p + ".move";
    MoveQuery mq;
    mq.shape = ReadShape(Field(m, "shape", mp), mp + ".shape");
    if (!IsConvexKind(mq.shape.kind())) {
      throw ParseError{mp + ".shape", "a " + std::string(ShapeKindName(mq.shape.kind())) +
                                          " is a collider only, not a query shape"};
    }
    mq.pose.position = ReadVec3(Field(m, "position", mp), mp + ".position");
    mq.pose.rotation = OptionalQuat(m, mp);
    mq.displacement = ReadVec3(Field(m, "displacement", mp), mp + ".displacement");
    mq.filter.mask = ReadMask(m, mp);
    MoveSettings& st = mq.settings;
    if (m.contains("up")) st.up = ReadVec3(m.at("up"), mp + ".up");
    auto number = [&](const char* key, double* dst) {
      if (m.contains(key)) *dst = Number(m.at(key), mp + "." + key);
    };
    number("step_height", &st.step_height);
    number("max_slope_degrees", &st.max_slope_degrees);
    number("skin_width", &st.skin_width);
    number("ground_snap_distance", &st.ground_snap_distance);
    if (m.contains("max_iterations")) {
      const uint64_t n = Uint64(m.at("max_iterations"), mp + ".max_iterations");
      if (n > 64) throw ParseError{mp + ".max_iterations", "exceeds 64"};
      st.max_iterations = static_cast<int>(n);
    }
    cq.kind = QueryKind::kMove;
    cq.query = mq;
  } else {
    throw ParseError{p, "no overlap, sweep, raycast or move"};
  }
}

// An expected answer in whichever form it has: overlap lists, a sweep or
// raycast "hit" (null or an id, with fraction), a move's "position".
Expected ReadExpected(const json& e, const std::string& p) {
  Expected ex;
  ex.id = Uint64(Field(e, "id", p), p + ".id");
  ex.hits = IdList(e, "hits", p);
  ex.maybe = IdList(e, "maybe", p);
  ex.tolerance = e.contains("tolerance") ? Number(e.at("tolerance"), p + ".tolerance") : 1e-4;
  if (e.contains("hit")) {
    ex.hit_given = true;
    const json& hit = e.at("hit");
    if (!hit.is_null()) {
      ex.hit = Uint64(hit, p + ".hit");
      ex.fraction = Number(Field(e, "fraction", p), p + ".fraction");
      ex.also = IdList(e, "also", p);
    }
  }
  if (e.contains("position")) ex.position = ReadVec3(e.at("position"), p + ".position");
  return ex;
}

bool ReadFile(const std::string& path, std::string* out) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) return false;
    char buf[1 << 16];
    for (;;) {
      const int n = gzread(f, buf, sizeof(buf));
      if (n < 0) {
        gzclose(f);
        return false;
      }
      if (n == 0) break;
      out->append(buf, static_cast<size_t>(n));
    }
    gzclose(f);
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

bool Contains(const std::vector<uint64_t>& v, uint64_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

// Thrown out of the streaming parser's callback to stop at a visitor's error.
struct Stop {
  Status status;
};

// A std::streambuf over a gzip file, so that .json.gz query files stream too.
class GzStreamBuf : public std::streambuf {
 public:
  explicit GzStreamBuf(gzFile file) : file_(file) {}
  ~GzStreamBuf() override { gzclose(file_); }
  GzStreamBuf(const GzStreamBuf&) = delete;
  GzStreamBuf& operator=(const GzStreamBuf&) = delete;
  bool failed() const { return failed_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_, sizeof(buffer_));
    if (n <= 0) {
      failed_ = n < 0;
      return traits_type::eof();
    }
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile file_;
  char buffer_[1 << 16];
  bool failed_ = false;
};

}  // namespace

const char* QueryKindName(QueryKind kind) {
  switch (kind) {
    case QueryKind::kOverlap: return "overlap";
    case QueryKind::kSweep: return "sweep";
    case QueryKind::kRaycast: return "raycast";
    case QueryKind::kMove: return "move";
  }
  return "unknown";
}

Result<CaseFile> LoadCaseFile(const std::string& path) {
  std::string text;
  if (!ReadFile(path, &text)) return Error{ErrorCode::kNotFound, path + ": cannot read"};
  CaseFile file;
  file.name = std::filesystem::path(path).filename().string();
  try {
    const json doc = json::parse(text);
    text.clear();
    const std::string format = Field(doc, "format", "").get<std::string>();
    if (format != "hitbox-cases/1") throw ParseError{".format", "unsupported '" + format + "'"};
    if (doc.contains("scenario") && doc.at("scenario").is_string()) {
      file.scenario = doc.at("scenario").get<std::string>();
    }
    // Rewind files: "ticks": [first, last] and per-collider histories.
    uint64_t tick_count = 0;
    if (doc.contains("ticks")) {
      const json& t = doc.at("ticks");
      if (!t.is_array() || t.size() != 2) throw ParseError{".ticks", "expected [first, last]"};
      const uint64_t first = Uint64(t[0], ".ticks[0]");
      const uint64_t last = Uint64(t[1], ".ticks[1]");
      if (last < first || last - first >= kMaxCaseTicks || last > kMaxTick) {
        throw ParseError{".ticks", "expected first <= last < first + 64"};
      }
      file.ticks = TickRange{first, last};
      tick_count = last - first + 1;
      file.tick_moves.resize(tick_count - 1);
    }
    const json& colliders = Field(doc, "colliders", "");
    file.colliders.reserve(colliders.size());
    std::unordered_set<uint64_t> collider_ids;
    for (size_t i = 0; i < colliders.size(); ++i) {
      const json& c = colliders[i];
      const std::string p = "colliders[" + std::to_string(i) + "]";
      Collider col;
      col.id = Uint64(Field(c, "id", p), p + ".id");
      if (!collider_ids.insert(col.id).second) throw ParseError{p + ".id", "repeats an earlier collider"};
      const uint64_t layer = c.contains("layer") ? Uint64(c.at("layer"), p + ".layer") : 0;
      if (layer > kMaxLayer) throw ParseError{p + ".layer", "exceeds 31"};
      col.layer = static_cast<uint32_t>(layer);
      col.shape = ReadShape(Field(c, "shape", p), p + ".shape");
      col.pose.position = ReadVec3(Field(c, "position", p), p + ".position");
      col.pose.rotation = ReadQuat(Field(c, "rotation", p), p + ".rotation");
      col.user_data = col.id;
      if (c.contains("history")) {
        const std::string hp = p + ".history";
        const json& h = c.at("history");
        if (!file.ticks) throw ParseError{hp, "a history needs the top-level ticks"};
        if (!h.is_array() || h.size() != tick_count) {
          throw ParseError{hp, "expected one entry per tick (" + std::to_string(tick_count) + ")"};
        }
        for (size_t k = 0; k < h.size(); ++k) {
          const std::string ep = hp + "[" + std::to_string(k) + "]";
          if (Uint64(Field(h[k], "tick", ep), ep + ".tick") != file.ticks->oldest + k) {
            throw ParseError{ep + ".tick", "expected " + std::to_string(file.ticks->oldest + k)};
          }
          const Pose pose{ReadVec3(Field(h[k], "position", ep), ep + ".position"),
                          ReadQuat(Field(h[k], "rotation", ep), ep + ".rotation")};
          if (k == 0) {
            col.pose = pose;  // added at its pose of the first tick
          } else {
            file.tick_moves[k - 1].push_back(ColliderChange::Move(col.id, pose));
          }
        }
      }
      file.colliders.push_back(col);
    }
    const json& queries = Field(doc, "queries", "");
    file.queries.reserve(queries.size());
    std::unordered_set<uint64_t> query_ids;
    for (size_t i = 0; i < queries.size(); ++i) {
      const json& q = queries[i];
      const std::string p = "queries[" + std::to_string(i) + "]";
      CaseQuery cq;
      cq.id = Uint64(Field(q, "id", p), p + ".id");
      std::optional<double> at_tick;
      if (q.contains("at_tick")) {
        at_tick = Number(q.at("at_tick"), p + ".at_tick");
        if (!file.ticks || !(*at_tick >= static_cast<double>(file.ticks->oldest) &&
                             *at_tick <= static_cast<double>(file.ticks->newest))) {
          throw ParseError{p + ".at_tick", "outside the file's ticks"};
        }
      }
      if (!query_ids.insert(cq.id).second) throw ParseError{p + ".id", "repeats an earlier query"};
      ReadQueryBody(q, p, &cq);
      if (cq.kind == QueryKind::kMove) throw ParseError{p + ".move", "case files hold no moves"};
      std::visit([&at_tick](auto& x) { x.at_tick = at_tick; }, cq.query);
      file.queries.push_back(std::move(cq));
    }
    const json& expected = Field(doc, "expected", "");
    if (expected.size() != file.queries.size()) {
      throw ParseError{".expected", "has " + std::to_string(expected.size()) + " answers for " +
                                        std::to_string(file.queries.size()) + " queries"};
    }
    file.expected.reserve(expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const json& e = expected[i];
      const std::string p = "expected[" + std::to_string(i) + "]";
      Expected ex = ReadExpected(e, p);
      if (ex.id != file.queries[i].id) throw ParseError{p + ".id", "does not match queries[i].id"};
      if (file.queries[i].kind != QueryKind::kOverlap && !ex.hit_given) {
        throw ParseError{p + ".hit", "missing"};
      }
      file.expected.push_back(std::move(ex));
    }
  } catch (const ParseError& e) {
    return Error{ErrorCode::kInvalidArgument, path + ": " + e.path + ": " + e.what};
  } catch (const json::exception& e) {
    return Error{ErrorCode::kInvalidArgument, path + ": " + e.what()};
  }
  return file;
}

std::vector<std::string> ListCaseFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    auto ends = [&](const std::string& suffix) {
      return name.size() > suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends(".json") || ends(".json.gz")) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status LoadWorld(const CaseFile& file, ColliderSet* set) {
  if (!file.ticks) return set->AddBulk(file.colliders);
  set->SetHistoryTicks(std::max<uint32_t>(set->history_ticks(),
                                          static_cast<uint32_t>(file.tick_moves.size() + 1)));
  if (Status s = set->AddBulk(file.colliders, file.ticks->oldest); !s.ok()) return s;
  for (size_t k = 0; k < file.tick_moves.size(); ++k) {
    if (Status s = set->Apply(file.tick_moves[k], file.ticks->oldest + 1 + k); !s.ok()) return s;
  }
  return Status::Ok();
}

std::vector<std::string> ListSupportedCaseFiles(const std::string& dir) {
  std::vector<std::string> out = ListCaseFiles(dir);
  const std::filesystem::path next = std::filesystem::path(dir) / "next";
  for (const char* name : kSupportedNextCaseFiles) {
    std::error_code ec;
    const std::filesystem::path p = next / name;
    if (std::filesystem::is_regular_file(p, ec)) out.push_back(p.string());
  }
  for (const std::string& f : ListCaseFiles((std::filesystem::path(dir) / "rewind").string())) {
    out.push_back(f);
  }
  std::filesystem::path cases = std::filesystem::path(dir).lexically_normal();
  if (cases.filename().empty()) cases = cases.parent_path();  // a trailing '/'
  for (const std::string& f : ListCaseFiles((cases.parent_path() / "levels").string())) {
    out.push_back(f);
  }
  return out;
}

Status StreamQueryFile(const std::string& path, const QueryFileVisitor& visitor) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::unique_ptr<GzStreamBuf> gz_buf;
  std::ifstream file;
  std::istream* in = &file;
  std::unique_ptr<std::istream> gz_in;
  if (gz) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) return Error{ErrorCode::kNotFound, path + ": cannot read"};
    gz_buf = std::make_unique<GzStreamBuf>(f);
    gz_in = std::make_unique<std::istream>(gz_buf.get());
    in = gz_in.get();
  } else {
    file.open(path, std::ios::binary);
    if (!file) return Error{ErrorCode::kNotFound, path + ": cannot read"};
  }
  using Event = json::parse_event_t;
  std::string member;  // the top-level member being read
  bool saw_queries = false;
  size_t queries = 0;
  size_t answers = 0;
  // Each entry of "queries" and "expected" is built by the parser, handed to
  // the visitor at its end and dropped (the callback returns false); every
  // other top-level member is skipped as a whole.
  auto callback = [&](int depth, Event event, json& parsed) -> bool {
    if (depth == 0) return true;
    if (depth == 1) {
      if (event == Event::key) {
        member = parsed.get<std::string>();
        if (member == "queries") saw_queries = true;
        return true;
      }
      const bool entries = member == "queries" || member == "expected";
      if (entries && event == Event::value) throw ParseError{"." + member, "expected an array"};
      return entries && event != Event::object_start;
    }
    if (depth > 2 || (member != "queries" && member != "expected")) return true;
    if (event != Event::object_end && event != Event::value && event != Event::array_end) return true;
    const bool is_query = member == "queries";
    const size_t index = is_query ? queries++ : answers++;
    const std::string p = member + "[" + std::to_string(index) + "]";
    if (event != Event::object_end) throw ParseError{p, "expected an object"};
    if (is_query && visitor.on_query) {
      CaseQuery cq;
      cq.id = Uint64(Field(parsed, "id", p), p + ".id");
      std::optional<double> at_tick;
      if (parsed.contains("at_tick")) at_tick = Number(parsed.at("at_tick"), p + ".at_tick");
      ReadQueryBody(parsed, p, &cq);
      std::visit([&at_tick](auto& x) { x.at_tick = at_tick; }, cq.query);
      if (Status st = visitor.on_query(index, std::move(cq)); !st.ok()) throw Stop{st};
    } else if (!is_query && visitor.on_expected) {
      if (Status st = visitor.on_expected(index, ReadExpected(parsed, p)); !st.ok()) throw Stop{st};
    }
    return false;
  };
  try {
    const json rest = json::parse(*in, callback);  // what is left: the skipped members
    (void)rest;
  } catch (const Stop& stop) {
    return stop.status;
  } catch (const ParseError& e) {
    return Error{ErrorCode::kInvalidArgument, path + ": " + e.path + ": " + e.what};
  } catch (const json::exception& e) {
    return Error{ErrorCode::kInvalidArgument, path + ": " + e.what()};
  }
  if (gz_buf && gz_buf->failed()) {
    return Error{ErrorCode::kInvalidArgument, path + ": not a readable gzip file"};
  }
  if (!saw_queries) return Error{ErrorCode::kInvalidArgument, path + ": no \"queries\" array"};
  return Status::Ok();
}

std::vector<Query> Queries(const CaseFile& file) {
  std::vector<Query> qs;
  qs.reserve(file.queries.size());
  for (const CaseQuery& q : file.queries) qs.push_back(q.query);
  return qs;
}

Verdict CheckAnswer(const CaseQuery& query, const Expected& ex, const QueryResult& result) {
  Verdict v;
  auto fail = [&](std::string why) {
    v.ok = false;
    v.reason = std::move(why);
    return v;
  };
  if (query.kind == QueryKind::kMove) {
    if (!ex.position) return fail("the expected answer of a move has no \"position\"");
    if (!result.move) return fail("the answer holds no move result");
    const double off = (result.move->position - *ex.position).Length();
    if (!(off <= ex.tolerance)) {
      return fail("ended at " + ToString(result.move->position) + ", expected " +
                  ToString(*ex.position) + " +- " + FormatDouble(ex.tolerance) + " (off by " + FormatDouble(off) +
                  ")");
    }
    return v;
  }
  if (query.kind != QueryKind::kOverlap && !ex.hit_given) {
    return fail(std::string("the expected answer of a ") + QueryKindName(query.kind) +
                " has no \"hit\"");
  }
  if (query.kind == QueryKind::kOverlap && (ex.hit_given || ex.position)) {
    return fail("the expected answer is not an overlap's (\"hits\", \"maybe\")");
  }
  if (query.kind == QueryKind::kOverlap) {
    std::vector<uint64_t> got;
    for (const OverlapHit& h : result.overlaps) got.push_back(h.id);
    for (uint64_t id : ex.hits) {
      if (!Contains(got, id)) return fail("missed collider " + std::to_string(id));
    }
    for (uint64_t id : got) {
      if (!Contains(ex.hits, id) && !Contains(ex.maybe, id)) {
        return fail("reported collider " + std::to_string(id) + " which it does not touch");
      }
    }
    return v;
  }
  if (!ex.hit) {
    if (!result.hits.empty()) {
      return fail("expected no hit, got collider " + std::to_string(result.hits[0].id) +
                  " at fraction " + FormatDouble(result.hits[0].fraction));
    }
    return v;
  }
  if (result.hits.empty()) {
    return fail("expected collider " + std::to_string(*ex.hit) + " at fraction " +
                FormatDouble(ex.fraction) + ", got no hit");
  }
  const CastHit& h = result.hits[0];
  if (h.id != *ex.hit && !Contains(ex.also, h.id)) {
    return fail("expected collider " + std::to_string(*ex.hit) + " at fraction " +
                FormatDouble(ex.fraction) + ", got collider " + std::to_string(h.id) +
                " at fraction " + FormatDouble(h.fraction));
  }
  if (!(std::fabs(h.fraction - ex.fraction) <= ex.tolerance)) {
    return fail("collider " + std::to_string(h.id) + ": fraction " + FormatDouble(h.fraction) +
                ", expected " + FormatDouble(ex.fraction) + " +- " + FormatDouble(ex.tolerance));
  }
  if (!(std::fabs(h.normal.Length() - 1.0) <= 1e-6)) {
    return fail("collider " + std::to_string(h.id) + ": normal " + ToString(h.normal) +
                " is not unit length");
  }
  const Vec3 translation = query.kind == QueryKind::kSweep
                               ? std::get<CastQuery>(query.query).translation
                               : std::get<RayQuery>(query.query).translation;
  if (h.fraction != 0.0 && Dot(h.normal, translation) > 1e-6) {
    return fail("collider " + std::to_string(h.id) + ": normal " + ToString(h.normal) +
                " points along the motion " + ToString(translation));
  }
  return v;
}

Report CheckAll(const CaseFile& file, std::span<const QueryResult> results,
                size_t max_failures) {
  Report report;
  const size_t n = std::min(results.size(), file.queries.size());
  for (size_t i = 0; i < file.queries.size(); ++i) {
    const CaseQuery& q = file.queries[i];
    const int k = static_cast<int>(q.kind);
    ++report.total[k];
    const Verdict v = i < n ? CheckAnswer(q, file.expected[i], results[i])
                            : Verdict{false, "no result"};
    if (v.ok) {
      ++report.passed[k];
      continue;
    }
    ++report.failed;
    if (report.failures.size() < max_failures) {
      report.failures.push_back(file.name + " query " + std::to_string(q.id) + " (" +
                                QueryKindName(q.kind) + "): " + v.reason);
    }
  }
  return report;
}

std::string Report::ToString(const CaseFile& file) const {
  std::string out = file.name + ": " + std::to_string(file.colliders.size()) + " colliders\n";
  for (int k = 0; k < kQueryKindCount; ++k) {
    if (total[k] == 0) continue;
    char line[96];
    std::snprintf(line, sizeof(line), "  %-8s %6d / %6d passed\n",
                  QueryKindName(static_cast<QueryKind>(k)), passed[k], total[k]);
    out += line;
  }
  for (const std::string& f : failures) out += "FAIL " + f + "\n";
  if (failed > failures.size()) {
    out += "... and " + std::to_string(failed - failures.size()) + " more failures\n";
  }
  return out;
}

}  // namespace hitbox::cases
