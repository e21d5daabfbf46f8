// SPDX-License-Identifier: Apache-2.0
#include "tests/support/test_pki.hpp"

#include <fstream>
#include <stdexcept>

#include "tests/support/child_process.hpp"

namespace sluice::testing {
namespace {

constexpr const char* kOpenssl = "/usr/bin/openssl";

void openssl(std::vector<std::string> args) {
  args.insert(args.begin(), kOpenssl);
  const ProcessResult result = run_process(args);
  if (result.exit_code != 0) {
    std::string line;
    for (const auto& a : args) {
      line += a + " ";
    }
    throw std::runtime_error("openssl failed (" + std::to_string(result.exit_code) + "): " + line +
                             "\n" + result.out + result.err);
  }
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

}  // namespace

TestPki::TestPki() {
  openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-keyout", (dir_ / "ca.key").string(), "-out", (dir_ / "ca.pem").string(), "-subj",
           "/CN=sluice test CA", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
           "-addext", "keyUsage=critical,keyCertSign,cRLSign"});
  // `openssl ca` (for fixed dates) needs a database and a config.
  write(dir_ / "index.txt", "");
  write(dir_ / "serial", "1000\n");
  write(dir_ / "ca.cnf",
        "[ca]\ndefault_ca = test\n[test]\ndatabase = " + (dir_ / "index.txt").string() +
            "\nnew_certs_dir = " + dir_.path().string() +
            "\nserial = " + (dir_ / "serial").string() +
            "\ndefault_md = sha256\npolicy = any\ncopy_extensions = copy\n"
            "unique_subject = no\n[any]\ncommonName = supplied\n");
}

std::string TestPki::ca_cert() const {
  return (dir_ / "ca.pem").string();
}

void TestPki::request(const std::string& file, const std::string& common_name,
                      const std::vector<std::string>& dns_names, Key key) {
  std::vector<std::string> args{"req",
                                "-new",
                                "-nodes",
                                "-keyout",
                                (dir_ / (file + ".key")).string(),
                                "-out",
                                (dir_ / (file + ".csr")).string(),
                                "-subj",
                                "/CN=" + common_name};
  if (key == Key::kEcdsaP256) {
    args.insert(args.end(), {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"});
  } else {
    args.insert(args.end(), {"-newkey", "rsa:2048"});
  }
  std::string san;
  for (const auto& name : dns_names) {
    // "URI:..." and "IP:..." go in as written; anything else is a DNS name.
    const bool typed = name.starts_with("URI:") || name.starts_with("IP:");
    san += (san.empty() ? "" : ",") + (typed ? name : "DNS:" + name);
  }
  if (!san.empty()) {
    args.insert(args.end(), {"-addext", "subjectAltName=" + san});
  }
  openssl(args);
  write(dir_ / (file + ".ext"), san.empty() ? "" : "subjectAltName=" + san + "\n");
}

TestPki::Issued TestPki::issue(const std::string& file, const std::string& common_name,
                               const std::vector<std::string>& dns_names, Key key, int days) {
  request(file, common_name, dns_names, key);
  const std::string cert = (dir_ / (file + ".pem")).string();
  openssl({"x509", "-req", "-in", (dir_ / (file + ".csr")).string(), "-CA", ca_cert(), "-CAkey",
           (dir_ / "ca.key").string(), "-CAcreateserial", "-days", std::to_string(days), "-extfile",
           (dir_ / (file + ".ext")).string(), "-out", cert});
  return {cert, (dir_ / (file + ".key")).string()};
}

TestPki::Issued TestPki::issue_expired(const std::string& file, const std::string& common_name,
                                       const std::vector<std::string>& dns_names) {
  request(file, common_name, dns_names, Key::kEcdsaP256);
  const std::string cert = (dir_ / (file + ".pem")).string();
  openssl({"ca", "-batch", "-config", (dir_ / "ca.cnf").string(), "-cert", ca_cert(), "-keyfile",
           (dir_ / "ca.key").string(), "-in", (dir_ / (file + ".csr")).string(), "-out", cert,
           "-startdate", "20200101000000Z", "-enddate", "20200102000000Z", "-notext"});
  return {cert, (dir_ / (file + ".key")).string()};
}

}  // namespace sluice::testing
