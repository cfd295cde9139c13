// `hitboxctl query SESSION --file Q.json`: a file of queries against a real
// hitboxd on a loopback port. Answers of small hand-built scenes are closed
// form; the shared case files (mixed, rewind) give the reference answers for
// --check, at_tick included.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctl_runner.h"
#include "temp_dir.h"

namespace hitbox::ctl_test {
namespace {

using nlohmann::json;

class QueryFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.running()) << "hitboxd did not start:\n" << server_.log();
  }
  RunResult Ctl(const std::vector<std::string>& args) const { return ctl_.Run(args); }
  json CtlJson(const std::vector<std::string>& args) const { return ctl_.Json(args); }
  std::string Write(const std::string& name, const json& doc) { return dir_.Write(name, doc.dump()); }

  /// Session `s` with a unit sphere (id 1) at the origin and a unit cube (id 2) at x = 5.
  void LoadSmallScene() {
    const json scene = {
        {"colliders",
         {{{"id", 1}, {"shape", {{"sphere", {{"radius", 1.0}}}}}, {"position", {0, 0, 0}}},
          {{"id", 2}, {"shape", {{"box", {{"half_extents", {1, 1, 1}}}}}}, {"position", {5, 0, 0}}}}}};
    const RunResult r = Ctl({"load", "s", Write("scene.json", scene), "--create"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
  }

  HitboxdProcess server_;
  CtlRunner ctl_{server_.address()};
  testing::TempDir dir_{"ctl-query"};
};

json Sphere(double r) { return {{"sphere", {{"radius", r}}}}; }

// A raycast (hits the sphere at 0.4), an overlap (the cube), a sweep that
// misses, and a capsule move that falls onto the cube's top (y = 1).
json SmallQueries() {
  return {{"queries",
           {{{"id", 10}, {"raycast", {{"origin", {-5, 0, 0}}, {"translation", {10, 0, 0}}}}},
            {{"id", 11}, {"overlap", {{"shape", Sphere(0.5)}, {"position", {5, 1.2, 0}}}}},
            {{"id", 12},
             {"sweep", {{"shape", Sphere(0.25)}, {"position", {0, 5, 0}}, {"translation", {3, 0, 0}}}}},
            {{"id", 13},
             {"move",
              {{"shape", {{"capsule", {{"radius", 0.25}, {"half_height", 0.25}}}}},
               {"position", {5, 1.8, 0}},
               {"displacement", {0, -0.5, 0}}}}}}}};
}

// The expected answers of SmallQueries, in the case-file form (a move: its end position).
json SmallExpected(uint64_t ray_hit) {
  return {{{"id", 10}, {"hit", ray_hit}, {"fraction", 0.4}},
          {{"id", 11}, {"hits", {2}}},
          {{"id", 12}, {"hit", nullptr}},
          {{"id", 13}, {"position", {5, 1.51, 0}}, {"tolerance", 0.011}}};
}

// Every kind of query is answered, in file order, as a table and as JSON.
TEST_F(QueryFileTest, AnswersTableAndJson) {
  LoadSmallScene();
  const std::string file = Write("q.json", SmallQueries());
  const RunResult table = Ctl({"query", "s", "--file", file});
  ASSERT_EQ(table.code, 0) << table.out << table.err;
  EXPECT_NE(table.out.find("raycast   hit 1 at 0.4 "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("overlap   hits 2"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("sweep     no hit"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("move      at 5,1.5"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("4 queries"), std::string::npos) << table.out;

  const json doc = CtlJson({"query", "s", "--file", file, "--batch", "3"});
  const json& a = doc.at("answers");
  ASSERT_EQ(a.size(), 4u) << doc.dump(2);
  EXPECT_EQ(a[0].at("id"), 10u);
  EXPECT_EQ(a[0].at("hits")[0].at("id"), 1u);
  EXPECT_NEAR(a[0].at("hits")[0].at("fraction").get<double>(), 0.4, 1e-6);
  EXPECT_EQ(a[1].at("hits").size(), 1u);
  EXPECT_TRUE(a[2].at("hits").empty());
  EXPECT_EQ(a[3].at("kind"), "move");
  // Resting on the cube's top: the capsule's bottom (centre - 0.5) at y = 1, within the skin.
  EXPECT_NEAR(a[3].at("position")[1].get<double>(), 1.5, 0.011) << a[3].dump();
  EXPECT_TRUE(a[3].at("on_ground").get<bool>());
  EXPECT_EQ(doc.at("queries"), 4u);
  EXPECT_EQ(doc.at("kinds").at("move").at("total"), 1);
}

// --check: right answers pass (exit 0); a wrong one fails with exit 1 and
// names the query, also in --json.
TEST_F(QueryFileTest, CheckPassesAndFails) {
  LoadSmallScene();
  json good = SmallQueries();
  good["expected"] = SmallExpected(1);
  const RunResult pass = Ctl({"query", "s", "--file", Write("good.json", good), "--check"});
  EXPECT_EQ(pass.code, 0) << pass.out << pass.err;
  EXPECT_NE(pass.out.find("PASS"), std::string::npos) << pass.out;

  json bad = SmallQueries();
  bad["expected"] = SmallExpected(2);  // the ray hits the sphere (1), not the cube
  const std::string bad_file = Write("bad.json", bad);
  const RunResult fail = Ctl({"query", "s", "--file", bad_file, "--check"});
  EXPECT_EQ(fail.code, 1) << fail.out << fail.err;
  EXPECT_NE(fail.out.find("FAIL query 10 (raycast): expected collider 2"), std::string::npos)
      << fail.out;
  EXPECT_NE(fail.out.find("raycast 0 / 1 passed"), std::string::npos) << fail.out;

  const RunResult json_fail = Ctl({"--json", "query", "s", "--file", bad_file, "--check"});
  EXPECT_EQ(json_fail.code, 1);
  const json doc = json::parse(json_fail.out);
  EXPECT_FALSE(doc.at("passed").get<bool>());
  EXPECT_EQ(doc.at("failed"), 1u);
  EXPECT_FALSE(doc.at("answers")[0].at("ok").get<bool>());
  EXPECT_TRUE(doc.at("answers")[1].at("ok").get<bool>());

  // A move that ends elsewhere than expected fails too.
  json far = SmallQueries();
  far["expected"] = SmallExpected(1);
  far["expected"][3]["position"] = {5, 3, 0};
  const RunResult moved = Ctl({"query", "s", "--file", Write("far.json", far), "--check"});
  EXPECT_EQ(moved.code, 1);
  EXPECT_NE(moved.out.find("FAIL query 13 (move): ended at"), std::string::npos) << moved.out;

  // --check without expected answers is an error, not a pass.
  const RunResult none = Ctl({"query", "s", "--file", Write("none.json", SmallQueries()), "--check"});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("no \"expected\" answers"), std::string::npos) << none.err;
}

// Shared case files through `query --check`: mixed (every kind) and rewind
// (70 % of its queries at a past tick, half of them between ticks) pass
// against the reference answers, on sessions `check --keep` loaded.
TEST_F(QueryFileTest, CaseFilesPassWithAtTick) {
  for (const std::string name : {"mixed.json", "rewind/rewind.json"}) {
    const std::string path = std::string(HITBOX_CASES_DIR) + "/" + name;
    std::ifstream f(path);
    ASSERT_TRUE(f) << "missing " << path;
    const std::string session = name == "mixed.json" ? "mixed" : "lag";
    ASSERT_EQ(Ctl({"check", path, "--session", session, "--keep", "--quiet"}).code, 0);
    const json doc = CtlJson({"query", session, "--file", path, "--check", "--batch", "700"});
    EXPECT_TRUE(doc.value("passed", false)) << doc.at("failures").dump(2);
    EXPECT_EQ(doc.at("answers").size(), json::parse(f).at("queries").size());
  }
}

// Answers are printed batch by batch while the file is read: a bad third
// query stops the run after the first two answers were printed, and the
// error names the entry.
TEST_F(QueryFileTest, StreamsAndNamesBadEntries) {
  LoadSmallScene();
  json q = SmallQueries();
  q["queries"][2]["sweep"]["shape"] = {{"sphere", {{"radius", -1}}}};
  const RunResult r = Ctl({"query", "s", "--file", Write("bad-shape.json", q), "--batch", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("hit 1 at 0.4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hits 2"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("queries[2].sweep.shape.sphere"), std::string::npos) << r.err;

  const RunResult not_json = Ctl({"query", "s", "--file", dir_.Write("x.json", "{\"queries\": [1,")});
  EXPECT_EQ(not_json.code, 1);
  EXPECT_NE(not_json.err.find("queries[0]: expected an object"), std::string::npos) << not_json.err;
  const RunResult no_queries = Ctl({"query", "s", "--file", Write("empty.json", json::object())});
  EXPECT_EQ(no_queries.code, 1);
  EXPECT_NE(no_queries.err.find("no \"queries\" array"), std::string::npos) << no_queries.err;
  const RunResult no_session = Ctl({"query", "nope", "--file", Write("q.json", SmallQueries())});
  EXPECT_EQ(no_session.code, 1);
  EXPECT_NE(no_session.err.find("NOT_FOUND"), std::string::npos) << no_session.err;
}

// A gzip-compressed query file streams the same.
TEST_F(QueryFileTest, GzipFile) {
  LoadSmallScene();
  const std::string file = Write("q.json", SmallQueries());
  if (RunProcess({"/bin/gzip", "-k", file}).code != 0) GTEST_SKIP() << "no gzip";
  const json doc = CtlJson({"query", "s", "--file", file + ".gz"});
  EXPECT_EQ(doc.at("answers").size(), 4u);
}

}  // namespace
}  // namespace hitbox::ctl_test
