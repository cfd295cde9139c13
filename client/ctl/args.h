// Command-line values of hitboxctl: vectors "x,y,z", quaternions "x,y,z,w",
// shapes (--sphere R | --box HX,HY,HZ | --capsule R,H | --cylinder R,H) and
// layer masks. Malformed values fail while parsing (exit code 2) with a
// message naming the flag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "hitbox/world/collider_set.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"
#include "hitbox/status.h"

namespace hitbox::ctl {

/// Parses exactly `count` comma-separated finite numbers ("1,2.5,-3").
Result<std::vector<double>> ParseNumbers(const std::string& text, size_t count);
/// Parses "x,y,z" (metres, finite).
Result<Vec3> ParseVec3(const std::string& text);
/// Parses "x,y,z,w" with | |q| - 1 | <= 1e-6, returned normalized.
Result<Quat> ParseQuat(const std::string& text);
/// Parses a layer mask: decimal or 0x-hex, in [0, 2^32 - 1], or "all".
Result<uint32_t> ParseMask(const std::string& text);
/// Parses comma-separated unsigned 64-bit ids ("3,17,42").
Result<std::vector<uint64_t>> ParseIds(const std::string& text);

/// Adds option `name` taking "x,y,z" into `out` (validated while parsing).
CLI::Option* AddVec3Option(CLI::App* app, const std::string& name, Vec3* out,
                           const std::string& description);
/// Adds option `name` taking "x,y,z,w" into `out` (validated while parsing).
CLI::Option* AddQuatOption(CLI::App* app, const std::string& name, Quat* out,
                           const std::string& description);

/// The query shape chosen with one of the shape flags.
struct ShapeArg {
  /// Set by whichever of --sphere/--box/--capsule/--cylinder was given.
  std::optional<Shape> shape;
};
/// Adds --sphere R, --box HX,HY,HZ (half-extents), --capsule R,H and
/// --cylinder R,H (radius, half-height), mutually exclusive, one required.
void AddShapeOptions(CLI::App* app, ShapeArg* out);

/// Query filter flags shared by overlap, cast and raycast.
struct FilterArgs {
  /// --mask: layer mask (default all layers).
  uint32_t mask = 0xFFFFFFFFu;
  /// --ignore: ids never reported.
  std::vector<uint64_t> ignore;
  /// --max-hits: most hits to report, 0 = the session's max_hits_per_query.
  uint32_t max_hits = 0;
};
/// Adds --mask, --ignore and --max-hits.
void AddFilterOptions(CLI::App* app, FilterArgs* out);
/// The query filter the flags describe.
QueryFilter ToFilter(const FilterArgs& f);

}  // namespace hitbox::ctl
