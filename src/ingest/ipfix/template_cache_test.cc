#include "ingest/ipfix/template_cache.h"

#include <gtest/gtest.h>

namespace prism::ingest {
namespace {

constexpr int64_t kSec = 1'000'000'000;

Template OneField(bool options = false) {
  Template t;
  t.fields.push_back({FieldAction::kBytes, 4});
  t.min_record_bytes = 4;
  t.options = options;
  return t;
}

TemplateSource Source(uint32_t v4, uint32_t domain) { return {IpAddr::FromV4(v4), domain}; }

TEST(TemplateCache, PerSourceQuotaLeavesRoomForOtherSources) {
  TemplateCache cache({.max_templates = 100,
                       .max_templates_per_exporter = 100,
                       .max_templates_per_source = 10,
                       .timeout_ns = 0});
  for (uint16_t tid = 256; tid < 256 + 50; ++tid) {
    auto r = cache.Store({0, 1, tid, 10}, Source(1, 1), OneField(), 0);
    EXPECT_EQ(r, tid < 266 ? TemplateCache::StoreResult::kAdded
                           : TemplateCache::StoreResult::kSourceQuota)
        << tid;
  }
  EXPECT_EQ(cache.SourceSize(Source(1, 1)), 10u);
  // The same address in another domain, and another address (through another exporter handle),
  // have quotas of their own.
  EXPECT_EQ(cache.Store({0, 2, 256, 10}, Source(1, 2), OneField(), 0),
            TemplateCache::StoreResult::kAdded);
  EXPECT_EQ(cache.Store({1, 1, 256, 10}, Source(2, 1), OneField(), 0),
            TemplateCache::StoreResult::kAdded);
  // A template the source already holds is replaced even at its quota.
  EXPECT_EQ(cache.Store({0, 1, 256, 10}, Source(1, 1), OneField(), 0),
            TemplateCache::StoreResult::kReplaced);
  EXPECT_EQ(cache.size(), 12u);
}

TEST(TemplateCache, QuotaCountsAnAddressAcrossItsPorts) {
  // Exporter handles 0 and 1 are two ports of one address: one quota.
  TemplateCache cache({.max_templates = 100,
                       .max_templates_per_exporter = 100,
                       .max_templates_per_source = 3,
                       .timeout_ns = 0});
  EXPECT_EQ(cache.Store({0, 1, 256, 10}, Source(1, 1), OneField(), 0),
            TemplateCache::StoreResult::kAdded);
  EXPECT_EQ(cache.Store({1, 1, 256, 10}, Source(1, 1), OneField(), 0),
            TemplateCache::StoreResult::kAdded);
  EXPECT_EQ(cache.Store({1, 1, 257, 9}, Source(1, 1), OneField(), 0),
            TemplateCache::StoreResult::kAdded);
  EXPECT_EQ(cache.Store({0, 1, 258, 10}, Source(1, 1), OneField(), 0),
            TemplateCache::StoreResult::kSourceQuota);
}

TEST(TemplateCache, ExporterQuotaSpansItsDomains) {
  // One address spreading templates over many domains is held to its exporter quota.
  TemplateCache cache(
      {.max_templates = 100, .max_templates_per_exporter = 6, .max_templates_per_source = 4});
  size_t added = 0;
  for (uint32_t domain = 0; domain < 10; ++domain) {
    for (uint16_t tid = 256; tid < 260; ++tid) {
      auto r = cache.Store({0, domain, tid, 10}, Source(1, domain), OneField(), 0);
      added += r == TemplateCache::StoreResult::kAdded;
      if (domain >= 2) {
        EXPECT_EQ(r, TemplateCache::StoreResult::kExporterQuota);
      }
    }
  }
  EXPECT_EQ(added, 6u);
  EXPECT_EQ(cache.ExporterSize(IpAddr::FromV4(1)), 6u);
  EXPECT_EQ(cache.Store({1, 0, 256, 10}, Source(2, 0), OneField(), 0),
            TemplateCache::StoreResult::kAdded);
  // Withdrawn templates give the quota back.
  EXPECT_EQ(cache.WithdrawAll(0, 0, 10, false), 4u);
  EXPECT_EQ(cache.ExporterSize(IpAddr::FromV4(1)), 2u);
  EXPECT_EQ(cache.Store({0, 5, 256, 10}, Source(1, 5), OneField(), 0),
            TemplateCache::StoreResult::kAdded);
}

TEST(TemplateCache, GlobalBound) {
  TemplateCache cache({.max_templates = 5,
                       .max_templates_per_exporter = 5,
                       .max_templates_per_source = 4,
                       .timeout_ns = 0});
  for (uint16_t tid = 256; tid < 260; ++tid)
    cache.Store({0, 0, tid, 10}, Source(1, 0), OneField(), 0);
  EXPECT_EQ(cache.Store({1, 0, 256, 10}, Source(2, 0), OneField(), 0),
            TemplateCache::StoreResult::kAdded);
  EXPECT_EQ(cache.Store({1, 0, 257, 10}, Source(2, 0), OneField(), 0),
            TemplateCache::StoreResult::kFull);
  EXPECT_EQ(cache.size(), 5u);
}

TEST(TemplateCache, Withdrawals) {
  TemplateCache cache;
  for (uint16_t tid = 256; tid < 260; ++tid) {
    cache.Store({0, 7, tid, 10}, Source(1, 7), OneField(/*options=*/tid >= 258), 0);
  }
  cache.Store({0, 8, 256, 10}, Source(1, 8), OneField(), 0);  // another domain
  cache.Store({0, 7, 256, 9}, Source(1, 7), OneField(), 0);   // NetFlow v9 id space
  EXPECT_EQ(cache.Withdraw({0, 7, 257, 10}), 1u);
  EXPECT_EQ(cache.Withdraw({0, 7, 257, 10}), 0u);
  EXPECT_EQ(cache.Find({0, 7, 257, 10}, 0), nullptr);
  EXPECT_EQ(cache.WithdrawAll(0, 7, 10, /*options=*/true), 2u);   // 258, 259
  EXPECT_EQ(cache.WithdrawAll(0, 7, 10, /*options=*/false), 1u);  // 256
  EXPECT_NE(cache.Find({0, 8, 256, 10}, 0), nullptr);
  EXPECT_NE(cache.Find({0, 7, 256, 9}, 0), nullptr);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.SourceSize(Source(1, 7)), 1u);
}

TEST(TemplateCache, UnrefreshedTemplatesExpire) {
  TemplateCache cache({.max_templates = 100,
                       .max_templates_per_exporter = 100,
                       .max_templates_per_source = 2,
                       .timeout_ns = 60 * kSec});
  cache.Store({0, 1, 256, 10}, Source(1, 1), OneField(), 0);
  cache.Store({0, 1, 257, 10}, Source(1, 1), OneField(), 0);
  // 256 is resent at 50 s; 257 is not.
  EXPECT_EQ(cache.Store({0, 1, 256, 10}, Source(1, 1), OneField(), 50 * kSec),
            TemplateCache::StoreResult::kReplaced);
  bool expired = false;
  EXPECT_NE(cache.Find({0, 1, 257, 10}, 60 * kSec, &expired), nullptr);  // exactly the timeout
  EXPECT_FALSE(expired);
  EXPECT_EQ(cache.Find({0, 1, 257, 10}, 61 * kSec, &expired), nullptr);
  EXPECT_TRUE(expired);
  EXPECT_NE(cache.Find({0, 1, 256, 10}, 100 * kSec), nullptr);
  EXPECT_EQ(cache.SourceSize(Source(1, 1)), 1u);
}

TEST(TemplateCache, ExpiredTemplatesMakeRoomBeforeTheQuotaRefuses) {
  TemplateCache cache({.max_templates = 100,
                       .max_templates_per_exporter = 100,
                       .max_templates_per_source = 2,
                       .timeout_ns = 60 * kSec});
  cache.Store({0, 1, 256, 10}, Source(1, 1), OneField(), 0);
  cache.Store({0, 1, 257, 10}, Source(1, 1), OneField(), 30 * kSec);
  size_t expired = 0;
  EXPECT_EQ(cache.Store({0, 1, 258, 10}, Source(1, 1), OneField(), 40 * kSec, &expired),
            TemplateCache::StoreResult::kSourceQuota);
  EXPECT_EQ(expired, 0u);
  EXPECT_EQ(cache.Store({0, 1, 258, 10}, Source(1, 1), OneField(), 61 * kSec, &expired),
            TemplateCache::StoreResult::kAdded);
  EXPECT_EQ(expired, 1u);  // 256
  EXPECT_EQ(cache.Expire(200 * kSec), 2u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(TemplateCache, NoTimeoutKeepsTemplatesForEver) {
  TemplateCache cache;  // files and captures
  cache.Store({0, 1, 256, 10}, Source(1, 1), OneField(), 0);
  EXPECT_NE(cache.Find({0, 1, 256, 10}, int64_t{1} << 62), nullptr);
  EXPECT_EQ(cache.Expire(int64_t{1} << 62), 0u);
}

}  // namespace
}  // namespace prism::ingest
