// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/service_notifier.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

#include "tests/support/manual_clock.hpp"
#include "tests/support/notify_socket.hpp"
#include "tests/support/temp_dir.hpp"

namespace sluice::app {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<spdlog::logger> quiet_logger() {
  return std::make_shared<spdlog::logger>("notify-test",
                                          std::make_shared<spdlog::sinks::null_sink_mt>());
}

class ServiceNotifierTest : public ::testing::Test {
 protected:
  testing::TempDir directory_{"sluice-notify"};
  std::string path_ = (directory_ / "notify.sock").string();
};

TEST_F(ServiceNotifierTest, DoesNothingWithoutASocket) {
  ServiceNotifier unset(std::nullopt, quiet_logger());
  EXPECT_FALSE(unset.is_enabled());
  EXPECT_FALSE(unset.send("READY=1"));
  ServiceNotifier empty(std::string(), quiet_logger());
  EXPECT_FALSE(empty.is_enabled());
  unset.ready("serving");  // no effect, no throw
}

TEST_F(ServiceNotifierTest, IgnoresAnAddressThatIsNotAUnixSocketPath) {
  EXPECT_FALSE(ServiceNotifier(std::string("vsock:2:1234"), quiet_logger()).is_enabled());
  EXPECT_FALSE(ServiceNotifier(std::string("relative/notify.sock"), quiet_logger()).is_enabled());
  EXPECT_FALSE(ServiceNotifier("/" + std::string(200, 'x'), quiet_logger()).is_enabled());
}

TEST_F(ServiceNotifierTest, SendsEachStateAsOneDatagram) {
  testing::NotifySocket receiver(path_);
  ServiceNotifier notifier(path_, quiet_logger());
  ASSERT_TRUE(notifier.is_enabled());
  testing::ManualClock clock;

  notifier.ready("serving");
  notifier.reloading(clock.now());
  notifier.stopping("draining");

  EXPECT_EQ(receiver.next(), "READY=1\nSTATUS=serving");
  const auto usec =
      std::chrono::duration_cast<std::chrono::microseconds>(clock.now().time_since_epoch());
  EXPECT_EQ(receiver.next(),
            "RELOADING=1\nSTATUS=reloading\nMONOTONIC_USEC=" + std::to_string(usec.count()));
  EXPECT_EQ(receiver.next(), "STOPPING=1\nSTATUS=draining");
  EXPECT_EQ(receiver.next(), std::nullopt);
}

TEST_F(ServiceNotifierTest, ReachesTheAbstractNamespaceThroughALeadingAt) {
  const std::string name = "sluice-notify-test-" + std::to_string(::getpid());
  testing::NotifySocket receiver('\0' + name);
  ServiceNotifier notifier("@" + name, quiet_logger());
  EXPECT_TRUE(notifier.send("READY=1"));
  EXPECT_EQ(receiver.next(), "READY=1");
}

TEST_F(ServiceNotifierTest, AMissingSocketIsAFailedSendNotAnError) {
  ServiceNotifier notifier(path_, quiet_logger());  // nothing bound there
  EXPECT_TRUE(notifier.is_enabled());
  EXPECT_FALSE(notifier.send("READY=1"));
  EXPECT_FALSE(notifier.send("STOPPING=1"));
}

TEST_F(ServiceNotifierTest, AReceiverThatDoesNotReadNeverBlocksTheSender) {
  testing::NotifySocket receiver(path_);  // never read: its queue fills up
  ServiceNotifier notifier(path_, quiet_logger());
  int refused = 0;
  for (int i = 0; i < 10000 && refused == 0; ++i) {
    refused += notifier.send("STATUS=" + std::string(1000, 'x')) ? 0 : 1;
  }
  EXPECT_EQ(refused, 1);  // a blocking socket would have hung here instead
  EXPECT_TRUE(receiver.next().has_value());
}

}  // namespace
}  // namespace sluice::app
