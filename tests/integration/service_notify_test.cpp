// SPDX-License-Identifier: Apache-2.0
// The real binary under a service manager (docs/packaging.md "Readiness and reload"): with
// NOTIFY_SOCKET set it reports READY=1 once it serves, RELOADING=1 and READY=1 around a SIGHUP
// reload (failed or not), and STOPPING=1 when SIGTERM starts the drain.
#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <string>

#include "tests/support/notify_socket.hpp"
#include "tests/support/sluice_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace sluice::testing {
namespace {

/// The first line of a notify message ("READY=1" of "READY=1\nSTATUS=serving"), or "(none)".
std::string first_line(const std::optional<std::string>& message) {
  return message ? message->substr(0, message->find('\n')) : "(none)";
}

class ServiceNotifyTest : public ::testing::Test {
 protected:
  TempDir directory_{"sluice-notify"};
  std::string path_ = (directory_ / "notify.sock").string();
  NotifySocket manager_{path_};

  std::string next_state() { return first_line(manager_.next(kDefaultTimeout)); }
};

TEST_F(ServiceNotifyTest, ReportsReadyReloadingAndStoppingInOrder) {
  SluiceProcess::Options options;
  options.env = {{"NOTIFY_SOCKET", path_}};
  SluiceProcess gateway(minimal_gateway_config({"127.0.0.1:9"}), options);
  EXPECT_EQ(next_state(), "READY=1");

  gateway.reload();
  const auto reloading = manager_.next(kDefaultTimeout);
  EXPECT_EQ(first_line(reloading), "RELOADING=1");
  EXPECT_NE(reloading.value_or("").find("\nMONOTONIC_USEC="), std::string::npos) << *reloading;
  EXPECT_EQ(next_state(), "READY=1");

  // A file that does not load keeps the old config: still serving, so READY=1 again.
  gateway.rewrite_config({{"listen", "not an object"}});
  gateway.reload();
  EXPECT_EQ(next_state(), "RELOADING=1");
  const auto after_failure = manager_.next(kDefaultTimeout);
  EXPECT_EQ(first_line(after_failure), "READY=1");
  EXPECT_NE(after_failure.value_or("").find("reload failed"), std::string::npos);

  ASSERT_TRUE(gateway.process().send_signal(SIGTERM));
  EXPECT_EQ(next_state(), "STOPPING=1");
  EXPECT_EQ(gateway.process().wait_exit(), 0) << gateway.process().output();
  EXPECT_EQ(manager_.next(), std::nullopt);  // nothing after STOPPING=1
}

TEST_F(ServiceNotifyTest, WithoutAListeningManagerTheGatewayStillServesAndStops) {
  SluiceProcess::Options options;
  options.env = {{"NOTIFY_SOCKET", (directory_ / "nobody-listens.sock").string()}};
  SluiceProcess gateway(minimal_gateway_config({"127.0.0.1:9"}), options);
  gateway.reload();
  EXPECT_EQ(gateway.terminate(), 0) << gateway.process().output();
  EXPECT_EQ(manager_.next(), std::nullopt);
}

}  // namespace
}  // namespace sluice::testing
