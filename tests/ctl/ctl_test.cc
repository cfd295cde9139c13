// hitboxctl end to end: each test starts a real hitboxd on a free loopback
// port and runs the hitboxctl binary as a subprocess, checking exit codes,
// human output, and --json output parsed with nlohmann-json. Expected query
// answers come from closed-form geometry of small hand-built scenes.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hitbox/client_pool.h"
#include "ctl_runner.h"
#include "test_certs.h"

namespace hitbox::ctl_test {
namespace {

using nlohmann::json;

const std::string kCtl = CtlBinary();
const std::string kDemoScene = std::string(HITBOX_SOURCE_DIR) + "/docker/demo/scene.json";

class CtlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.running()) << "hitboxd did not start:\n" << server_.log();
  }

  /// Runs hitboxctl --address <server> ARGS with HITBOX_ADDRESS unset.
  RunResult Ctl(const std::vector<std::string>& args) const { return ctl_.Run(args); }
  /// Runs hitboxctl --json ARGS, expects exit 0 and returns the parsed stdout.
  json CtlJson(const std::vector<std::string>& args) const { return ctl_.Json(args); }
  static std::string Describe(const std::vector<std::string>& args, const RunResult& r) {
    return CtlRunner::Describe(args, r);
  }
  /// Writes `text` to a new .json file in the test's temporary directory.
  std::string WriteTemp(const std::string& text) {
    return dir_.Write("scene-" + std::to_string(++temp_files_) + ".json", text);
  }

  HitboxdProcess server_;
  CtlRunner ctl_{server_.address()};
  testing::TempDir dir_{"ctl"};
  int temp_files_ = 0;
};

json Sphere(uint64_t id, double r, std::vector<double> pos, uint32_t layer = 0) {
  return {{"id", id}, {"layer", layer}, {"shape", {{"sphere", {{"radius", r}}}}},
          {"position", pos}, {"rotation", {0, 0, 0, 1}}};
}
json Box(uint64_t id, std::vector<double> half, std::vector<double> pos, uint32_t layer = 0) {
  return {{"id", id}, {"layer", layer}, {"shape", {{"box", {{"half_extents", half}}}}},
          {"position", pos}, {"rotation", {0, 0, 0, 1}}};
}

// A small scene with closed-form answers: a unit sphere at the origin
// (layer 0), a unit cube at x = 5 (layer 1), a capsule at y = 5 (layer 2).
json SmallScene() {
  json capsule = {{"id", 3}, {"layer", 2}, {"shape", {{"capsule", {{"radius", 0.5}, {"half_height", 1.0}}}}},
                  {"position", {0, 5, 0}}};
  return {{"colliders", {Sphere(1, 1.0, {0, 0, 0}), Box(2, {1, 1, 1}, {5, 0, 0}, 1), capsule}}};
}

std::vector<uint64_t> HitIds(const json& doc) {
  std::vector<uint64_t> ids;
  for (const auto& h : doc.at("hits")) ids.push_back(h.at("id").get<uint64_t>());
  return ids;
}

// --- health ---------------------------------------------------------------

// A running server answers SERVING and the command exits 0 (what the Docker HEALTHCHECK relies on).
TEST_F(CtlTest, HealthServingExitsZero) {
  const RunResult r = Ctl({"health"});
  EXPECT_EQ(r.code, 0) << Describe({"health"}, r);
  EXPECT_NE(r.out.find("SERVING"), std::string::npos) << r.out;
  const json doc = CtlJson({"health"});
  EXPECT_EQ(doc.value("status", ""), "SERVING") << doc.dump();
  // Exactly the Docker HEALTHCHECK's form: address from the environment, timeout after the command.
  const RunResult hc = RunProcess({kCtl, "health", "--timeout", "2"}, {"HITBOX_ADDRESS=" + server_.address()});
  EXPECT_EQ(hc.code, 0) << hc.out << hc.err;
}

// Nothing listening: non-zero exit and the gRPC error on stderr.
TEST_F(CtlTest, HealthUnreachableFails) {
  const RunResult r = RunProcess({kCtl, "--address", "127.0.0.1:1", "--timeout", "2", "health"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("UNAVAILABLE"), std::string::npos) << r.err;
}

// HITBOX_ADDRESS is the default address when --address is not given.
TEST_F(CtlTest, AddressFromEnvironment) {
  const RunResult r = RunProcess({kCtl, "health"}, {"HITBOX_ADDRESS=" + server_.address()});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const RunResult bad = RunProcess({kCtl, "--timeout", "2", "health"}, {"HITBOX_ADDRESS=127.0.0.1:1"});
  EXPECT_NE(bad.code, 0);
}

// --- usage ----------------------------------------------------------------

// No command, an unknown command or a malformed flag value: exit code 2.
TEST_F(CtlTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Ctl({}).code, 2);
  EXPECT_EQ(Ctl({"frobnicate"}).code, 2);
  const RunResult neg = Ctl({"overlap", "s", "--sphere", "-1"});
  EXPECT_EQ(neg.code, 2);
  EXPECT_NE(neg.err.find("radius"), std::string::npos) << neg.err;
  const RunResult rot = Ctl({"overlap", "s", "--sphere", "1", "--rot", "1,1,1,1"});
  EXPECT_EQ(rot.code, 2);
  EXPECT_NE(rot.err.find("quaternion"), std::string::npos) << rot.err;
  EXPECT_EQ(Ctl({"overlap", "s", "--sphere", "1", "--box", "1,1,1"}).code, 2);  // two shapes
  EXPECT_EQ(Ctl({"overlap", "s", "--sphere", "1", "--pos", "1,2"}).code, 2);
  EXPECT_EQ(Ctl({"raycast", "s", "--origin", "0,0,0"}).code, 2);  // --translation required
  EXPECT_EQ(Ctl({"--help"}).code, 0);
}

// --- sessions -------------------------------------------------------------

// create / list / get / delete, with the server's errors for duplicates and unknown ids.
TEST_F(CtlTest, SessionsLifecycle) {
  const json created = CtlJson(
      {"sessions", "create", "arena-1", "--max-colliders", "500", "--idle-timeout-ms", "600000"});
  EXPECT_EQ(created.value("session_id", ""), "arena-1");
  EXPECT_EQ(created.at("limits").value("max_colliders", 0), 500u);
  EXPECT_EQ(created.at("limits").value("idle_timeout_ms", 0), 600000u);
  EXPECT_GE(created.value("memory_bytes", 0), 1024u);

  const json list = CtlJson({"sessions", "list"});
  ASSERT_EQ(list.at("sessions").size(), 1u) << list.dump();
  EXPECT_EQ(list.at("sessions")[0].value("session_id", ""), "arena-1");
  EXPECT_EQ(list.at("sessions")[0].value("collider_count", 99), 0u);

  const json got = CtlJson({"sessions", "get", "arena-1"});
  EXPECT_EQ(got.value("revision", 99), 0u);
  EXPECT_TRUE(got.at("bounds").is_null());

  const RunResult human = Ctl({"sessions", "list"});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("arena-1"), std::string::npos) << human.out;

  const RunResult dup = Ctl({"sessions", "create", "arena-1"});
  EXPECT_EQ(dup.code, 1);
  EXPECT_NE(dup.err.find("ALREADY_EXISTS"), std::string::npos) << dup.err;

  const RunResult bad_id = Ctl({"sessions", "create", "no spaces allowed"});
  EXPECT_EQ(bad_id.code, 1);
  EXPECT_NE(bad_id.err.find("INVALID_ARGUMENT"), std::string::npos) << bad_id.err;

  EXPECT_EQ(Ctl({"sessions", "delete", "arena-1"}).code, 0);
  const RunResult gone = Ctl({"sessions", "get", "arena-1"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_NE(gone.err.find("NOT_FOUND"), std::string::npos) << gone.err;
  EXPECT_EQ(Ctl({"sessions", "delete", "arena-1"}).code, 1);
  EXPECT_TRUE(CtlJson({"sessions", "list"}).at("sessions").empty());

  // Without an id the server picks one.
  const json picked = CtlJson({"sessions", "create"});
  EXPECT_FALSE(picked.value("session_id", "").empty()) << picked.dump();
}

// --- load -----------------------------------------------------------------

// Loading the demo scene in small batches: every collider arrives, in
// ceil(n / batch) ApplyChanges calls.
TEST_F(CtlTest, LoadSceneInBatches) {
  std::ifstream f(kDemoScene);
  const json scene = json::parse(f);
  const size_t n = scene.at("colliders").size();
  ASSERT_GT(n, 100u);
  const json r = CtlJson({"load", "demo", kDemoScene, "--create", "--batch", "37"});
  EXPECT_EQ(r.value("loaded", 0u), n);
  EXPECT_EQ(r.value("batches", 0u), (n + 36) / 37);
  EXPECT_EQ(r.value("collider_count", 0u), n);
  const json info = CtlJson({"sessions", "get", "demo"});
  EXPECT_EQ(info.value("collider_count", 0u), n);
  EXPECT_FALSE(info.at("bounds").is_null());

  // Loading the same file again: every id exists, the server refuses the first entry.
  const RunResult again = Ctl({"load", "demo", kDemoScene});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("ALREADY_EXISTS"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("colliders[0] (id 1)"), std::string::npos) << again.err;
}

// On a terminal (a pty from script(1)) a multi-batch load draws a progress
// bar on stderr; piped, it prints none.
TEST_F(CtlTest, LoadProgressBarOnlyOnTerminal) {
  const RunResult piped = Ctl({"load", "p1", kDemoScene, "--create", "--batch", "20"});
  EXPECT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("colliders"), std::string::npos) << piped.err;
  if (access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/script for a pty";
  // Containers and chroots without /dev/pts can't give script(1) a terminal.
  const int pty = posix_openpt(O_RDWR | O_NOCTTY);
  if (pty < 0) GTEST_SKIP() << "no pseudo-terminals on this machine (/dev/pts not mounted?)";
  close(pty);
  const std::string cmd = kCtl + " --address " + server_.address() + " load p2 " + kDemoScene +
                          " --create --batch 20";
  const RunResult tty = RunProcess({"/usr/bin/script", "-qec", cmd, "/dev/null"}, {"HITBOX_ADDRESS="});
  EXPECT_EQ(tty.code, 0) << tty.out << tty.err;
  EXPECT_NE(tty.out.find("240/240 colliders"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("[###"), std::string::npos) << tty.out;
  EXPECT_EQ(CtlJson({"sessions", "get", "p2"}).value("collider_count", 0u), 240u);
}

// A bad entry is reported with its index and id before anything is sent.
TEST_F(CtlTest, LoadMalformedEntryNamesPosition) {
  json doc = {{"colliders", {Sphere(10, 1, {0, 0, 0}), Sphere(20, 1, {3, 0, 0}), Sphere(30, 1, {6, 0, 0}),
                             Sphere(40, -2.5, {9, 0, 0}), Sphere(50, 1, {12, 0, 0})}}};
  const std::string path = WriteTemp(doc.dump());
  const RunResult r = Ctl({"load", "bad", path, "--create"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("colliders[3] (id 40)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("radius"), std::string::npos) << r.err;
  // Validation happens first: the session was never created.
  EXPECT_EQ(Ctl({"sessions", "get", "bad"}).code, 1);

  // Other kinds of bad entries, each named by position.
  struct Bad {
    json entry;
    std::string expect;
  };
  const std::vector<Bad> bads = {
      {{{"id", 7}, {"shape", {{"cone", {{"radius", 1}}}}}}, "unknown shape kind"},
      {{{"id", 7}, {"shape", {{"sphere", {{"radius", 1}}}}}, {"layer", 32}}, "layer"},
      {{{"id", 7}, {"shape", {{"sphere", {{"radius", 1}}}}}, {"rotation", {0, 0, 0, 2}}}, "quaternion"},
      {{{"id", 7}, {"shape", {{"box", {{"half_extents", {1, 1}}}}}}}, "half_extents"},
      {{{"id", -7}, {"shape", {{"sphere", {{"radius", 1}}}}}}, "id must be"},
      {{{"shape", {{"sphere", {{"radius", 1}}}}}}, "id is missing"},
      {Sphere(10, 1, {0, 0, 0}), "duplicate id"},
  };
  for (const Bad& b : bads) {
    json d = {{"colliders", {Sphere(10, 1, {0, 0, 0}), b.entry}}};
    const RunResult rb = Ctl({"load", "bad", WriteTemp(d.dump()), "--create"});
    EXPECT_EQ(rb.code, 1) << b.entry.dump();
    EXPECT_NE(rb.err.find("colliders[1]"), std::string::npos) << b.entry.dump() << "\n" << rb.err;
    EXPECT_NE(rb.err.find(b.expect), std::string::npos) << b.entry.dump() << "\n" << rb.err;
  }

  const RunResult syntax = Ctl({"load", "bad", WriteTemp("{\"colliders\": [ {\"id\": 1,, } ]}")});
  EXPECT_EQ(syntax.code, 1);
  EXPECT_NE(syntax.err.find("not valid JSON"), std::string::npos) << syntax.err;
  // A number beyond a double is bad JSON too, not an internal error (found by fuzz/scene_file).
  const RunResult overflow = Ctl(
      {"load", "bad", WriteTemp(R"({"colliders": [{"id": 1, "shape": {"sphere": {"radius": 1e999}}}]})")});
  EXPECT_EQ(overflow.code, 1);
  EXPECT_NE(overflow.err.find("not valid JSON"), std::string::npos) << overflow.err;
}

// A batch the server rejects (an id that already exists) names the file entry,
// and the batches this run had already added are taken out again.
TEST_F(CtlTest, LoadServerRejectionRollsBack) {
  json first = {{"colliders", {Sphere(100, 1, {0, 0, 0}), Sphere(101, 1, {5, 0, 0})}}};
  CtlJson({"load", "roll", WriteTemp(first.dump()), "--create"});
  json second = {{"colliders", json::array()}};
  for (uint64_t id = 1; id <= 5; ++id) second["colliders"].push_back(Sphere(id, 1, {0, 10.0 * static_cast<double>(id), 0}));
  second["colliders"].push_back(Sphere(101, 1, {0, 0, 9}));  // index 5: exists on the server
  second["colliders"].push_back(Sphere(6, 1, {0, 0, 20}));
  const RunResult r = Ctl({"load", "roll", WriteTemp(second.dump()), "--batch", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("colliders[5] (id 101)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ALREADY_EXISTS"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("removed the 4 colliders"), std::string::npos) << r.err;
  EXPECT_EQ(CtlJson({"sessions", "get", "roll"}).value("collider_count", 0u), 2u);

  // Unknown session without --create: NOT_FOUND, exit 1.
  const RunResult missing = Ctl({"load", "nope", kDemoScene});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("NOT_FOUND"), std::string::npos) << missing.err;
}

// --- queries --------------------------------------------------------------

class CtlQueryTest : public CtlTest {
 protected:
  void SetUp() override {
    CtlTest::SetUp();
    CtlJson({"load", "q", WriteTemp(SmallScene().dump()), "--create"});
  }
};

// Convex hulls through scene files and --hull: a tetrahedron collider with
// corners (10,0,0), (11,0,0), (10,1,0), (10,0,1); a hull query (a cube of
// half-size 0.25 as 8 points) overlaps it near its corner, not beyond its
// slanted face; a ray down the x axis enters it at x = 10.
TEST_F(CtlQueryTest, ConvexHullSceneAndQuery) {
  json hull = {{"id", 7}, {"shape", {{"convex_hull", {{"points", {{10, 0, 0}, {11, 0, 0}, {10, 1, 0}, {10, 0, 1}, {10.1, 0.1, 0.1}}}}}}},
               {"position", {0, 0, 0}}};
  CtlJson({"load", "h", WriteTemp(json{{"colliders", {hull}}}.dump()), "--create"});
  const std::string cube = "-0.25,-0.25,-0.25,0.25,-0.25,-0.25,-0.25,0.25,-0.25,0.25,0.25,-0.25,"
                           "-0.25,-0.25,0.25,0.25,-0.25,0.25,-0.25,0.25,0.25,0.25,0.25,0.25";
  EXPECT_EQ(HitIds(CtlJson({"overlap", "h", "--hull", cube, "--pos", "10,0,0"})),
            std::vector<uint64_t>({7}));
  EXPECT_TRUE(HitIds(CtlJson({"overlap", "h", "--hull", cube, "--pos", "10.9,0.9,0.9"})).empty());
  const json r = CtlJson({"raycast", "h", "--origin", "0,0.1,0.1", "--translation", "20,0,0"});
  ASSERT_EQ(HitIds(r), std::vector<uint64_t>({7})) << r.dump();
  EXPECT_NEAR(r.at("hits")[0].at("fraction").get<double>(), 0.5, 1e-12);
  // A coplanar --hull is a usage error naming the problem.
  const RunResult bad = Ctl({"overlap", "h", "--hull", "0,0,0,1,0,0,0,1,0,1,1,0"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("coplanar"), std::string::npos) << bad.err;
}

// Compounds through scene files: a character (id 9 at z = 20) of a body
// capsule (child 0: radius 0.4, half-height 0.5) and a head sphere (child 1:
// radius 0.3 at y = 1.4). Rays along +x from x = -5 hit the head at x = -0.3
// (fraction 0.47, sub_shape 1) and the body at x = -0.4 (0.46, sub_shape 0);
// an overlap at the head names child 1.
TEST_F(CtlQueryTest, CompoundSceneNamesChild) {
  json character = {
      {"id", 9},
      {"shape",
       {{"compound",
         {{"children",
           {{{"shape", {{"capsule", {{"radius", 0.4}, {"half_height", 0.5}}}}},
             {"position", {0, 0, 0}},
             {"rotation", {0, 0, 0, 1}}},
            {{"shape", {{"sphere", {{"radius", 0.3}}}}},
             {"position", {0, 1.4, 0}},
             {"rotation", {0, 0, 0, 1}}}}}}}}},
      {"position", {0, 0, 20}},
      {"rotation", {0, 0, 0, 1}}};
  CtlJson({"load", "c", WriteTemp(json{{"colliders", {character}}}.dump()), "--create"});
  const json head = CtlJson({"raycast", "c", "--origin", "-5,1.4,20", "--translation", "10,0,0"});
  ASSERT_EQ(HitIds(head), std::vector<uint64_t>({9})) << head.dump();
  EXPECT_NEAR(head.at("hits")[0].at("fraction").get<double>(), 0.47, 1e-12);
  EXPECT_EQ(head.at("hits")[0].at("sub_shape").get<uint32_t>(), 1u);
  const json body = CtlJson({"raycast", "c", "--origin", "-5,0,20", "--translation", "10,0,0"});
  ASSERT_EQ(HitIds(body), std::vector<uint64_t>({9})) << body.dump();
  EXPECT_NEAR(body.at("hits")[0].at("fraction").get<double>(), 0.46, 1e-12);
  EXPECT_EQ(body.at("hits")[0].at("sub_shape").get<uint32_t>(), 0u);
  const json touch = CtlJson({"overlap", "c", "--sphere", "0.2", "--pos", "0,1.4,20.4"});
  ASSERT_EQ(HitIds(touch), std::vector<uint64_t>({9})) << touch.dump();
  EXPECT_EQ(touch.at("hits")[0].at("sub_shape").get<uint32_t>(), 1u);
  // A mesh child is refused at load, naming the child.
  json bad = character;
  bad["id"] = 10;
  bad["shape"]["compound"]["children"][1]["shape"] = {
      {"mesh", {{"vertices", {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}}, {"triangles", {{0, 1, 2}}}}}};
  const RunResult r = Ctl({"load", "c", WriteTemp(json{{"colliders", {bad}}}.dump())});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("children[1].shape"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot be a compound child"), std::string::npos) << r.err;
}

// Overlap: a sphere of radius 0.5 at x = 0.9 overlaps only the unit sphere,
// with penetration depth 1 + 0.5 - 0.9 = 0.6 along +x.
TEST_F(CtlQueryTest, Overlap) {
  const json r = CtlJson({"overlap", "q", "--sphere", "0.5", "--pos", "0.9,0,0", "--contact"});
  EXPECT_EQ(HitIds(r), std::vector<uint64_t>({1}));
  ASSERT_TRUE(r.at("hits")[0].contains("contact")) << r.dump();
  EXPECT_NEAR(r.at("hits")[0].at("contact").at("depth").get<double>(), 0.6, 1e-9);
  // A big sphere sees everything; the mask keeps layer 1 only (the cube).
  EXPECT_EQ(HitIds(CtlJson({"overlap", "q", "--sphere", "20"})), std::vector<uint64_t>({1, 2, 3}));
  EXPECT_EQ(HitIds(CtlJson({"overlap", "q", "--sphere", "20", "--mask", "0x2"})),
            std::vector<uint64_t>({2}));
  EXPECT_EQ(HitIds(CtlJson({"overlap", "q", "--sphere", "20", "--ignore", "1,3"})),
            std::vector<uint64_t>({2}));
  EXPECT_EQ(HitIds(CtlJson({"overlap", "q", "--sphere", "20", "--max-hits", "2"})).size(), 2u);
  // A box of half-size 0.8 at x = 2: unrotated it spans x >= 1.2 and misses the
  // unit sphere; turned 45 degrees about z its edge reaches x = 2 - 0.8 * sqrt(2) = 0.87.
  char rot45[96];
  std::snprintf(rot45, sizeof(rot45), "0,0,%.17g,%.17g", std::sin(M_PI / 8), std::cos(M_PI / 8));
  EXPECT_TRUE(HitIds(CtlJson({"overlap", "q", "--box", "0.8,0.8,0.8", "--pos", "2,0,0"})).empty());
  EXPECT_EQ(HitIds(CtlJson({"overlap", "q", "--box", "0.8,0.8,0.8", "--pos", "2,0,0", "--rot", rot45})),
            std::vector<uint64_t>({1}));
  const RunResult human = Ctl({"overlap", "q", "--capsule", "0.5,1", "--pos", "0,3,0"});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("ID"), std::string::npos) << human.out;  // the table header
  EXPECT_NE(human.out.find("3"), std::string::npos) << human.out;
}

// Raycast along +x from x = -5: the unit sphere first at fraction 4/20, the
// cube (x = 4) at 9/20; both with --all, in order.
TEST_F(CtlQueryTest, Raycast) {
  const json first = CtlJson({"raycast", "q", "--origin", "-5,0,0", "--translation", "20,0,0"});
  ASSERT_EQ(HitIds(first), std::vector<uint64_t>({1}));
  const json& hit = first.at("hits")[0];
  EXPECT_NEAR(hit.at("fraction").get<double>(), 0.2, 1e-9);
  EXPECT_NEAR(hit.at("normal")[0].get<double>(), -1.0, 1e-9);
  EXPECT_NEAR(hit.at("point")[0].get<double>(), -1.0, 1e-9);
  const json all = CtlJson({"raycast", "q", "--origin", "-5,0,0", "--translation", "20,0,0", "--all"});
  ASSERT_EQ(HitIds(all), std::vector<uint64_t>({1, 2}));
  EXPECT_NEAR(all.at("hits")[1].at("fraction").get<double>(), 0.45, 1e-9);
  EXPECT_TRUE(HitIds(CtlJson({"raycast", "q", "--origin", "-5,0,0", "--translation", "20,0,0",
                              "--mask", "4"}))
                  .empty());
  const RunResult human = Ctl({"raycast", "q", "--origin", "-5,0,0", "--translation", "20,0,0"});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("FRACTION"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("0.2"), std::string::npos) << human.out;
  const RunResult miss = Ctl({"raycast", "q", "--origin", "-5,50,0", "--translation", "20,0,0"});
  EXPECT_EQ(miss.code, 0);
  EXPECT_NE(miss.out.find("no hits"), std::string::npos) << miss.out;
}

// Sphere cast of radius 0.5 along +x from x = -5: touches the unit sphere
// when its centre is at x = -1.5, fraction 3.5/20.
TEST_F(CtlQueryTest, Cast) {
  const json r = CtlJson({"cast", "q", "--sphere", "0.5", "--pos", "-5,0,0", "--translation", "20,0,0"});
  ASSERT_EQ(HitIds(r), std::vector<uint64_t>({1}));
  EXPECT_NEAR(r.at("hits")[0].at("fraction").get<double>(), 3.5 / 20.0, 1e-6);
  EXPECT_FALSE(r.at("hits")[0].at("started_overlapping").get<bool>());
  // Starting inside: fraction 0 and started_overlapping.
  const json inside = CtlJson({"cast", "q", "--cylinder", "0.5,0.5", "--translation", "0,0,1"});
  ASSERT_EQ(HitIds(inside), std::vector<uint64_t>({1}));
  EXPECT_EQ(inside.at("hits")[0].at("fraction").get<double>(), 0.0);
  EXPECT_TRUE(inside.at("hits")[0].at("started_overlapping").get<bool>());
}

// --contact-offset: a capsule resting exactly on a floor (top y = 0) swept
// sideways hits the floor at fraction 0 without it and the wall (face
// x = 2.5) at 3.5/4 with it; out of range is a usage error.
TEST_F(CtlQueryTest, CastContactOffset) {
  CtlJson({"load", "skin",
           WriteTemp(json{{"colliders",
                           {Box(1, {20, 0.5, 20}, {0, -0.5, 0}), Box(2, {0.5, 2, 5}, {3, 1, 0})}}}
                         .dump()),
           "--create"});
  const std::vector<std::string> cast = {"cast", "skin", "--capsule", "0.5,0.5", "--pos",
                                         "-1.5,1,0", "--translation", "4,0,0"};
  const json resting = CtlJson(cast);
  ASSERT_EQ(HitIds(resting), std::vector<uint64_t>({1}));
  EXPECT_EQ(resting.at("hits")[0].at("fraction").get<double>(), 0.0);
  std::vector<std::string> skinned = cast;
  skinned.insert(skinned.end(), {"--contact-offset", "0.001"});
  const json wall = CtlJson(skinned);
  ASSERT_EQ(HitIds(wall), std::vector<uint64_t>({2}));
  EXPECT_NEAR(wall.at("hits")[0].at("fraction").get<double>(), 3.5 / 4.0, 1e-9);
  EXPECT_FALSE(wall.at("truncated").get<bool>());
  std::vector<std::string> bad = cast;
  bad.insert(bad.end(), {"--contact-offset", "-1"});
  EXPECT_EQ(Ctl(bad).code, 2);
}

// A list cut by --max-hits says so: "truncated" in JSON and a line in the table.
TEST_F(CtlQueryTest, TruncatedOutput) {
  const json cut = CtlJson({"overlap", "q", "--sphere", "20", "--max-hits", "2"});
  EXPECT_EQ(HitIds(cut).size(), 2u);
  EXPECT_TRUE(cut.at("truncated").get<bool>());
  const json whole = CtlJson({"overlap", "q", "--sphere", "20", "--max-hits", "3"});
  EXPECT_EQ(HitIds(whole).size(), 3u);
  EXPECT_FALSE(whole.at("truncated").get<bool>());
  const RunResult human = Ctl({"overlap", "q", "--sphere", "20", "--max-hits", "2"});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("truncated: more hits than the 2 shown"), std::string::npos)
      << human.out;
  const RunResult all = Ctl({"raycast", "q", "--origin", "-5,0,0", "--translation", "20,0,0",
                             "--all", "--max-hits", "1"});
  EXPECT_NE(all.out.find("truncated"), std::string::npos) << all.out;
  const RunResult fits = Ctl({"overlap", "q", "--sphere", "20"});
  EXPECT_EQ(fits.out.find("truncated"), std::string::npos) << fits.out;
}

// Server errors reach stderr with a non-zero exit.
TEST_F(CtlQueryTest, QueryErrors) {
  const RunResult r = Ctl({"overlap", "missing", "--sphere", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos) << r.err;
}

// --- move -----------------------------------------------------------------

// `hitboxctl move`: a floor (top y = 0), a wall whose face is x = 2, a 0.25 m
// step from z = 5, and a capsule collider (id 9) for --apply. A capsule of
// radius 0.4, half-height 0.5 stands at y = 0.91 (0.01 m skin).
TEST_F(CtlQueryTest, Move) {
  json capsule = {{"id", 9}, {"shape", {{"capsule", {{"radius", 0.4}, {"half_height", 0.5}}}}},
                  {"position", {-5, 0.91, 0}}};
  CtlJson({"load", "m",
           WriteTemp(json{{"colliders",
                           {Box(1, {20, 0.5, 20}, {0, -0.5, 0}), Box(2, {0.5, 2, 20}, {2.5, 2, 0}),
                            Box(3, {1, 0.125, 1}, {0, 0.125, 6}), capsule}}}
                         .dump()),
           "--create"});
  // Into the wall at an angle: stops 0.41 from it and keeps the motion along it.
  const json slide = CtlJson({"move", "m", "--capsule", "0.4,0.5", "--pos", "0,0.91,0",
                              "--displacement", "5,0,3"});
  ASSERT_TRUE(slide.contains("position")) << slide.dump();
  const std::vector<double> p = slide.at("position").get<std::vector<double>>();
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0], 1.59, 1e-6);
  EXPECT_NEAR(p[1], 0.91, 1e-9);
  EXPECT_NEAR(p[2], 3.0, 1e-6);
  EXPECT_TRUE(slide.at("blocked").get<bool>());
  EXPECT_TRUE(slide.at("on_ground").get<bool>());
  EXPECT_EQ(slide.at("ground").at("id").get<uint64_t>(), 1u);
  EXPECT_EQ(slide.at("contacts")[0].at("id").get<uint64_t>(), 2u) << slide.dump();
  // Up the step with the default step height; blocked with a lower one.
  const json up = CtlJson({"move", "m", "--capsule", "0.4,0.5", "--pos", "0,0.91,4.2",
                           "--displacement", "0,-0.1,1"});
  EXPECT_NEAR(up.at("position")[1].get<double>(), 1.16, 1e-6) << up.dump();
  EXPECT_TRUE(up.at("stepped").get<bool>());
  const json low = CtlJson({"move", "m", "--capsule", "0.4,0.5", "--pos", "0,0.91,4.2",
                            "--displacement", "0,-0.1,1", "--step-height", "0.1"});
  EXPECT_NEAR(low.at("position")[1].get<double>(), 0.91, 1e-6) << low.dump();
  // Stopped by the step's edge (at z = 5, y = 0.25) against the capsule's rounded end.
  EXPECT_NEAR(low.at("position")[2].get<double>(), 5 - std::sqrt(0.41 * 0.41 - 0.16 * 0.16), 0.02)
      << low.dump();
  EXPECT_TRUE(low.at("blocked").get<bool>());
  EXPECT_FALSE(low.at("stepped").get<bool>());
  // --apply moves collider 9 to the end in the same call (one revision).
  const json applied = CtlJson({"move", "m", "--capsule", "0.4,0.5", "--pos", "-5,0.91,0",
                                "--displacement", "0,0,1", "--apply", "9"});
  EXPECT_EQ(applied.at("applied_to").get<uint64_t>(), 9u);
  const json hits = CtlJson({"overlap", "m", "--sphere", "0.1", "--pos", "-5,0.91,1"});
  EXPECT_EQ(HitIds(hits), std::vector<uint64_t>({9})) << hits.dump();
  EXPECT_EQ(CtlJson({"move", "m", "--capsule", "0.4,0.5", "--displacement", "0,0,0"})
                .at("revision")
                .get<uint64_t>(),
            applied.at("revision").get<uint64_t>());
  // Human output, and a bad setting named by its field path.
  const RunResult human = Ctl({"move", "m", "--capsule", "0.4,0.5", "--pos", "0,0.91,0",
                               "--displacement", "1,0,0"});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("position"), std::string::npos) << human.out;
  const RunResult bad = Ctl({"move", "m", "--capsule", "0.4,0.5", "--displacement", "1,0,0",
                             "--max-slope", "95"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("queries[0].move.settings.max_slope_degrees"), std::string::npos)
      << bad.err;
}

// `move --up`: the capsule stands along the given up (here +Z) and lands on
// the floor of a Z-up world; `--units` scales the metre defaults (the skin)
// to a world in inches.
TEST_F(CtlQueryTest, MoveAlongAnyUpAndUnits) {
  const json floor = {{"colliders", {Box(1, {20, 20, 0.5}, {0, 0, -0.5})}}};
  CtlJson({"load", "z", WriteTemp(floor.dump()), "--create"});
  const json zup = CtlJson({"move", "z", "--capsule", "0.4,0.5", "--pos", "0,0,3",
                            "--displacement", "0,0,-5", "--up", "0,0,1"});
  ASSERT_TRUE(zup.contains("position")) << zup.dump();
  EXPECT_NEAR(zup.at("position")[2].get<double>(), 0.91, 1e-6) << zup.dump();
  EXPECT_TRUE(zup.at("on_ground").get<bool>()) << zup.dump();
  EXPECT_NEAR(zup.at("ground").at("normal")[2].get<double>(), 1.0, 1e-9);
  EXPECT_FALSE(zup.at("blocked").get<bool>());
  // The same capsule in inches (radius 16, half-height 20): the 0.01 m skin
  // is 0.3937 inches.
  const json inches = CtlJson({"move", "z", "--capsule", "16,20", "--pos", "0,0,100",
                               "--displacement", "0,0,-200", "--up", "0,0,1", "--units",
                               "0.0254"});
  EXPECT_NEAR(inches.at("position")[2].get<double>(), 36 + 0.01 / 0.0254, 1e-6) << inches.dump();
  EXPECT_TRUE(inches.at("on_ground").get<bool>()) << inches.dump();
}

// --- check ----------------------------------------------------------------

// A shared case file passes through the service, per kind, and the scratch session is removed.
TEST_F(CtlTest, CheckCaseFilePasses) {
  const std::string path = std::string(HITBOX_CASES_DIR) + "/mixed.json";
  std::ifstream f(path);
  ASSERT_TRUE(f) << "missing " << path;
  const json cases = json::parse(f);
  const json r = CtlJson({"check", path, "--query-batch", "300"});
  EXPECT_TRUE(r.value("passed", false)) << r.dump(2);
  EXPECT_EQ(r.value("colliders", 0u), cases.at("colliders").size());
  size_t total = 0;
  for (const auto& [kind, counts] : r.at("kinds").items()) {
    EXPECT_EQ(counts.at("passed"), counts.at("total")) << kind;
    total += counts.at("total").get<size_t>();
  }
  EXPECT_EQ(total, cases.at("queries").size());
  EXPECT_TRUE(CtlJson({"sessions", "list"}).at("sessions").empty());
}

// The rewind case file (histories, at_tick queries) passes through the
// service; the kept session then answers `--at-tick` queries and refuses
// ticks outside its history; `sessions create --history-ticks` sets the window.
TEST_F(CtlTest, CheckRewindFileThenAtTick) {
  const std::string path = std::string(HITBOX_CASES_DIR) + "/rewind/rewind.json";
  std::ifstream f(path);
  ASSERT_TRUE(f) << "missing " << path;
  const json r = CtlJson({"check", path, "--session", "lag", "--keep"});
  EXPECT_TRUE(r.value("passed", false)) << r.dump(2);
  const json info = CtlJson({"sessions", "get", "lag"});
  EXPECT_EQ(info.at("ticks").at("oldest"), 7650u) << info.dump();
  EXPECT_EQ(info.at("ticks").at("newest"), 7690u) << info.dump();
  const json past = CtlJson({"raycast", "lag", "--origin", "0,0,0", "--translation", "30,0,0",
                             "--at-tick", "7660.5"});
  EXPECT_TRUE(past.contains("hits")) << past.dump();
  const json overlap =
      CtlJson({"overlap", "lag", "--sphere", "5", "--pos", "0,0,0", "--at-tick", "7650"});
  EXPECT_TRUE(overlap.contains("hits")) << overlap.dump();
  const RunResult late = Ctl({"cast", "lag", "--sphere", "1", "--translation", "1,0,0",
                              "--at-tick", "7000"});
  EXPECT_EQ(late.code, 1) << late.out << late.err;
  EXPECT_NE(late.err.find("OUT_OF_RANGE"), std::string::npos) << late.err;
  EXPECT_NE(late.err.find("oldest tick 7650, newest tick 7690"), std::string::npos) << late.err;
  EXPECT_EQ(Ctl({"sessions", "create", "short", "--history-ticks", "8"}).code, 0);
  EXPECT_EQ(CtlJson({"sessions", "get", "short"}).at("limits").value("history_ticks", 0u), 8u);
}

// The demo scene shipped for docker compose passes too; human output as the conformance test prints it.
TEST_F(CtlTest, CheckDemoScene) {
  const RunResult r = Ctl({"check", kDemoScene, "--session", "demo-check", "--keep"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
  EXPECT_EQ(CtlJson({"sessions", "get", "demo-check"}).value("collider_count", 0u), 240u);
}

// A wrong expected answer fails the check (exit 1) and names the query; the
// right ones pass. Query 2's sphere at x = 10 cannot touch the unit sphere,
// yet the file claims it does.
TEST_F(CtlTest, CheckReportsFailures) {
  json doc = {{"format", "hitbox-cases/1"},
              {"scenario", "wrong"},
              {"colliders", {Sphere(1, 1.0, {0, 0, 0})}},
              {"queries",
               {{{"id", 1}, {"raycast", {{"origin", {-5, 9, 0}}, {"translation", {10, 0, 0}}}}},
                {{"id", 2}, {"overlap", {{"shape", {{"sphere", {{"radius", 0.5}}}}}, {"position", {10, 0, 0}}, {"rotation", {0, 0, 0, 1}}}}},
                {{"id", 3}, {"overlap", {{"shape", {{"sphere", {{"radius", 0.5}}}}}, {"position", {1.2, 0, 0}}, {"rotation", {0, 0, 0, 1}}}}}}},
              {"expected", {{{"id", 1}, {"hit", nullptr}}, {{"id", 2}, {"hits", {1}}}, {{"id", 3}, {"hits", {1}}}}}};
  const RunResult r = Ctl({"check", WriteTemp(doc.dump())});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("query 2 (overlap)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("query 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overlap       1 /      2 passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
  const RunResult rj = Ctl({"--json", "check", WriteTemp(doc.dump())});
  EXPECT_EQ(rj.code, 1);
  const json j = json::parse(rj.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << rj.out << rj.err;
  EXPECT_FALSE(j.value("passed", true));
  EXPECT_EQ(j.value("failed", 0u), 1u);
  EXPECT_EQ(j.at("kinds").at("overlap").value("passed", 0), 1);
  EXPECT_TRUE(CtlJson({"sessions", "list"}).at("sessions").empty());
}

// --- bench ----------------------------------------------------------------

// A short unary run reports calls and latency, with no errors, and cleans up its session.
TEST_F(CtlTest, BenchUnary) {
  const json r = CtlJson({"bench", "--mode", "unary", "--colliders", "500", "--calls", "100",
                          "--duration", "2"});
  ASSERT_EQ(r.at("runs").size(), 1u) << r.dump();
  const json& run = r.at("runs")[0];
  EXPECT_EQ(run.value("mode", ""), "unary");
  EXPECT_GT(run.value("calls", 0u), 0u);
  EXPECT_EQ(run.value("errors", 1u), 0u);
  EXPECT_GT(run.at("latency").value("p50_us", 0.0), 0.0);
  EXPECT_TRUE(CtlJson({"sessions", "list"}).at("sessions").empty());
  const RunResult human = Ctl({"bench", "--mode", "tick", "--colliders", "300", "--ticks", "30",
                               "--streams", "1", "--duration", "2"});
  EXPECT_EQ(human.code, 0) << human.out << human.err;
  EXPECT_NE(human.out.find("QUERIES/S"), std::string::npos) << human.out;
}

// --- route ----------------------------------------------------------------

// `route` names the same owner as the client library's rendezvous hashing, for
// seeded random session ids, from --pool and from HITBOX_POOL.
TEST_F(CtlTest, RouteMatchesClientPool) {
  const std::vector<std::string> pool = {"hitboxd-0.hitboxd-pool:50051", "hitboxd-1.hitboxd-pool:50051",
                                         "hitboxd-2.hitboxd-pool:50051"};
  const std::string joined = pool[0] + "," + pool[1] + "," + pool[2];
  std::mt19937_64 rng(20240611);
  for (int i = 0; i < 12; ++i) {
    const std::string session = "arena-" + std::to_string(rng() % 100000);
    const std::string want = pool[RendezvousPick(pool, session)];
    const RunResult r = RunProcess({kCtl, "route", session, "--pool", joined});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, want + "\n") << session;
    const RunResult env = RunProcess({kCtl, "--json", "route", session}, {"HITBOX_POOL=" + joined});
    const json doc = json::parse(env.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << env.out << env.err;
    EXPECT_EQ(doc.value("address", ""), want) << session;
  }
  EXPECT_EQ(RunProcess({kCtl, "route", "x"}, {"HITBOX_POOL="}).code, 1);  // no pool
}

// --- auth and TLS --------------------------------------------------------

constexpr const char* kAdminToken = "ctl-admin-token-0123456789";

// hitboxd with an admin token: session tokens are enforced.
class CtlAuthTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.running()) << server_.log(); }

  /// hitboxctl --address <server> ARGS with HITBOX_ADDRESS and HITBOX_TOKEN unset (or set by `env`).
  RunResult Ctl(const std::vector<std::string>& args, std::vector<std::string> env = {}) const {
    env.insert(env.begin(), "HITBOX_TOKEN=");
    return CtlRunner(server_.address()).Run(args, env);
  }

  testing::TempDir dir_{"ctl-auth"};
  std::string admin_file_ = dir_.Write("admin", std::string(kAdminToken) + "\n");
  HitboxdProcess server_{{"--admin-token-file", admin_file_, "--open-create"}};
};

// `--json sessions create` prints the token; it (by --token or HITBOX_TOKEN)
// opens that session and nothing else; only the admin token lists sessions.
TEST_F(CtlAuthTest, TokenFlagAndEnvironment) {
  const RunResult created = Ctl({"--json", "sessions", "create", "arena"});
  ASSERT_EQ(created.code, 0) << created.err;
  const json doc = json::parse(created.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << created.out;
  const std::string token = doc.value("token", "");
  ASSERT_EQ(token.size(), 64u) << created.out;

  const RunResult anonymous = Ctl({"sessions", "get", "arena"});
  EXPECT_EQ(anonymous.code, 1);
  EXPECT_NE(anonymous.err.find("UNAUTHENTICATED"), std::string::npos) << anonymous.err;
  EXPECT_EQ(Ctl({"--token", token, "sessions", "get", "arena"}).code, 0);
  EXPECT_EQ(Ctl({"sessions", "get", "arena"}, {"HITBOX_TOKEN=" + token}).code, 0);
  const RunResult wrong = Ctl({"--token", std::string(64, 'f'), "sessions", "get", "arena"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("PERMISSION_DENIED"), std::string::npos) << wrong.err;
  EXPECT_EQ(Ctl({"--token", token, "overlap", "arena", "--sphere", "1"}).code, 0);

  const RunResult list = Ctl({"--token", token, "sessions", "list"});
  EXPECT_EQ(list.code, 1);
  EXPECT_NE(list.err.find("PERMISSION_DENIED"), std::string::npos) << list.err;
  const RunResult admin_list = Ctl({"--json", "sessions", "list"}, {std::string("HITBOX_TOKEN=") + kAdminToken});
  EXPECT_EQ(admin_list.code, 0) << admin_list.err;
  EXPECT_NE(admin_list.out.find("arena"), std::string::npos) << admin_list.out;
  EXPECT_EQ(admin_list.out.find(token), std::string::npos) << "a listing must not show tokens";

  // Human output names the token too; `load --create` prints the new session's.
  const RunResult human = Ctl({"sessions", "create", "arena-2"});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("token "), std::string::npos) << human.out;
  const RunResult loaded = Ctl({"--json", "load", "arena-3", kDemoScene, "--create"});
  ASSERT_EQ(loaded.code, 0) << loaded.err;
  const json ldoc = json::parse(loaded.out, nullptr, false);
  ASSERT_FALSE(ldoc.is_discarded()) << loaded.out;
  EXPECT_EQ(ldoc.value("token", "").size(), 64u) << loaded.out;
  EXPECT_EQ(Ctl({"--token", ldoc.value("token", ""), "sessions", "delete", "arena-3"}).code, 0);
}

// hitboxd --demo logs the demo session's token; with it (as the README's
// grpcurl lines show) the demo session answers, without it it does not.
TEST(CtlDemoTest, DemoTokenIsLogged) {
  const testing::TempDir dir("ctl-demo");
  const std::string admin = dir.Write("admin", std::string(kAdminToken) + "\n");
  // At the default log level (info): the token is logged there.
  HitboxdProcess server({"--demo", "--admin-token-file", admin}, {.log_level = ""});
  ASSERT_TRUE(server.running()) << server.log();
  const std::string log = server.log();
  const std::string marker = "its token is ";
  const size_t at = log.find(marker);
  ASSERT_NE(at, std::string::npos) << log;
  const std::string token = log.substr(at + marker.size(), 64);
  EXPECT_NE(log.find("authorization: Bearer " + token), std::string::npos) << log;
  const std::vector<std::string> base = {kCtl, "--address", server.address(), "--timeout", "20"};
  auto ctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), base.begin(), base.end());
    return RunProcess(args, {"HITBOX_ADDRESS=", "HITBOX_TOKEN="});
  };
  EXPECT_EQ(ctl({"--token", token, "raycast", "demo", "--origin", "-45,5,0", "--translation",
                 "90,0,0"}).code, 0);
  EXPECT_EQ(ctl({"raycast", "demo", "--origin", "-45,5,0", "--translation", "90,0,0"}).code, 1);
}

// `check` and `bench` make scratch sessions and use their tokens themselves.
TEST_F(CtlAuthTest, CheckAndBenchUseTheirOwnTokens) {
  const RunResult check = Ctl({"check", kDemoScene});
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  const RunResult bench = Ctl({"bench", "--mode", "unary", "--colliders", "200", "--calls", "50",
                               "--duration", "2"});
  EXPECT_EQ(bench.code, 0) << bench.out << bench.err;
}

// --tls-ca (or HITBOX_TLS_CA) against a TLS hitboxd; --tls-cert/--tls-key for mutual TLS.
TEST(CtlTlsTest, TlsAndMutualTls) {
  testing::TestCerts certs;
  if (!certs.ok()) GTEST_SKIP() << "openssl could not generate test certificates";
  const auto& a = certs.a();
  HitboxdProcess server({"--tls-cert", a.server_cert, "--tls-key", a.server_key});
  ASSERT_TRUE(server.running()) << server.log();
  const std::vector<std::string> env = {"HITBOX_ADDRESS=", "HITBOX_TOKEN=", "HITBOX_TLS_CA="};
  auto ctl = [&](std::vector<std::string> args, std::vector<std::string> e) {
    args.insert(args.begin(), {kCtl, "--address", server.address(), "--timeout", "5"});
    return RunProcess(args, e);
  };
  EXPECT_EQ(ctl({"--tls-ca", a.ca, "health"}, env).code, 0);
  EXPECT_EQ(ctl({"health"}, env).code, 1);  // plaintext to a TLS server
  EXPECT_EQ(ctl({"--tls-ca", certs.b().ca, "health"}, env).code, 1);  // another CA
  std::vector<std::string> with_ca = env;
  with_ca.push_back("HITBOX_TLS_CA=" + a.ca);
  EXPECT_EQ(ctl({"health"}, with_ca).code, 0);
  const RunResult created = ctl({"--tls-ca", a.ca, "--json", "sessions", "create", "t"}, env);
  EXPECT_EQ(created.code, 0) << created.err;

  HitboxdProcess mtls({"--tls-cert", a.server_cert, "--tls-key", a.server_key, "--tls-client-ca", a.ca});
  ASSERT_TRUE(mtls.running()) << mtls.log();
  auto mctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {kCtl, "--address", mtls.address(), "--timeout", "5"});
    return RunProcess(args, env);
  };
  EXPECT_EQ(mctl({"--tls-ca", a.ca, "--tls-cert", a.client_cert, "--tls-key", a.client_key,
                  "health"}).code, 0);
  EXPECT_EQ(mctl({"--tls-ca", a.ca, "health"}).code, 1);  // no client certificate
  EXPECT_EQ(mctl({"--tls-ca", a.ca, "--tls-cert", certs.b().client_cert, "--tls-key",
                  certs.b().client_key, "health"}).code, 1);  // signed by another CA
}

}  // namespace
}  // namespace hitbox::ctl_test

// --- watches ----------------------------------------------------------------

namespace hitbox::ctl_test {
namespace {

// JSON objects, one per line of `text`.
std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? end : end - start);
    if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// watches add prints the new watch's ENTER events; `watch --json` prints one
// JSON event per line as batches apply; list and remove.
TEST_F(CtlTest, WatchesAddListWatchRemove) {
  Client client(server_.address());
  ASSERT_TRUE(client.CreateSession("w").ok());
  std::vector<Collider> balls;
  for (uint64_t i = 1; i <= 3; ++i) {
    balls.push_back({i, *Shape::MakeSphere(0.5), Pose({static_cast<double>(i) * 2, 0, 0}), 0, 0});
  }
  ASSERT_TRUE(client.AddColliders("w", balls).ok());

  const std::vector<std::string> add = {"--json", "watches", "add", "w", "7", "--sphere", "3",
                                        "--pos", "0,0,0"};
  const RunResult added = Ctl(add);
  ASSERT_EQ(added.code, 0) << Describe(add, added);
  const std::vector<json> enter = JsonLines(added.out);
  ASSERT_EQ(enter.size(), 1u) << added.out;  // collider 1 (x = 2) only
  EXPECT_EQ(enter[0].value("kind", ""), "ENTER");
  EXPECT_EQ(enter[0].value("collider_id", 0), 1u);
  EXPECT_EQ(enter[0].value("watch_id", 0), 7u);

  const json list = CtlJson({"watches", "list", "w"});
  ASSERT_EQ(list.at("watches").size(), 1u) << list.dump();
  EXPECT_EQ(list.at("watches")[0].value("inside_count", 0), 1u);

  // The stream, as a user would run it; it says on stderr once it is
  // registered, and stops after two events.
  testing::TempDir dir("watch");
  const std::string out = dir.file("out"), err = dir.file("err");
  testing::Subprocess watch;
  ASSERT_TRUE(watch.Start({kCtl, "--address", server_.address(), "--json", "watch", "w",
                           "--count", "2", "--duration", "60"},
                          out, err, {"HITBOX_ADDRESS="}));
  ASSERT_TRUE(testing::WaitForWrite(err, watch, std::chrono::seconds(30), [&] {
    return ReadFile(err).find("watching session 'w'") != std::string::npos;
  })) << ReadFile(err);
  ASSERT_TRUE(client.MoveCollider("w", 1, Pose({20, 0, 0})).ok());
  ASSERT_TRUE(client.MoveCollider("w", 2, Pose({1, 0, 0})).ok());
  EXPECT_EQ(watch.Wait(std::chrono::seconds(60)), 0) << ReadFile(err);
  const std::vector<json> events = JsonLines(ReadFile(out));
  ASSERT_EQ(events.size(), 2u) << ReadFile(out);
  EXPECT_EQ(events[0].value("kind", ""), "EXIT");
  EXPECT_EQ(events[0].value("collider_id", 0), 1u);
  EXPECT_EQ(events[1].value("kind", ""), "ENTER");
  EXPECT_EQ(events[1].value("collider_id", 0), 2u);

  const RunResult removed = Ctl({"watches", "remove", "w", "7"});
  EXPECT_EQ(removed.code, 0) << removed.err;
  EXPECT_NE(removed.out.find("EXIT"), std::string::npos) << removed.out;
  EXPECT_TRUE(CtlJson({"watches", "list", "w"}).at("watches").empty());
  const RunResult unknown = Ctl({"watches", "remove", "w", "7"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace hitbox::ctl_test
