#include "gltf_buffers.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include <nlohmann/json.hpp>

namespace hitbox::import {
namespace {

Error Invalid(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message)};
}

uint32_t ReadU32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// A one-byte buffer tinygltf decodes in place of one read from a file.
constexpr const char* kStandIn = "data:application/octet-stream;base64,AA==";

// A URI's path as tinygltf decodes it: %XX escapes, and '+' as a space.
std::string DecodeUri(const std::string& uri) {
  std::string out;
  for (size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] == '+') {
      out += ' ';
    } else if (uri[i] == '%' && i + 2 < uri.size() &&
               std::isxdigit(static_cast<unsigned char>(uri[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(uri[i + 2]))) {
      out += static_cast<char>(std::stoi(uri.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += uri[i];
    }
  }
  return out;
}

// The GLB container (glTF 2.0, "Binary glTF Layout"): a 12-byte header, the
// JSON chunk, then an optional BIN chunk; the JSON is read, the BIN chunk's
// place noted.
Status ReadGlbChunks(const std::string& path, std::string* json, BufferFile* bin) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Invalid("cannot read the file: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  unsigned char head[20] = {};
  in.read(reinterpret_cast<char*>(head), sizeof(head));
  if (size < 20 || !in) {
    return Invalid(
        "a binary glTF needs at least 20 bytes (header and JSON chunk header), the file has " +
        std::to_string(size));
  }
  if (std::memcmp(head, "glTF", 4) != 0) return Invalid("not a binary glTF (no 'glTF' magic)");
  const uint32_t version = ReadU32(head + 4), length = ReadU32(head + 8);
  if (version != 2) return Invalid("GLB version " + std::to_string(version) + ", only 2 is read");
  if (length > size) {
    return Invalid("the GLB header gives " + std::to_string(length) + " bytes, the file has " +
                   std::to_string(size) + " (truncated?)");
  }
  const uint32_t json_length = ReadU32(head + 12);
  if (ReadU32(head + 16) != 0x4E4F534Au) return Invalid("the first GLB chunk is not JSON");
  const uint64_t json_end = 20 + uint64_t{json_length};
  if (json_length == 0 || json_end > length) {
    return Invalid("the JSON chunk (" + std::to_string(json_length) +
                   " bytes) runs past the GLB's " + std::to_string(length) + " bytes");
  }
  json->resize(json_length);
  in.read(json->data(), json_length);
  if (!in) return Invalid("cannot read the JSON chunk");
  *bin = BufferFile{};
  if (json_end + 8 > length) return Status::Ok();  // no BIN chunk (at most padding)
  unsigned char chunk[8];
  in.read(reinterpret_cast<char*>(chunk), sizeof(chunk));
  if (!in) return Invalid("cannot read the BIN chunk's header");
  const uint32_t bin_length = ReadU32(chunk);
  if (ReadU32(chunk + 4) != 0x004E4942u) return Invalid("the second GLB chunk is not BIN");
  if (json_end + 8 + bin_length > length) {
    return Invalid("the BIN chunk (" + std::to_string(bin_length) + " bytes) runs past the GLB's " +
                   std::to_string(length) + " bytes");
  }
  *bin = BufferFile{path, json_end + 8, bin_length};
  return Status::Ok();
}

}  // namespace

Result<GltfDocument> ReadGltfDocument(const std::string& path, bool binary) {
  GltfDocument doc;
  const size_t slash = path.find_last_of('/');
  doc.base_dir = slash == std::string::npos ? "" : path.substr(0, slash);
  BufferFile bin;
  if (binary) {
    if (Status s = ReadGlbChunks(path, &doc.json, &bin); !s.ok()) return s.error();
  } else {
    std::ifstream in(path, std::ios::binary);
    doc.json.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return Invalid("cannot read the file");
  }
  nlohmann::json root = nlohmann::json::parse(doc.json, nullptr, /*allow_exceptions=*/false);
  // Not JSON, or not an object: tinygltf reads the text as it is and says why.
  if (root.is_discarded() || !root.is_object()) return doc;
  root.erase("images");
  const auto buffers = root.find("buffers");
  if (buffers != root.end() && buffers->is_array()) {
    doc.buffers.resize(buffers->size());
    for (size_t i = 0; i < buffers->size(); ++i) {
      nlohmann::json& b = (*buffers)[i];
      if (!b.is_object()) continue;
      const auto bytes = b.find("byteLength");
      if (bytes == b.end() || !bytes->is_number_unsigned()) continue;  // tinygltf says why
      const uint64_t length = bytes->get<uint64_t>();
      const auto uri = b.find("uri");
      const std::string name = "buffer " + std::to_string(i);
      BufferFile file;
      if (uri == b.end()) {
        if (!binary) continue;  // tinygltf: a .gltf's buffer needs a uri
        if (bin.path.empty()) return Invalid(name + " has no uri and the file has no BIN chunk");
        if (length > bin.length) {
          return Invalid(name + ": byteLength " + std::to_string(length) +
                         " is more than the BIN chunk's " + std::to_string(bin.length) + " bytes");
        }
        file = BufferFile{path, bin.offset, length};
      } else {
        if (!uri->is_string()) continue;
        const std::string& text = uri->get_ref<const std::string&>();
        if (text.rfind("data:", 0) == 0) continue;  // decoded by tinygltf
        const std::string decoded = DecodeUri(text);
        std::string found = doc.base_dir.empty() ? decoded : doc.base_dir + "/" + decoded;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(found, ec)) found = decoded;
        if (!std::filesystem::is_regular_file(found, ec)) {
          return Invalid(name + ": file '" + decoded + "' not found beside the document");
        }
        const uint64_t size = std::filesystem::file_size(found, ec);
        if (ec || size < length) {
          return Invalid(name + ": '" + decoded + "' has " + std::to_string(size) +
                         " bytes, byteLength says " + std::to_string(length));
        }
        file = BufferFile{found, 0, length};
      }
      doc.buffers[i] = std::move(file);
      b["uri"] = kStandIn;
      b["byteLength"] = 1;
    }
  }
  doc.json = root.dump();
  return doc;
}

ElementReader::ElementReader(const unsigned char* base, size_t stride, size_t element, size_t count)
    : base_(base), stride_(stride), element_(element), count_(count) {}

ElementReader::ElementReader(const BufferFile& file, uint64_t start, size_t stride, size_t element,
                             size_t count)
    : stride_(stride), element_(element), count_(count), file_start_(file.offset + start) {
  fd_ = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  failed_ = fd_ < 0;
}

ElementReader::~ElementReader() {
  if (fd_ >= 0) ::close(fd_);
}

ElementReader::ElementReader(ElementReader&& o) noexcept
    : base_(o.base_),
      stride_(o.stride_),
      element_(o.element_),
      count_(o.count_),
      fd_(o.fd_),
      file_start_(o.file_start_),
      first_(o.first_),
      loaded_(o.loaded_),
      window_(std::move(o.window_)),
      failed_(o.failed_) {
  o.fd_ = -1;
}

void ElementReader::Load(size_t i) {
  // About 64 KiB of elements (at least one), from i on.
  const size_t per = std::max<size_t>(1, (size_t{1} << 16) / stride_);
  first_ = i;
  loaded_ = std::min(per, count_ - std::min(i, count_));
  if (loaded_ == 0) loaded_ = 1;  // past the end: zeros (callers check count)
  window_.assign(loaded_ * stride_, 0);
  if (failed_ || i >= count_) {
    failed_ = true;
    return;
  }
  // The last element may end before its stride does.
  const size_t bytes = (loaded_ - 1) * stride_ + element_;
  size_t done = 0;
  while (done < bytes) {
    const ssize_t r = ::pread(fd_, window_.data() + done, bytes - done,
                              static_cast<off_t>(file_start_ + i * stride_ + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      failed_ = true;
      return;
    }
    done += static_cast<size_t>(r);
  }
}

}  // namespace hitbox::import
