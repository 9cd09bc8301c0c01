// The launchers' plan cache (kernels/dwconv/cuda/plan_cache.h), host only: a plan is made once per key, by one thread
// even when several ask for it at once, and stays where it was (callers keep references to it).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/dwconv/cuda/plan_cache.h"

namespace cnn::dwconv {
namespace {

TEST(DwconvPlanCache, MakesEachKeysPlanOnce) {
  PlanCache<std::pair<int, int>, std::vector<int>> cache;
  int made = 0;
  const auto make = [&](int v) {
    return [&made, v] {
      ++made;
      return std::vector<int>(3, v);
    };
  };
  const std::vector<int>& a = cache.get({1, 2}, make(7));
  const std::vector<int>& b = cache.get({2, 1}, make(8));
  EXPECT_EQ(made, 2);
  EXPECT_EQ(a, std::vector<int>(3, 7));
  EXPECT_EQ(b, std::vector<int>(3, 8));
  // A hit returns the first plan (the maker is not run), at the same address, after other keys were added.
  for (int k = 0; k < 100; ++k) cache.get({k, -1}, make(k));
  const std::vector<int>& again = cache.get({1, 2}, make(9));
  EXPECT_EQ(made, 102);
  EXPECT_EQ(&again, &a);
  EXPECT_EQ(again, std::vector<int>(3, 7));
}

TEST(DwconvPlanCache, ConcurrentCallersShareOnePlan) {
  PlanCache<int, int> cache;
  std::atomic<int> made{0};
  std::atomic<bool> go{false};
  std::vector<const int*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      seen[t] = &cache.get(42, [&] {
        ++made;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // others arrive while it is being made
        return 7;
      });
    });
  go = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(made.load(), 1);
  for (const int* p : seen) {
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p, seen[0]);
    EXPECT_EQ(*p, 7);
  }
}

}  // namespace
}  // namespace cnn::dwconv
