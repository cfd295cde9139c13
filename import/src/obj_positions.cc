#include "obj_positions.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <fstream>
#include <system_error>
#include <vector>

namespace hitbox::import {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

/// Calls fn(begin, end) for each line as tinyobjloader's safeGetline
/// splits them (at "\n", "\r\n" or a lone "\r"), the file read 64 KiB at a
/// time; a line ends at its first NUL too (tinyobjloader reads c_str()).
template <typename Fn>
bool ForEachLine(const std::string& path, Fn&& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<char> buf(size_t{1} << 16);
  std::string carry;  // the start of a line that runs past the window
  bool after_cr = false;
  const auto emit = [&](const char* begin, const char* end) {
    const char* nul = std::find(begin, end, '\0');
    fn(begin, nul);
  };
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const char* p = buf.data();
    const char* const stop = p + in.gcount();
    if (after_cr && p < stop && *p == '\n') ++p;  // the "\n" of a "\r\n"
    after_cr = false;
    while (p < stop) {
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
  if (!carry.empty()) emit(carry.data(), carry.data() + carry.size());
  return true;
}

/// True for a vertex position line: "v" then a space or tab, after spaces
/// and tabs (tinyobjloader's test); *rest is set after the "v ".
bool IsPositionLine(const char* p, const char* end, const char** rest) {
  while (p < end && IsSpace(*p)) ++p;
  if (end - p < 2 || p[0] != 'v' || !IsSpace(p[1])) return false;
  *rest = p + 2;
  return true;
}

}  // namespace

bool ReadObjPositions(const std::string& path, std::vector<double>* xyz) {
  size_t lines = 0;
  const auto count = [&](const char* begin, const char* end) {
    const char* rest = nullptr;
    if (IsPositionLine(begin, end, &rest)) ++lines;
  };
  if (!ForEachLine(path, count) || lines * 3 != xyz->size()) return false;
  size_t at = 0;
  const auto read = [&](const char* begin, const char* line_end) {
    const char* p = nullptr;
    if (!IsPositionLine(begin, line_end, &p)) return;
    for (int a = 0; a < 3; ++a, ++at) {
      // A token ends at a space, tab or the line's end (tinyobjloader's).
      while (p < line_end && IsSpace(*p)) ++p;
      const char* end = p;
      while (end < line_end && !IsSpace(*end)) ++end;
      const char* from = p + (p < end && *p == '+' ? 1 : 0);  // from_chars takes no '+'
      double value = 0.0;
      const auto [stop, ec] = std::from_chars(from, end, value);
      if (ec == std::errc() && stop == end && from != end) (*xyz)[at] = value;
      p = end;
    }
  };
  return ForEachLine(path, read) && at == xyz->size();
}

}  // namespace hitbox::import
