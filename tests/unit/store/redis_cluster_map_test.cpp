// SPDX-License-Identifier: Apache-2.0
// The Redis Cluster protocol pieces: key slots, CLUSTER SLOTS replies, MOVED/ASK errors.
// (That cluster_slot agrees with a real Redis is checked in the cluster integration tests.)
#include "gateway/store/redis_cluster_map.hpp"

#include <gtest/gtest.h>

namespace sluice::store {
namespace {

RedisReply integer(std::int64_t value) {
  RedisReply r;
  r.type = RedisReply::Type::kInteger;
  r.integer = value;
  return r;
}

RedisReply string(std::string text) {
  RedisReply r;
  r.type = RedisReply::Type::kString;
  r.text = std::move(text);
  return r;
}

RedisReply array(std::vector<RedisReply> elements) {
  RedisReply r;
  r.type = RedisReply::Type::kArray;
  r.elements = std::move(elements);
  return r;
}

RedisReply range(std::int64_t first, std::int64_t last, const std::string& host,
                 std::int64_t port) {
  return array({integer(first), integer(last),
                array({string(host), integer(port), string("0123abcd")}),
                array({string("10.0.0.9"), integer(7000), string("replica")})});
}

TEST(ClusterSlotTest, IsCrc16XmodemModulo16384) {
  // 0x31C3 is the CRC16/XMODEM check value of "123456789" (the Redis Cluster spec's test vector).
  EXPECT_EQ(cluster_slot("123456789"), 0x31C3);
  EXPECT_EQ(cluster_slot(""), 0);
}

TEST(ClusterSlotTest, HashesOnlyTheFirstNonEmptyHashTag) {
  EXPECT_EQ(cluster_slot("{user1000}.following"), cluster_slot("user1000"));
  EXPECT_EQ(cluster_slot("{user1000}.followers"), cluster_slot("user1000"));
  EXPECT_EQ(cluster_slot("foo{bar}{zap}"), cluster_slot("bar"));
  EXPECT_EQ(cluster_slot("foo{{bar}}zap"), cluster_slot("{bar"));
  // An empty tag, or a `{` with no `}` after it: the whole key.
  EXPECT_NE(cluster_slot("foo{}{bar}"), cluster_slot("bar"));
  EXPECT_EQ(cluster_slot("foo{}{bar}"), cluster_slot(std::string_view("foo{}{bar}")));
  EXPECT_NE(cluster_slot("foo{bar"), cluster_slot("bar"));
  // A sluice window key: every command of one (policy, user) is on one slot.
  EXPECT_EQ(cluster_slot("sluice:{p:00ff}"), cluster_slot("p:00ff"));
}

TEST(ClusterSlotsReplyTest, ParsesEveryRangeAndItsMaster) {
  const auto ranges =
      parse_cluster_slots(array({range(0, 5460, "127.0.0.1", 7000), range(5461, 16383, "", 7001)}));
  ASSERT_TRUE(ranges.has_value());
  ASSERT_EQ(ranges->size(), 2U);
  EXPECT_EQ((*ranges)[0].first, 0);
  EXPECT_EQ((*ranges)[0].last, 5460);
  EXPECT_EQ((*ranges)[0].master, (ClusterNode{"127.0.0.1", 7000}));
  EXPECT_EQ((*ranges)[1].first, 5461);
  EXPECT_EQ((*ranges)[1].last, 16383);
  EXPECT_EQ((*ranges)[1].master, (ClusterNode{"", 7001}));  // "the address you asked"
  EXPECT_EQ(parse_cluster_slots(array({}))->size(), 0U);    // a cluster with no slots yet
}

TEST(ClusterSlotsReplyTest, RejectsWhatIsNotASlotMap) {
  RedisReply error;
  error.type = RedisReply::Type::kError;
  error.text = "ERR This instance has cluster support disabled";
  EXPECT_FALSE(parse_cluster_slots(error).has_value());
  EXPECT_FALSE(parse_cluster_slots(array({range(5, 4, "h", 1)})).has_value());      // backwards
  EXPECT_FALSE(parse_cluster_slots(array({range(0, 16384, "h", 1)})).has_value());  // past the end
  EXPECT_FALSE(parse_cluster_slots(array({range(0, 1, "h", 0)})).has_value());      // no port
  EXPECT_FALSE(parse_cluster_slots(array({range(0, 1, "h", 70000)})).has_value());
  EXPECT_FALSE(parse_cluster_slots(array({array({integer(0), integer(1)})})).has_value());
  EXPECT_FALSE(parse_cluster_slots(array({integer(3)})).has_value());
}

TEST(RedirectTest, ParsesMovedAndAsk) {
  const auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->kind, Redirect::Kind::kMoved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->node, (ClusterNode{"127.0.0.1", 6381}));
  const auto ask = parse_redirect("ASK 16383 redis-2.internal:7002");
  ASSERT_TRUE(ask.has_value());
  EXPECT_EQ(ask->kind, Redirect::Kind::kAsk);
  EXPECT_EQ(ask->slot, 16383);
  EXPECT_EQ(ask->node, (ClusterNode{"redis-2.internal", 7002}));
}

TEST(RedirectTest, SplitsAnIpv6AddressAtTheLastColonAndKeepsAnEmptyHost) {
  EXPECT_EQ(parse_redirect("MOVED 1 ::1:7000")->node, (ClusterNode{"::1", 7000}));
  EXPECT_EQ(parse_redirect("MOVED 1 :7000")->node, (ClusterNode{"", 7000}));
}

TEST(RedirectTest, OtherErrorsAreNotRedirects) {
  for (const char* text :
       {"NOSCRIPT No matching script", "CLUSTERDOWN The cluster is down", "TRYAGAIN", "MOVED",
        "MOVED 3999", "MOVED x 127.0.0.1:1", "MOVED 16384 127.0.0.1:1", "MOVED 1 127.0.0.1",
        "MOVED 1 127.0.0.1:0", "MOVED 1 127.0.0.1:99999", "ASK 1 host:port", "moved 1 h:1"}) {
    EXPECT_FALSE(parse_redirect(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace sluice::store
