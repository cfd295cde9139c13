// Scenes from conformance case files, through the shared case-file reader
// (hitbox_cases); kept in its own file so that only users pull it in.
#include "hitbox/cases/case_file.h"
#include "hitbox/loadgen.h"

namespace hitbox::loadgen {

Result<CaseScene> LoadCaseScene(const std::string& path) {
  Result<cases::CaseFile> file = cases::LoadCaseFile(path);
  if (!file.ok()) return file.error();
  CaseScene scene;
  scene.colliders = std::move(file->colliders);
  scene.queries = cases::Queries(*file);
  return scene;
}

}  // namespace hitbox::loadgen
