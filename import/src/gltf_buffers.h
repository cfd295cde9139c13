// glTF buffers read from their files rather than held: tinygltf parses the
// document with every buffer that lives in a file (a .glb's BIN chunk, an
// external .bin) stood in for by one byte, and the importer reads the bytes
// of each accessor it needs from the file, a window at a time. A level's
// geometry is then never in memory twice (file bytes beside its meshes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hitbox/status.h"

namespace hitbox::import {

/// Where a buffer's bytes are: `path` empty for tinygltf's own copy (a data
/// URI), else `length` bytes of the file at `path` from byte `offset`.
struct BufferFile {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// A glTF document ready for tinygltf: its JSON (a .glb's JSON chunk, or the
/// .gltf text) with each buffer in a file replaced by a one-byte data URI
/// and the images left out (collision reads none), the directory its URIs
/// are relative to, and per buffer index where its bytes are.
struct GltfDocument {
  std::string json;
  std::string base_dir;
  std::vector<BufferFile> buffers;
};

/// Reads the document of `path` (a .glb when `binary`: its header and
/// chunks checked against the file's size, the BIN chunk not read). Errors
/// name what is wrong, without the path.
Result<GltfDocument> ReadGltfDocument(const std::string& path, bool binary);

/// The elements of one accessor (`count` of `element` bytes, `stride` >=
/// `element` apart from `start`): At(i) points at element i's bytes, in memory or read
/// from `file` a window at a time (sequential reads touch each byte once).
/// A failed read leaves failed() set and At() pointing at zeros.
class ElementReader {
 public:
  /// Elements in memory from `base`.
  ElementReader(const unsigned char* base, size_t stride, size_t element, size_t count);
  /// Elements of `file`'s buffer from byte `start` of the buffer.
  ElementReader(const BufferFile& file, uint64_t start, size_t stride, size_t element,
                size_t count);
  ~ElementReader();
  ElementReader(ElementReader&& o) noexcept;
  ElementReader& operator=(ElementReader&&) = delete;
  ElementReader(const ElementReader&) = delete;
  ElementReader& operator=(const ElementReader&) = delete;

  const unsigned char* At(size_t i) {
    if (base_ != nullptr) return base_ + i * stride_;
    if (i < first_ || i >= first_ + loaded_) Load(i);
    return window_.data() + (i - first_) * stride_;
  }
  size_t count() const { return count_; }
  bool failed() const { return failed_; }

 private:
  void Load(size_t i);

  const unsigned char* base_ = nullptr;
  size_t stride_ = 0;
  size_t element_ = 0;
  size_t count_ = 0;
  int fd_ = -1;
  uint64_t file_start_ = 0;  // of element 0 in the file
  size_t first_ = 0;         // the window holds elements [first_, first_ + loaded_)
  size_t loaded_ = 0;
  std::vector<unsigned char> window_;
  bool failed_ = false;
};

}  // namespace hitbox::import
