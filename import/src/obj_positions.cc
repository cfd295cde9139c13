#include "obj_positions.h"

#include <charconv>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <system_error>

namespace hitbox::import {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

/// Calls fn(line) for each line as tinyobjloader's safeGetline splits them
/// (at "\n", "\r\n" or a lone "\r"), the file read 64 KiB at a time.
template <typename Fn>
bool ForEachLine(const std::string& path, Fn&& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string line;
  bool after_cr = false;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof(buf));
    const std::streamsize got = in.gcount();
    for (std::streamsize i = 0; i < got; ++i) {
      const char c = buf[i];
      if (after_cr) {
        after_cr = false;
        if (c == '\n') continue;  // the "\n" of a "\r\n"
      }
      if (c == '\n' || c == '\r') {
        fn(line);
        line.clear();
        after_cr = c == '\r';
        continue;
      }
      line += c;
    }
  }
  if (in.bad()) return false;
  if (!line.empty()) fn(line);
  return true;
}

/// True for a vertex position line: "v" then a space or tab, after spaces
/// and tabs (tinyobjloader's test); *rest is set after the "v ".
bool IsPositionLine(const std::string& line, const char** rest) {
  const char* p = line.c_str();  // as tinyobjloader reads it: up to a NUL
  while (IsSpace(*p)) ++p;
  if (p[0] != 'v' || !IsSpace(p[1])) return false;
  *rest = p + 2;
  return true;
}

}  // namespace

bool ReadObjPositions(const std::string& path, std::vector<double>* xyz) {
  size_t lines = 0;
  const auto count = [&](const std::string& line) {
    const char* rest = nullptr;
    if (IsPositionLine(line, &rest)) ++lines;
  };
  if (!ForEachLine(path, count) || lines * 3 != xyz->size()) return false;
  size_t at = 0;
  const auto read = [&](const std::string& line) {
    const char* p = nullptr;
    if (!IsPositionLine(line, &p)) return;
    for (int a = 0; a < 3; ++a, ++at) {
      // A token ends at a space, tab, "\r" or the end (tinyobjloader's).
      while (IsSpace(*p)) ++p;
      const char* end = p;
      while (*end != '\0' && !IsSpace(*end) && *end != '\r') ++end;
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
