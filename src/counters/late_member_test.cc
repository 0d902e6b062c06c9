#include "counters/late_member.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace prism::counters {
namespace {

// A member's traffic in one iteration: `early` of its bytes in a short burst a quarter of an
// iteration before its collective's burst (phase 0.8), the rest in that burst.
double Cumulative(double early, double p) {
  const double whole = std::floor(p), f = p - whole;
  const double e = early * std::clamp((f - 0.55) / 0.02, 0.0, 1.0);
  const double m = (1 - early) * std::clamp((f - 0.80) / 0.03, 0.0, 1.0);
  return (whole + e + m) * 1e9;
}

// One NIC's deltas: polls every second from `offset_s` over `iterations` of `period_s`.
std::vector<PhaseDelta> Polled(double early, double period_s, size_t iterations,
                               double offset_s) {
  std::vector<PhaseDelta> out;
  for (double t = offset_s; t + 1 <= period_s * iterations; t += 1) {
    const double a = t / period_s, b = (t + 1) / period_s;
    out.push_back({a, b, Cumulative(early, b) - Cumulative(early, a)});
  }
  return out;
}

// A job of members with two NICs each; `sent[i]` / `received[i]`: member i's early shares in a
// 20-iteration episode of 5.3 s steps. Normal iterations (4.1 s) have none.
std::vector<MemberPhaseDeltas> Job(const std::vector<double>& sent,
                                   const std::vector<double>& received) {
  std::vector<MemberPhaseDeltas> job(sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    for (int nic = 0; nic < 2; ++nic) {
      const double offset = 0.13 + 0.11 * i + 0.47 * nic;  // each port polled on its own
      NicPhaseDeltas d;
      d.share = 0.5;
      d.sent = Polled(sent[i], 5.3, 20, offset);
      d.received = Polled(received[i], 5.3, 20, offset);
      d.normal_sent = Polled(0, 4.1, 20, offset);
      d.normal_received = Polled(0, 4.1, 20, offset);
      job[i].nics.push_back(std::move(d));
    }
  }
  return job;
}

// A ring of 6 waiting for member 2: member 2 + j sends j steps early (j = 1..4) and its successor
// receives them; member 1 waits for member 2's buffers, so it receives but does not send.
constexpr double kStep = 0.03;
const std::vector<double> kSent = {4 * kStep, 0, 0, kStep, 2 * kStep, 3 * kStep};
const std::vector<double> kReceived = {3 * kStep, 4 * kStep, 0, 0, kStep, 2 * kStep};

TEST(FindLateMembers, TheMemberThatNeitherSendsNorReceivesEarly) {
  const LateMembers r = FindLateMembers(Job(kSent, kReceived), 20, 20, 20, {});
  ASSERT_TRUE(r.evidence);
  ASSERT_EQ(r.late.size(), 1u);
  EXPECT_EQ(r.late[0], 2u);
  // Its predecessor (receives only) and successor (sends only) are not named.
  EXPECT_NEAR(r.members[1].early_received, 4 * kStep, 0.02);
  EXPECT_NEAR(r.members[3].early_sent, kStep, 0.02);
  EXPECT_FALSE(r.members[1].late);
  EXPECT_FALSE(r.members[3].late);
  EXPECT_LT(std::max(r.members[2].early_sent, r.members[2].early_received), r.threshold);
}

TEST(FindLateMembers, NoEarlyProgressNamesNobody) {
  // The job as a whole slowed down (every member arrives together): nothing moves early.
  const std::vector<double> none(6, 0);
  const LateMembers r = FindLateMembers(Job(none, none), 20, 20, 20, {});
  EXPECT_FALSE(r.evidence);
  EXPECT_TRUE(r.late.empty());
}

TEST(FindLateMembers, MoreThanAThirdQuietIsNoLateServer) {
  // Only two members move bytes early: four quiet ones are not "the" late server.
  const std::vector<double> sent = {0.1, 0.1, 0, 0, 0, 0}, received = {0.1, 0.1, 0, 0, 0, 0};
  const LateMembers r = FindLateMembers(Job(sent, received), 20, 20, 20, {});
  EXPECT_TRUE(r.evidence);
  EXPECT_TRUE(r.late.empty());
}

TEST(FindLateMembers, EarlyInNormalIterationsTooIsNoEvidence) {
  // A member that always sends early (its role in every iteration) is judged against itself.
  std::vector<MemberPhaseDeltas> job = Job(kSent, kReceived);
  for (NicPhaseDeltas& d : job[4].nics) d.normal_sent = Polled(2 * kStep, 4.1, 20, 0.3);
  const LateMembers r = FindLateMembers(job, 20, 20, 20, {});
  EXPECT_NEAR(r.members[4].early_sent, 0, 0.02);
  ASSERT_EQ(r.late.size(), 1u);
  EXPECT_EQ(r.late[0], 2u);
}

}  // namespace
}  // namespace prism::counters
