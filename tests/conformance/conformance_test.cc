// Conformance: loads every case file of HITBOX_CASES_DIR (*.json, *.json.gz,
// listed when the test starts), runs every query on a ColliderSet and checks
// each answer against the independent reference (shared/cases/FORMAT.md).
// Prints pass counts per query kind and the first failures with their ids.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "hitbox/cases/case_file.h"
#include "hitbox/world/collider_set.h"
#include "temp_dir.h"
#include "test_util.h"

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

// Runs the file's queries as one batch and checks every answer; `pass`
// names the run in the report and the failures. `skip_started_contact`:
// the sweeps skip the contact of a hit at their start (same answers).
void ExpectAnswersMatch(const CaseFile& file, const ColliderSet& set, const std::string& pass,
                        bool skip_started_contact = false) {
  std::vector<Query> queries = cases::Queries(file);
  for (Query& q : queries) {
    if (auto* c = std::get_if<CastQuery>(&q)) c->skip_started_contact = skip_started_contact;
  }
  std::vector<QueryResult> results(queries.size());
  ThreadPool pool(2);
  ASSERT_TRUE(set.RunBatch(queries, results, &pool, QueryBudget{}).ok()) << pass;

  const cases::Report report = cases::CheckAll(file, results);
  std::printf("%s: %s", pass.c_str(), report.ToString(file).c_str());
  for (int k = 0; k < cases::kQueryKindCount; ++k) {
    if (report.total[k] == 0) continue;
    ::testing::Test::RecordProperty(pass + "_" +
                                        cases::QueryKindName(static_cast<QueryKind>(k)) +
                                        "_passed",
                                    std::to_string(report.passed[k]) + "/" +
                                        std::to_string(report.total[k]));
  }
  for (const std::string& f : report.failures) ADD_FAILURE() << pass << ": " << f;
  for (int k = 0; k < cases::kQueryKindCount; ++k) {
    EXPECT_EQ(report.passed[k], report.total[k]) << pass;
  }
}

// Batches of rays far outside the set's bounds (each misses at the tree's
// root) until the batches have paid for merging its meshes that share a
// pose and layer (MeshGroups), at most `most` queries. False when the set
// has no such meshes (nothing merges).
bool PrimeMergedMeshes(const ColliderSet& set, size_t most) {
  // Meshes merge by their poses' bits and layer.
  std::set<std::array<uint64_t, 8>> frames;
  bool shared_frame = false;
  set.ForEach([&](const Collider& c) {
    if (c.shape.kind() != ShapeKind::kMesh) return;
    const Pose& p = c.pose;
    const std::array<uint64_t, 8> frame{
        std::bit_cast<uint64_t>(p.position.x), std::bit_cast<uint64_t>(p.position.y),
        std::bit_cast<uint64_t>(p.position.z), std::bit_cast<uint64_t>(p.rotation.x),
        std::bit_cast<uint64_t>(p.rotation.y), std::bit_cast<uint64_t>(p.rotation.z),
        std::bit_cast<uint64_t>(p.rotation.w), c.layer};
    shared_frame |= !frames.insert(frame).second;
  });
  if (!shared_frame) return false;
  const Aabb bounds = set.Bounds();
  RayQuery far;
  far.origin = bounds.max + Vec3{1000.0, 1000.0, 1000.0};
  far.translation = {1.0, 0.0, 0.0};
  const std::vector<Query> misses(4096, far);
  std::vector<QueryResult> results(misses.size());
  for (size_t run = 0; run < most && set.GetTreeStats().merged_triangles == 0;
       run += misses.size()) {
    set.RunBatch(misses, results);
  }
  return set.GetTreeStats().merged_triangles != 0;
}

// Every answer of the file is right (overlap: hits ⊆ reported ⊆ hits ∪ maybe;
// sweep / raycast: the right collider within tolerance, sane normal), with
// and without the sweeps' started contacts. Then,
// where the file's meshes merge (a level: its meshes share one frame), once
// more through the merged meshes, as a server's batches answer once they
// have paid for them: the file's one batch alone does not merge a level.
TEST_P(ConformanceTest, AnswersMatchReference) {
  Result<CaseFile> loaded = cases::LoadCaseFile(GetParam());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const CaseFile& file = *loaded;
  ColliderSet set;
  const Status s = cases::LoadWorld(file, &set);  // with histories: one batch per tick
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(set.TreeValidate(), "");

  ExpectAnswersMatch(file, set, "each mesh");
  ExpectAnswersMatch(file, set, "each mesh, no started contact", /*skip_started_contact=*/true);
  if (!PrimeMergedMeshes(set, 4u << 20)) return;
  ExpectAnswersMatch(file, set, "merged meshes");
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceTest, ::testing::ValuesIn(CaseFiles()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ConformanceTest);

// The real levels of the suite (the files of the levels folder beside it).
std::vector<std::string> LevelFiles() {
  std::vector<std::string> out;
  for (const std::string& f : CaseFiles()) {
    if (std::filesystem::path(f).parent_path().filename() == "levels") out.push_back(f);
  }
  return out;
}

// On a real level, a batch through the merged meshes answers every query
// exactly as the single query that walks each mesh, for queries beyond the
// file's own: rays, sweeps of every convex kind and overlaps from the
// file's query points and from points on the level's surfaces (where its
// rays hit: starts on a triangle, sweeps along it, shapes touching it),
// some with all hits, contacts or a contact offset.
TEST(LevelTest, MergedBatchesAnswerAsEachMesh) {
  const std::vector<std::string> levels = LevelFiles();
  if (levels.empty()) GTEST_SKIP() << "no levels folder beside " << HITBOX_CASES_DIR;
  for (const std::string& path : levels) {
    Result<CaseFile> loaded = cases::LoadCaseFile(path);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    ColliderSet set;
    ASSERT_TRUE(cases::LoadWorld(*loaded, &set).ok()) << path;
    // Points where the game asks, and on the surfaces.
    std::vector<Vec3> starts, surface;
    for (const cases::CaseQuery& q : loaded->queries) {
      if (const auto* r = std::get_if<RayQuery>(&q.query)) {
        starts.push_back(r->origin);
        QueryResult one;
        set.Run(q.query, &one);
        if (!one.hits.empty()) surface.push_back(one.hits[0].point);
      } else if (const auto* c = std::get_if<CastQuery>(&q.query)) {
        starts.push_back(c->pose.position);
      } else if (const auto* o = std::get_if<OverlapQuery>(&q.query)) {
        starts.push_back(o->pose.position);
      }
    }
    ASSERT_FALSE(starts.empty()) << path;
    ASSERT_GT(surface.size(), 100u) << path;
    ASSERT_TRUE(PrimeMergedMeshes(set, 4u << 20)) << path << ": its meshes did not merge";

    testing::Random rng(71000);
    std::vector<Query> qs;
    for (int k = 0; k < 6000; ++k) {
      const bool on_surface = k % 2 == 1;
      const Vec3 at = on_surface ? surface[rng.Int(0, static_cast<int>(surface.size()) - 1)]
                                 : starts[rng.Int(0, static_cast<int>(starts.size()) - 1)];
      const Shape shape = rng.MakeShape(static_cast<ShapeKind>(k % kConvexKindCount), 0.1, 1.0);
      const Pose pose(at, k % 4 == 0 ? Quat::Identity() : rng.Rotation());
      switch (k % 3) {
        case 0: {
          RayQuery r;
          r.origin = at;
          r.translation = rng.UnitVector() * rng.Uniform(0.5, 40.0);
          r.all_hits = k % 29 == 0;
          qs.push_back(r);
          break;
        }
        case 1: {
          CastQuery c;
          c.shape = shape;
          c.pose = pose;
          c.translation = rng.UnitVector() * rng.Uniform(0.2, 20.0);
          if (k % 7 == 0) c.contact_offset = 0.02;
          c.all_hits = k % 29 == 0;
          qs.push_back(c);
          break;
        }
        default: {
          OverlapQuery o;
          o.shape = shape;
          o.pose = pose;
          o.want_contact = k % 4 == 0;
          qs.push_back(o);
          break;
        }
      }
    }
    std::vector<QueryResult> batch(qs.size());
    set.RunBatch(qs, batch);
    ASSERT_NE(set.GetTreeStats().merged_triangles, 0u) << path;
    int hits = 0;
    for (size_t i = 0; i < qs.size(); ++i) {
      QueryResult one;
      set.Run(qs[i], &one);
      testing::ExpectSameResult(one, batch[i], path + " query " + std::to_string(i));
      hits += !one.hits.empty() || !one.overlaps.empty();
    }
    EXPECT_GT(hits, 2000) << path;
  }
}

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
