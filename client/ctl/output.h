// Output of hitboxctl: plain-text tables for people and JSON for scripts,
// plus the progress bar of long uploads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hitbox/format.h"
#include "hitbox/client.h"
#include "hitbox/world/collider_set.h"
#include "hitbox/math/math.h"

namespace hitbox::ctl {

/// A text table: a header row, then rows of cells; columns are padded to the
/// widest cell, numbers (cells starting with a digit, '-' or '+') right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header);
  /// Appends one row; missing cells are blank, extra cells are dropped.
  void AddRow(std::vector<std::string> row);
  size_t rows() const { return rows_.size(); }
  /// The table with a header underline, one line per row, ending in '\n'.
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// "x,y,z", each with up to `digits` significant digits (FormatDouble).
std::string FormatVec3(const Vec3& v, int digits = 6);
/// "[minx,miny,minz]..[maxx,maxy,maxz]", or "-" when empty.
std::string FormatBounds(const std::optional<Aabb>& bounds);
/// A Unix time in milliseconds as UTC "YYYY-MM-DD hh:mm:ss".
std::string FormatUnixMs(int64_t unix_ms);

/// [x, y, z] as a JSON array.
nlohmann::json ToJson(const Vec3& v);
/// A session's fields as a JSON object (bounds null when the set is empty).
nlohmann::json ToJson(const SessionInfo& s);
/// {"min": [x, y, z], "max": [x, y, z]}, or null when unset or empty.
nlohmann::json BoundsJson(const std::optional<Aabb>& bounds);
/// An overlap hit: id, user_data and, when present, its contact.
nlohmann::json ToJson(const OverlapHit& h);
/// A cast/ray hit: id, user_data, fraction, normal, point, started_overlapping, depth.
nlohmann::json ToJson(const CastHit& h);

/// Prints `doc` on stdout, indented, with a trailing newline.
void PrintJson(const nlohmann::json& doc);

/// A progress bar on stderr, drawn only when stderr is a terminal and `enabled`.
class Progress {
 public:
  /// `total` units (> 0) of work described by `what` ("colliders").
  Progress(bool enabled, size_t total, std::string what);
  ~Progress();
  /// Redraws with `done` units finished (at most every 50 ms, and at the end).
  void Update(size_t done);
  /// Ends the bar's line (also done by the destructor).
  void Finish();

 private:
  bool enabled_;
  size_t total_;
  std::string what_;
  bool finished_ = false;
  int64_t last_draw_ms_ = -1;
};

}  // namespace hitbox::ctl
