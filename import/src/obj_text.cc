#include "obj_text.h"

#include <tiny_obj_loader.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>
#include <vector>

#include "fit.h"

namespace hitbox::import {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

/// The next token from *p on (spaces and tabs skipped) to a space, a tab or
/// `end`, as tinyobjloader splits a line; *p is left past it.
std::string_view NextToken(const char** p, const char* end) {
  const char* begin = *p;
  while (begin < end && IsSpace(*begin)) ++begin;
  const char* stop = begin;
  while (stop < end && !IsSpace(*stop)) ++stop;
  *p = stop;
  return {begin, static_cast<size_t>(stop - begin)};
}

constexpr int kMaxDecimalDigits = 9;
constexpr uint64_t kPow10[kMaxDecimalDigits + 1] = {
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};
constexpr uint64_t kDecimalLimit = uint64_t{1} << 31;  // |q| below it: an int32, never the -0 mark

/// A coordinate written as a short decimal: (minus ? -1 : 1) * magnitude / 10^digits.
struct ShortDecimal {
  uint64_t magnitude = 0;
  int digits = 0;
  bool minus = false;
};

/// Reads `token` when it is [+|-]digits[.digits] with at most
/// kMaxDecimalDigits after the point and a magnitude below kDecimalLimit.
bool ReadShortDecimal(std::string_view token, ShortDecimal* out) {
  size_t i = 0;
  out->minus = false;
  if (i < token.size() && (token[i] == '+' || token[i] == '-')) out->minus = token[i++] == '-';
  uint64_t q = 0;
  int digits = -1;  // after the point; -1 before it
  bool any = false;
  for (; i < token.size(); ++i) {
    const char c = token[i];
    if (c == '.' && digits < 0 && any) {
      digits = 0;
      any = false;  // a digit must follow the point
      continue;
    }
    if (c < '0' || c > '9') return false;
    q = 10 * q + static_cast<uint64_t>(c - '0');
    if (q >= kDecimalLimit) return false;
    if (digits >= 0 && ++digits > kMaxDecimalDigits) return false;
    any = true;
  }
  if (!any) return false;
  out->magnitude = q;
  out->digits = std::max(digits, 0);
  return true;
}

/// Whether every "v" line's coordinates are short decimals that share one
/// divisor 10^digits() as int32s: the widest magnitude read for each count
/// of digits after the point.
class DecimalScan {
 public:
  /// Reads the x, y, z tokens of a "v" line's rest [p, end).
  void Add(const char* p, const char* end) {
    for (int a = 0; a < 3 && ok_; ++a) {
      ShortDecimal d;
      ok_ = ReadShortDecimal(NextToken(&p, end), &d);
      widest_[d.digits] = std::max(widest_[d.digits], d.magnitude);
      most_ = std::max(most_, d.digits);
    }
  }
  bool Fits() const {
    for (int k = 0; k <= most_ && ok_; ++k) {
      if (widest_[k] * kPow10[most_ - k] >= kDecimalLimit) return false;
    }
    return ok_;
  }
  int digits() const { return most_; }

 private:
  bool ok_ = true;
  int most_ = 0;
  uint64_t widest_[kMaxDecimalDigits + 1] = {};
};

/// Calls fn(begin, end) for each line as tinyobjloader's safeGetline
/// splits them (at "\n", "\r\n" or a lone "\r"), the file read 64 KiB at a
/// time, until fn returns false; a line ends at its first NUL too
/// (tinyobjloader reads c_str()). False when the file cannot be read.
template <typename Fn>
bool ForEachLine(const std::string& path, Fn&& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<char> buf(size_t{1} << 16);
  std::string carry;  // the start of a line that runs past the window
  bool after_cr = false;
  bool more = true;  // fn has not asked to stop
  const auto emit = [&](const char* begin, const char* end) {
    more = fn(begin, std::find(begin, end, '\0'));
  };
  while (in && more) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const char* p = buf.data();
    const char* const stop = p + in.gcount();
    if (after_cr && p < stop && *p == '\n') ++p;  // the "\n" of a "\r\n"
    after_cr = false;
    while (p < stop && more) {
      const char* eol = std::find_if(p, stop, [](char c) { return c == '\n' || c == '\r'; });
      if (eol == stop) {
        carry.append(p, stop);
        break;
      }
      if (carry.empty()) {
        emit(p, eol);
      } else {
        carry.append(p, eol);
        emit(carry.data(), carry.data() + carry.size());
        carry.clear();
      }
      p = eol + 1;
      if (*eol == '\r') {
        if (p == stop) {
          after_cr = true;
        } else if (*p == '\n') {
          ++p;
        }
      }
    }
  }
  if (in.bad()) return false;
  if (more && !carry.empty()) emit(carry.data(), carry.data() + carry.size());
  return true;
}

/// Where the coordinates of a "v" line [begin, end) start (past "v" and its
/// space), or null for any other line.
const char* VertexLineRest(const char* begin, const char* end) {
  while (begin < end && IsSpace(*begin)) ++begin;
  if (end - begin < 2 || begin[0] != 'v' || !IsSpace(begin[1])) return nullptr;
  return begin + 2;
}

/// The corners of the rest of an "f", "l" or "p" line from `p`, read as
/// tinyobjloader's parseTriple reads them (i, i/j, i//k, i/j/k, each by
/// atoi); -1 when an index is 0 (or no number), which LoadObj refuses.
long CountCorners(const char* p) {
  const auto index = [&p] {  // reads one index, false for 0
    const bool ok = std::atoi(p) != 0;
    p += std::strcspn(p, "/ \t\r");
    return ok;
  };
  long corners = 0;
  while (*p != '\0') {
    if (!index()) return -1;
    if (*p == '/') {
      ++p;
      const bool normal_only = *p == '/';  // "i//k"
      if (normal_only) ++p;
      if (!index()) return -1;
      if (!normal_only && *p == '/') {
        ++p;
        if (!index()) return -1;
      }
    }
    ++corners;
    p += std::strspn(p, " \t\r");
  }
  return corners;
}

/// LoadObj's reading of `line` alone: false when it refuses it. It reads
/// a "v" line, or a "vw" line (a tinyobjloader extension, refused when its
/// joint ids do not read as numbers >= 0), the same whatever came before.
bool LoadObjLine(const std::string& line, tinyobj::attrib_t* attrib) {
  std::istringstream in(line);
  std::vector<tinyobj::shape_t> shapes;
  std::vector<tinyobj::material_t> materials;
  std::string warn;
  std::string err;
  return tinyobj::LoadObj(attrib, &shapes, &materials, &warn, &err, &in, /*readMatFn=*/nullptr,
                          /*triangulate=*/false, /*default_vcols_fallback=*/false);
}

/// ReadObjText's second pass when every coordinate is a short decimal: q
/// over 10^digits for each. q and 10^digits are exact doubles, so
/// DecimalValue's division, correctly rounded, gives the double nearest
/// the decimal: from_chars' value of the token.
Status ReadDecimals(const std::string& path, size_t vertices, int digits, ObjText* text) {
  std::vector<int32_t> decimals;
  decimals.reserve(3 * vertices);
  bool same = true;  // the file reads as the first pass read it
  const auto read = [&](const char* begin, const char* line_end) {
    const char* p = VertexLineRest(begin, line_end);
    if (p == nullptr) return true;
    for (int a = 0; a < 3 && same; ++a) {
      ShortDecimal d;
      same = ReadShortDecimal(NextToken(&p, line_end), &d) && d.digits <= digits;
      const uint64_t q = d.magnitude * kPow10[digits - std::min(d.digits, digits)];
      same = same && q < kDecimalLimit;
      const auto value = static_cast<int32_t>(q);
      decimals.push_back(!d.minus ? value : (q == 0 ? kDecimalNegativeZero : -value));
    }
    return same;
  };
  if (!ForEachLine(path, read)) return Invalid("Cannot read the file again");
  if (!same || decimals.size() != 3 * vertices) {
    return Invalid("the file changed while it was read");
  }
  text->positions =
      NodeVertices::Decimals(std::move(decimals), static_cast<double>(kPow10[digits]));
  return Status::Ok();
}

}  // namespace

Status ReadObjText(const std::string& path, ObjText* text) {
  // First the checks and the sections, and how many vertices to hold.
  size_t vertices = 0;
  size_t line_number = 0;
  std::string line;  // the line NUL-terminated, as tinyobjloader reads it
  std::string error;
  text->sections.assign(1, ObjSection{});
  DecimalScan scan;
  const auto check = [&](const char* begin, const char* end) {
    ++line_number;
    line.assign(begin, end);
    const char* t = line.c_str();
    t += std::strspn(t, " \t");
    if (t[0] == 'v' && IsSpace(t[1])) {
      ++vertices;
      scan.Add(t + 2, line.data() + line.size());
    } else if (t[0] == 'v' && t[1] == 'w' && IsSpace(t[2])) {
      tinyobj::attrib_t attrib;
      if (!LoadObjLine(line, &attrib)) {
        error = "Failed parse `vw' line. joint_id is negative. line ";
      }
    } else if ((t[0] == 'l' || t[0] == 'p') && IsSpace(t[1])) {
      const long corners = CountCorners(t + 2);
      if (corners < 0) {
        error =
            std::string("Failed parse `") + t[0] + "' line(e.g. zero value for vertex index. line ";
      }
      if (corners > 0) text->sections.back().lines = true;
    } else if (t[0] == 'f' && IsSpace(t[1])) {
      const long corners = CountCorners(t + 2 + std::strspn(t + 2, " \t"));
      if (corners < 0) error = "Failed parse `f' line(e.g. zero value for face index. line ";
      if (corners >= 3) text->sections.back().triangles += static_cast<uint64_t>(corners - 2);
    } else if ((t[0] == 'g' || t[0] == 'o') && IsSpace(t[1])) {
      text->sections.emplace_back();
    }
    return error.empty();
  };
  if (!ForEachLine(path, check)) return Invalid("Cannot open file [" + path + "]");
  if (!error.empty()) return Invalid(error + std::to_string(line_number) + ".)");

  text->positions = NodeVertices();
  if (scan.Fits()) return ReadDecimals(path, vertices, scan.digits(), text);

  // Then each "v" line's coordinates, as from_chars reads its tokens.
  std::vector<Vec3> positions;
  positions.reserve(vertices);
  const auto read = [&](const char* begin, const char* line_end) {
    const char* p = VertexLineRest(begin, line_end);
    if (p == nullptr) return true;
    Vec3 xyz;
    bool whole[3];
    for (int a = 0; a < 3; ++a) {
      const std::string_view token = NextToken(&p, line_end);
      // from_chars takes no '+'.
      const char* from = token.data() + (token.starts_with('+') ? 1 : 0);
      const char* end = token.data() + token.size();
      const auto [stop, ec] = std::from_chars(from, end, xyz[a]);
      whole[a] = ec == std::errc() && stop == end && from != end;
    }
    if (!whole[0] || !whole[1] || !whole[2]) {
      // Seldom: tinyobjloader's value stands for a token not read whole.
      tinyobj::attrib_t theirs;
      if (LoadObjLine(std::string(begin, line_end), &theirs) && theirs.vertices.size() == 3) {
        for (int a = 0; a < 3; ++a) {
          if (!whole[a]) xyz[a] = theirs.vertices[static_cast<size_t>(a)];
        }
      }
    }
    positions.push_back(xyz);
    return true;
  };
  if (!ForEachLine(path, read)) return Invalid("Cannot read the file again");
  if (positions.size() != vertices) return Invalid("the file changed while it was read");
  text->positions = NodeVertices(std::move(positions));
  return Status::Ok();
}

}  // namespace hitbox::import
