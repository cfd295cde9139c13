// Numbers as text, one way for the whole tree: error messages, case files,
// the CLI's tables and the SVG view.
#pragma once

#include <string>

namespace hitbox {

/// The shortest text that reads back to the same double ("0.1", "1e-07",
/// "-1.5e+09"); "nan", "inf" and "-inf" for the non-finite.
std::string FormatDouble(double v);

/// `v` with at most `digits` significant digits (printf "%.*g"): for people.
std::string FormatDouble(double v, int digits);

/// `v` with exactly `decimals` digits after the point (printf "%.*f").
std::string FormatFixed(double v, int decimals);

}  // namespace hitbox
