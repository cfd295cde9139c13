#include "args.h"

#include <algorithm>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "hitbox/world/collider_set.h"

namespace hitbox::ctl {
namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(sep, start);
    parts.push_back(Trim(text.substr(start, pos - start)));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return parts;
}

Result<double> ParseDouble(const std::string& s) {
  if (s.empty()) return Error{ErrorCode::kInvalidArgument, "empty number"};
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) {
    return Error{ErrorCode::kInvalidArgument, "'" + s + "' is not a number"};
  }
  if (!std::isfinite(v)) return Error{ErrorCode::kInvalidArgument, "'" + s + "' is not finite"};
  return v;
}

Result<uint64_t> ParseU64(const std::string& s, int base) {
  uint64_t v = 0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (base == 16) first += 2;
  const auto [ptr, ec] = std::from_chars(first, last, v, base);
  if (s.empty() || first == last || ec != std::errc() || ptr != last) {
    return Error{ErrorCode::kInvalidArgument, "'" + s + "' is not an unsigned 64-bit integer"};
  }
  return v;
}

// Wraps a Result-returning parser as a CLI11 option callback that throws
// CLI11's ValidationError (reported as a usage error naming the flag).
template <typename T, typename Parse>
CLI::Option* AddParsed(CLI::App* app, const std::string& name, T* out, Parse parse,
                       const std::string& description) {
  CLI::Option* opt = nullptr;
  opt = app->add_option_function<std::string>(
      name,
      [out, parse, name](const std::string& text) {
        auto r = parse(text);
        if (!r.ok()) throw CLI::ValidationError(name, r.error().message);
        *out = *r;
      },
      description);
  return opt;
}

}  // namespace

Result<std::vector<double>> ParseNumbers(const std::string& text, size_t count) {
  const std::vector<std::string> parts = Split(text, ',');
  if (parts.size() != count) {
    return Error{ErrorCode::kInvalidArgument, "expected " + std::to_string(count) +
                                                  " comma-separated numbers, got '" + text + "'"};
  }
  std::vector<double> values;
  for (const std::string& p : parts) {
    auto v = ParseDouble(p);
    if (!v.ok()) return v.error();
    values.push_back(*v);
  }
  return values;
}

Result<Vec3> ParseVec3(const std::string& text) {
  auto v = ParseNumbers(text, 3);
  if (!v.ok()) return v.error();
  return Vec3{(*v)[0], (*v)[1], (*v)[2]};
}

Result<Quat> ParseQuat(const std::string& text) {
  auto v = ParseNumbers(text, 4);
  if (!v.ok()) return v.error();
  const Quat q{(*v)[0], (*v)[1], (*v)[2], (*v)[3]};
  if (!q.IsNormalized(kQuatNormTolerance)) {
    return Error{ErrorCode::kInvalidArgument,
                 "quaternion norm " + std::to_string(q.Length()) + " is not 1 (x,y,z,w; tolerance 1e-6)"};
  }
  return q.Normalized();
}

Result<uint32_t> ParseMask(const std::string& text) {
  const std::string s = Trim(text);
  if (s == "all") return 0xFFFFFFFFu;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  auto v = ParseU64(s, hex ? 16 : 10);
  if (!v.ok() || *v > 0xFFFFFFFFull) {
    return Error{ErrorCode::kInvalidArgument,
                 "mask '" + text + "' is not a 32-bit number (decimal, 0x-hex or 'all')"};
  }
  return static_cast<uint32_t>(*v);
}

Result<std::vector<uint64_t>> ParseIds(const std::string& text) {
  std::vector<uint64_t> ids;
  for (const std::string& p : Split(text, ',')) {
    auto v = ParseU64(p, 10);
    if (!v.ok()) return v.error();
    ids.push_back(*v);
  }
  return ids;
}

CLI::Option* AddVec3Option(CLI::App* app, const std::string& name, Vec3* out,
                           const std::string& description) {
  return AddParsed(app, name, out, ParseVec3, description)->type_name("X,Y,Z");
}

CLI::Option* AddQuatOption(CLI::App* app, const std::string& name, Quat* out,
                           const std::string& description) {
  return AddParsed(app, name, out, ParseQuat, description)->type_name("X,Y,Z,W");
}

void AddShapeOptions(CLI::App* app, ShapeArg* out) {
  auto make = [](size_t count, auto build) {
    return [count, build](const std::string& text) -> Result<Shape> {
      auto v = ParseNumbers(text, count);
      if (!v.ok()) return v.error();
      return build(*v);
    };
  };
  auto* group = app->add_option_group("shape", "the query shape (exactly one)");
  auto* sphere = AddParsed(group, "--sphere", &out->shape,
                           make(1, [](const std::vector<double>& v) { return Shape::MakeSphere(v[0]); }),
                           "sphere of radius R metres");
  sphere->type_name("R");
  auto* box = AddParsed(group, "--box", &out->shape,
                        make(3, [](const std::vector<double>& v) {
                          return Shape::MakeBox({v[0], v[1], v[2]});
                        }),
                        "box with half-extents HX,HY,HZ metres (rotate it with --rot)");
  box->type_name("HX,HY,HZ");
  auto* capsule = AddParsed(group, "--capsule", &out->shape,
                            make(2, [](const std::vector<double>& v) {
                              return Shape::MakeCapsule(v[0], v[1]);
                            }),
                            "capsule of radius R and half-height H metres (axis local Y)");
  capsule->type_name("R,H");
  auto* cylinder = AddParsed(group, "--cylinder", &out->shape,
                             make(2, [](const std::vector<double>& v) {
                               return Shape::MakeCylinder(v[0], v[1]);
                             }),
                             "cylinder of radius R and half-height H metres (axis local Y)");
  cylinder->type_name("R,H");
  auto* hull = AddParsed(group, "--hull", &out->shape,
                         [](const std::string& text) -> Result<Shape> {
                           const size_t count =
                               static_cast<size_t>(std::count(text.begin(), text.end(), ',')) + 1;
                           if (count % 3 != 0) {
                             return Error{ErrorCode::kInvalidArgument,
                                          "--hull takes x,y,z triples (" + std::to_string(count) +
                                              " numbers given)"};
                           }
                           auto v = ParseNumbers(text, count);
                           if (!v.ok()) return v.error();
                           ConvexHull h;
                           for (size_t i = 0; i < count; i += 3) {
                             h.points.push_back({(*v)[i], (*v)[i + 1], (*v)[i + 2]});
                           }
                           return Shape::Make(h);
                         },
                         "solid convex hull of 4..256 points X,Y,Z,X,Y,Z,... (local frame, metres)");
  hull->type_name("X,Y,Z,...");
  group->require_option(1);
}

void AddFilterOptions(CLI::App* app, FilterArgs* out) {
  AddParsed(app, "--mask", &out->mask, ParseMask,
            "layer mask: bit i selects layer i (decimal, 0x-hex or 'all'; default all)")
      ->type_name("MASK");
  AddParsed(app, "--ignore", &out->ignore, ParseIds, "collider ids never reported")
      ->type_name("ID,ID,...");
  app->add_option("--max-hits", out->max_hits,
                  "most hits to report (0: the session's max_hits_per_query); a cut list "
                  "says 'truncated'")
      ->capture_default_str();
}

QueryFilter ToFilter(const FilterArgs& f) {
  QueryFilter filter;
  filter.mask = f.mask;
  filter.ignore = f.ignore;
  filter.max_hits = f.max_hits;
  return filter;
}

}  // namespace hitbox::ctl
