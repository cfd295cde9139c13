// Rendezvous routing: the hash is the published FNV-1a / SplitMix64, the pick
// is stable, balanced, and minimal under removal and addition; a ClientPool
// sends each session's calls to its owner (three in-process fake servers here,
// three hitboxd processes in hitboxd_test.cc).
#include "hitbox/client_pool.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "fake_hitbox.h"
#include "test_util.h"

namespace hitbox {
namespace {

// An independent, loop-by-loop restatement of the score, to catch an edit of
// the header that would silently reshuffle every deployed session.
uint64_t ReferenceScore(const std::string& address, const std::string& session) {
  auto fnv = [](const std::string& s) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
  };
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  return mix(fnv(address) ^ mix(fnv(session)));
}

std::string RandomSessionId(testing::Random& rng) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789-_.:";
  std::string id;
  const int n = rng.Int(1, 24);
  for (int i = 0; i < n; ++i) id.push_back(kChars[rng.Int(0, sizeof(kChars) - 2)]);
  return id;
}

// Published FNV-1a 64 test vectors (Fowler/Noll/Vo reference test suite).
TEST(RendezvousTest, Fnv1aTestVectors) {
  static_assert(Fnv1a64("") == 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(RendezvousTest, ScoreMatchesReference) {
  testing::Random rng(11);
  for (int i = 0; i < 1000; ++i) {
    const std::string a = "10.0.0." + std::to_string(rng.Int(0, 255)) + ":" +
                          std::to_string(rng.Int(1, 65535));
    const std::string s = RandomSessionId(rng);
    ASSERT_EQ(RendezvousScore(a, s), ReferenceScore(a, s)) << a << " / " << s;
  }
}

// Removing an address moves exactly the sessions it owned; adding one moves
// exactly the sessions it now wins; the pick ignores list order.
TEST(RendezvousTest, MinimalDisruption) {
  testing::Random rng(2024);
  const std::vector<std::string> all = {"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003",
                                        "127.0.0.1:7004", "127.0.0.1:7005"};
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<std::string> without = all;
    const std::string removed = without[static_cast<size_t>(trial)];
    without.erase(without.begin() + trial);
    std::vector<std::string> reversed(all.rbegin(), all.rend());
    for (int i = 0; i < 2000; ++i) {
      const std::string s = RandomSessionId(rng);
      const std::string before = all[RendezvousPick(all, s)];
      ASSERT_EQ(before, reversed[RendezvousPick(reversed, s)]) << s;
      const std::string after = without[RendezvousPick(without, s)];
      if (before != removed) {
        ASSERT_EQ(after, before) << "session " << s << " moved although " << removed
                                 << " was not its owner";
      }
      // Adding `removed` back: only the sessions it wins move, and only to it.
      ASSERT_TRUE(after == before || before == removed) << s;
    }
  }
  EXPECT_EQ(RendezvousPick({}, "x"), 0u);
}

// Sessions spread evenly: with 3 addresses each gets 1/3 +- 10% of 3000 ids.
TEST(RendezvousTest, Balanced) {
  testing::Random rng(5);
  const std::vector<std::string> addrs = {"hitbox-0:50051", "hitbox-1:50051", "hitbox-2:50051"};
  std::map<size_t, int> counts;
  for (int i = 0; i < 3000; ++i) ++counts[RendezvousPick(addrs, "match-" + std::to_string(i))];
  for (size_t a = 0; a < addrs.size(); ++a) {
    EXPECT_GT(counts[a], 900) << addrs[a];
    EXPECT_LT(counts[a], 1100) << addrs[a];
  }
  (void)rng;
}

// A pool over three in-process servers: every session lives on its owner and
// its calls reach it; after removing a server only its sessions re-route.
TEST(ClientPoolTest, RoutesToOwnerFakeServers) {
  std::vector<std::unique_ptr<testing::FakeServer>> servers;
  std::vector<std::string> addresses;
  std::map<std::string, testing::FakeServer*> by_address;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<testing::FakeServer>());
    addresses.push_back(servers.back()->address());
    by_address[addresses.back()] = servers.back().get();
  }
  ClientPool pool(addresses);
  EXPECT_EQ(pool.size(), 3u);
  EXPECT_FALSE(pool.AddAddress(addresses[0]));  // duplicates ignored
  EXPECT_EQ(pool.CreateSession(SessionSpec{}).code(), RpcCode::kInvalidArgument);

  std::map<std::string, std::string> owner;
  for (int i = 0; i < 30; ++i) {
    const std::string id = "match-" + std::to_string(i);
    RpcResult<SessionInfo> r = pool.CreateSession(SessionSpec{id, {}, {}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    owner[id] = pool.AddressFor(id);
    EXPECT_EQ(owner[id], addresses[RendezvousPick(addresses, id)]);
    EXPECT_EQ(pool.ForSession(id), pool.ForAddress(owner[id]));
    EXPECT_TRUE(pool.ForSession(id)->GetSession(id).ok());
  }
  std::set<std::string> used;
  for (const auto& [id, addr] : owner) used.insert(addr);
  EXPECT_EQ(used.size(), 3u) << "30 sessions should use all three servers";
  // Each server holds exactly the sessions routed to it.
  for (const std::string& addr : addresses) {
    Client direct(addr);
    RpcResult<std::vector<SessionInfo>> list = direct.ListSessions();
    ASSERT_TRUE(list.ok());
    for (const SessionInfo& info : *list) EXPECT_EQ(owner[info.session_id], addr);
  }
  ASSERT_TRUE(pool.RemoveAddress(addresses[1]));
  EXPECT_FALSE(pool.RemoveAddress(addresses[1]));
  for (const auto& [id, addr] : owner) {
    if (addr != addresses[1]) EXPECT_EQ(pool.AddressFor(id), addr) << id;
    else EXPECT_NE(pool.AddressFor(id), addr) << id;
  }
}

}  // namespace
}  // namespace hitbox
