// Conformance: loads every case file of HITBOX_CASES_DIR (*.json, *.json.gz,
// listed when the test starts), runs every query on a ColliderSet and checks
// each answer against the independent reference (shared/cases/FORMAT.md).
// Prints pass counts per query kind and the first failures with their ids.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "hitbox/cases/case_file.h"
#include "hitbox/collider_set.h"

namespace hitbox {
namespace {

using cases::CaseFile;
using cases::QueryKind;

std::vector<std::string> CaseFiles() { return cases::ListCaseFiles(HITBOX_CASES_DIR); }

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).filename().string();
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
  const Status s = set.AddBulk(file.colliders);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(set.TreeValidate(), "");

  const std::vector<Query> queries = cases::Queries(file);
  std::vector<QueryResult> results(queries.size());
  ThreadPool pool(2);
  set.RunBatch(queries, results, &pool);

  int total[cases::kQueryKindCount] = {};
  int passed[cases::kQueryKindCount] = {};
  std::vector<std::string> failures;
  for (size_t i = 0; i < queries.size(); ++i) {
    const int k = static_cast<int>(file.queries[i].kind);
    ++total[k];
    const cases::Verdict v = cases::CheckAnswer(file.queries[i], file.expected[i], results[i]);
    if (v.ok) {
      ++passed[k];
    } else if (failures.size() < 25) {
      failures.push_back(file.name + " query " + std::to_string(file.queries[i].id) + " (" +
                         cases::QueryKindName(file.queries[i].kind) + "): " + v.reason);
    }
  }
  std::printf("%s: %zu colliders\n", file.name.c_str(), file.colliders.size());
  for (int k = 0; k < cases::kQueryKindCount; ++k) {
    if (total[k] == 0) continue;
    std::printf("  %-8s %6d / %6d passed\n", cases::QueryKindName(static_cast<QueryKind>(k)),
                passed[k], total[k]);
    ::testing::Test::RecordProperty(std::string(cases::QueryKindName(static_cast<QueryKind>(k))) +
                                        "_passed",
                                    std::to_string(passed[k]) + "/" + std::to_string(total[k]));
  }
  for (const std::string& f : failures) ADD_FAILURE() << f;
  for (int k = 0; k < cases::kQueryKindCount; ++k) EXPECT_EQ(passed[k], total[k]);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceTest, ::testing::ValuesIn(CaseFiles()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ConformanceTest);

// The folder holds case files at all (a wrong HITBOX_CASES_DIR must not pass silently).
TEST(ConformanceFolderTest, HasCaseFiles) {
  EXPECT_FALSE(CaseFiles().empty()) << "no *.json / *.json.gz in " << HITBOX_CASES_DIR;
}

}  // namespace
}  // namespace hitbox
