// The file input of the scene-file and case-file targets: the first byte picks
// how the rest reaches the loader, which takes a path.
//   mode % 3 == 0: written as is to a .json file;
//   mode % 3 == 1: gzip-compressed (zlib) into a .json.gz file, so the JSON
//                  parser sees the fuzzed text through the gzip path;
//   mode % 3 == 2: written as is to a .json.gz file (corrupt or truncated gzip).
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"

namespace hitbox::fuzz {

/// Writes `data` (mode byte first) to a scratch file; returns its path, "" for empty input.
inline const std::string& WriteJsonInput(const uint8_t* data, size_t size) {
  static const ScratchFile json(".json");
  static const ScratchFile gz(".json.gz");
  static const std::string none;
  if (size == 0) return none;
  const uint8_t mode = data[0] % 3;
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  if (mode == 0) {
    json.Write(body, n);
    return json.path();
  }
  if (mode == 2) {
    gz.Write(body, n);
    return gz.path();
  }
  gzFile f = gzopen(gz.path().c_str(), "wb");
  if (f == nullptr) std::abort();
  if (n > 0 && gzwrite(f, body, static_cast<unsigned>(n)) != static_cast<int>(n)) std::abort();
  gzclose(f);
  return gz.path();
}

}  // namespace hitbox::fuzz
