// TriangleCache: decoded triangles kept from move to move, and never moved
// under a move that points at them.
#include "world/triangle_cache.h"

#include <gtest/gtest.h>

namespace hitbox::internal {
namespace {

// A slot holds the triangle last filled into it; within one move a slot the
// move has taken (found or filled) is not given for another triangle, which
// the caller decodes elsewhere; the next move may take it.
TEST(TriangleCache, KeepsWhatAMoveTakes) {
  TriangleCache cache;
  cache.BeginMove();
  bool found = true;
  GatheredTriangle* a = cache.Slot(7, 3, 10, &found);
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(found);
  a->original = 10;
  cache.Fill(7, 3, 10);
  // Found again, the same slot.
  EXPECT_EQ(cache.Slot(7, 3, 10, &found), a);
  EXPECT_TRUE(found);
  // Triangle 10 + kSlots of the same mesh maps to that slot: taken this move.
  EXPECT_EQ(cache.Slot(7, 3, 10 + TriangleCache::kSlots, &found), nullptr);
  EXPECT_FALSE(found);
  EXPECT_EQ(a->original, 10u);
  // Another move may take it for the other triangle.
  cache.BeginMove();
  GatheredTriangle* b = cache.Slot(7, 3, 10 + TriangleCache::kSlots, &found);
  EXPECT_EQ(b, a);
  EXPECT_FALSE(found);
  cache.Fill(7, 3, 10 + TriangleCache::kSlots);
  // Now triangle 10 is gone, and its slot taken by this move.
  EXPECT_EQ(cache.Slot(7, 3, 10, &found), nullptr);
  EXPECT_FALSE(found);
  // Another version of the mesh is another triangle.
  cache.BeginMove();
  EXPECT_NE(cache.Slot(8, 3, 10 + TriangleCache::kSlots, &found), nullptr);
  EXPECT_FALSE(found);
}

}  // namespace
}  // namespace hitbox::internal
