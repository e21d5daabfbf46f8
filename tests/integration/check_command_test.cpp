// SPDX-License-Identifier: Apache-2.0
// The real `sluice` binary's command line (docs/behaviour.md "Command line"): --check, usage
// errors, --version.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/child_process.hpp"
#include "tests/support/test_pki.hpp"

namespace sluice {
namespace {

using testing::run_process;

constexpr const char* kBinary = SLUICE_BINARY;
constexpr const char* kShippedConfig = SLUICE_SOURCE_DIR "/conf/sluice.json";

class CheckCommandTest : public ::testing::Test {
 protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("sluice-check-" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
};

TEST_F(CheckCommandTest, ShippedConfigIsValid) {
  const auto r = run_process({kBinary, "--config", kShippedConfig, "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "config ok\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CheckCommandTest, PrintsEveryProblemWithItsPathAndExitsOne) {
  const std::string path = write("bad.json", R"({
    "listen": {"port": 70000},
    "limits": {"standard": {"requests": 10, "window_ms": 1000, "buckets": 0}},
    "backends": {"users": {"endpoints": ["127.0.0.1:9001"], "balanse": "random"}},
    "routes": [{"name": "r", "prefix": "/api", "backend": "nope", "limit": "standard"}]
  })");
  const auto r = run_process({kBinary, "--check", "--config", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("listen.port: must be between 0 and 65535\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("limits.standard.buckets: must be between 1 and 3600\n"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("backends.users.balanse: unknown field\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("routes[0].backend: no such backend\n"), std::string::npos) << r.err;
}

TEST_F(CheckCommandTest, ReportsAnUnreadableFile) {
  const std::string missing = (dir_ / "missing.json").string();
  const auto r = run_process({kBinary, "--check", "--config", missing});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind(missing + ": cannot read", 0), 0U) << r.err;
}

TEST_F(CheckCommandTest, ReportsInvalidJsonWithItsPosition) {
  const std::string path = write("broken.json", "{\n  \"routes\": [,]\n}\n");
  const auto r = run_process({kBinary, "--check", "--config", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("invalid JSON at line 2"), std::string::npos) << r.err;
}

TEST_F(CheckCommandTest, UsageErrorsExitOneWithUsage) {
  const auto r = run_process({kBinary, "--chek", "--config", kShippedConfig});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("sluice: unknown argument: --chek\nusage: sluice --config PATH", 0), 0U)
      << r.err;
  EXPECT_EQ(run_process({kBinary}).exit_code, 1);
}

TEST_F(CheckCommandTest, PrintsTheVersion) {
  const auto r = run_process({kBinary, "--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("sluice ", 0), 0U);
}

/// A config with one TLS listener serving `cert` and `key`.
std::string tls_config(const std::string& cert, const std::string& key) {
  return R"({"listeners": [{"name": "https", "port": 8443, "tls": {"certificates": [{"cert": ")" +
         cert + R"(", "key": ")" + key +
         R"("}]}}], "backends": {"b": {"endpoints": ["127.0.0.1:1"]}}, "routes": []})";
}

TEST_F(CheckCommandTest, LoadsEveryCertificateAndKey) {
  testing::TestPki pki;
  const auto good = pki.issue("good", "good", {"good.test"});
  const auto other = pki.issue("other", "other", {"other.test"});
  const auto soon = pki.issue("soon", "soon", {"soon.test"}, testing::TestPki::Key::kEcdsaP256, 5);
  const auto expired = pki.issue_expired("expired", "expired", {"expired.test"});

  auto r = run_process(
      {kBinary, "--check", "--config", write("good.json", tls_config(good.cert, good.key))});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "config ok\n");

  r = run_process(
      {kBinary, "--check", "--config", write("soon.json", tls_config(soon.cert, soon.key))});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: listeners[0].tls.certificates[0].cert: " + soon.cert +
                       " expires in 4 days"),
            std::string::npos)
      << r.err;

  r = run_process(
      {kBinary, "--check", "--config", write("mismatch.json", tls_config(good.cert, other.key))});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "listeners[0].tls.certificates[0].key: " + other.key + " is not the key of " +
                       good.cert + "\n");

  r = run_process({kBinary, "--check", "--config",
                   write("expired.json", tls_config(expired.cert, expired.key))});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "listeners[0].tls.certificates[0].cert: " + expired.cert + " has expired\n");

  r = run_process({kBinary, "--check", "--config",
                   write("missing.json", tls_config("/nonexistent.pem", good.key))});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(
      r.err.starts_with("listeners[0].tls.certificates[0].cert: cannot load /nonexistent.pem"))
      << r.err;
}

// Serving is the proxy integration tests' job (tests/integration/proxy): here, only that a
// config the gateway cannot run is refused before anything is bound.
TEST_F(CheckCommandTest, WithoutCheckAnInvalidConfigIsRefusedWithEveryProblem) {
  const std::string path = write("bad.json", R"({
    "listen": {"address": "127.0.0.1", "port": 0},
    "threads": -1,
    "routes": [{"name": "r", "prefix": "/", "backend": "missing"}]
  })");
  const auto r = run_process({kBinary, "--config", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("threads: must be between 0 and 1024\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("backends: is required\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ready"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sluice
