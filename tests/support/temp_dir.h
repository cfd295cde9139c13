// Scratch files for tests that never outlive the test: a fresh directory
// under $TMPDIR (or /tmp), removed with everything in it by the destructor.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace hitbox::testing {

/// A directory made with mkdtemp, named $TMPDIR/hitbox-STEM-XXXXXX; removed
/// (recursively) on destruction. path() is empty when it could not be made.
class TempDir {
 public:
  explicit TempDir(const std::string& stem = "test") {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hitbox-" +
                       stem + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The directory (no trailing slash).
  const std::string& path() const { return path_; }
  /// PATH/NAME (not created).
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// Writes `text` to PATH/NAME (creating sub-folders) and returns that path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = file(name);
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

 private:
  std::string path_;
};

/// The whole file (empty when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace hitbox::testing
