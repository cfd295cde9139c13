// Conformance: loads every case file of HITBOX_CASES_DIR (*.json, *.json.gz,
// listed when the test starts), runs every query on a ColliderSet and checks
// each answer against the independent reference (shared/cases/FORMAT.md).
// Prints pass counts per query kind and the first failures with their ids.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "hitbox/cases/case_file.h"
#include "hitbox/world/collider_set.h"
#include "temp_dir.h"

namespace hitbox {
namespace {

using cases::CaseFile;
using cases::QueryKind;

// The folder's files plus the supported files of its next/ subfolder and rewind/.
std::vector<std::string> CaseFiles() { return cases::ListSupportedCaseFiles(HITBOX_CASES_DIR); }

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  const std::filesystem::path path(info.param);
  std::string name = path.filename().string();
  if (path.parent_path().filename() == "next") name = "next_" + name;
  if (path.parent_path().filename() == "rewind") name = "rewind_" + name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class ConformanceTest : public ::testing::TestWithParam<std::string> {};

// Every answer of the file is right (overlap: hits ⊆ reported ⊆ hits ∪ maybe;
// sweep / raycast: the right collider within tolerance, sane normal).
TEST_P(ConformanceTest, AnswersMatchReference) {
  Result<CaseFile> loaded = cases::LoadCaseFile(GetParam());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const CaseFile& file = *loaded;
  ColliderSet set;
  const Status s = cases::LoadWorld(file, &set);  // with histories: one batch per tick
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(set.TreeValidate(), "");

  const std::vector<Query> queries = cases::Queries(file);
  std::vector<QueryResult> results(queries.size());
  ThreadPool pool(2);
  ASSERT_TRUE(set.RunBatch(queries, results, &pool, QueryBudget{}).ok());

  const cases::Report report = cases::CheckAll(file, results);
  std::printf("%s", report.ToString(file).c_str());
  for (int k = 0; k < cases::kQueryKindCount; ++k) {
    if (report.total[k] == 0) continue;
    ::testing::Test::RecordProperty(std::string(cases::QueryKindName(static_cast<QueryKind>(k))) +
                                        "_passed",
                                    std::to_string(report.passed[k]) + "/" +
                                        std::to_string(report.total[k]));
  }
  for (const std::string& f : report.failures) ADD_FAILURE() << f;
  for (int k = 0; k < cases::kQueryKindCount; ++k) EXPECT_EQ(report.passed[k], report.total[k]);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceTest, ::testing::ValuesIn(CaseFiles()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ConformanceTest);

// The folder holds case files at all (a wrong HITBOX_CASES_DIR must not pass silently).
TEST(ConformanceFolderTest, HasCaseFiles) {
  EXPECT_FALSE(CaseFiles().empty()) << "no *.json / *.json.gz in " << HITBOX_CASES_DIR;
}

// The loader rejects a non-unit quaternion, naming its path, and returns
// accepted ones normalized (queries run without further validation). Found
// by fuzz/case_file.
TEST(CaseFileLoaderTest, ChecksQuaternions) {
  const hitbox::testing::TempDir dir("cases");
  const auto write = [&dir](const std::string& name, const std::string& rotation) {
    const std::string path = dir.file(name + ".json");
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fprintf(f,
                 R"({"format": "hitbox-cases/1", "scenario": "q",
                     "colliders": [{"id": 1, "shape": {"sphere": {"radius": 1}},
                                    "position": [0, 0, 0], "rotation": [0, 0, 0, 1]}],
                     "queries": [{"id": 1, "overlap": {"shape": {"sphere": {"radius": 1}},
                                  "position": [0, 0, 0], "rotation": %s}}],
                     "expected": [{"id": 1, "hits": [1], "maybe": []}]})",
                 rotation.c_str());
    std::fclose(f);
    return path;
  };
  const std::string bad = write("bad-quat", "[0, 0, 0, 1.00001]");
  const Result<CaseFile> rejected = cases::LoadCaseFile(bad);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.error().message.find("queries[0].overlap.rotation"), std::string::npos)
      << rejected.error().message;
  EXPECT_NE(rejected.error().message.find("quaternion"), std::string::npos) << rejected.error().message;

  const std::string near = write("near-quat", "[0, 0, 0, 1.0000005]");
  const Result<CaseFile> accepted = cases::LoadCaseFile(near);
  ASSERT_TRUE(accepted.ok()) << accepted.error().message;
  const auto& q = std::get<OverlapQuery>(accepted.value().queries[0].query);
  EXPECT_EQ(q.pose.rotation.w, 1.0);
  EXPECT_TRUE(ColliderSet::ValidateQuery(accepted.value().queries[0].query).ok());
}

}  // namespace
}  // namespace hitbox
