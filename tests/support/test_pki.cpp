// SPDX-License-Identifier: Apache-2.0
#include "tests/support/test_pki.hpp"

#include <ctime>
#include <fstream>
#include <stdexcept>

#include "tests/support/child_process.hpp"

namespace sluice::testing {
namespace {

constexpr const char* kOpenssl = "/usr/bin/openssl";

std::string openssl(std::vector<std::string> args) {
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
  return result.out;
}

/// The value after "KEY=" on its line of `text` (openssl x509 -noout output).
std::string field(const std::string& text, const std::string& key) {
  const auto at = text.find(key + "=");
  if (at == std::string::npos) {
    throw std::runtime_error("no " + key + " in: " + text);
  }
  const auto from = at + key.size() + 1;
  return text.substr(from, text.find('\n', from) - from);
}

/// `openssl ocsp`'s index date (YYMMDDHHMMSSZ) of an openssl date ("Dec 19 01:26:32 2026 GMT").
std::string index_date(const std::string& text) {
  std::tm tm{};
  if (strptime(text.c_str(), "%b %d %H:%M:%S %Y", &tm) == nullptr) {
    throw std::runtime_error("cannot read the date " + text);
  }
  char out[16];
  std::strftime(out, sizeof out, "%Y%m%d%H%M%SZ", &tm);
  return std::string(out + 2);  // the index keeps a two-digit year
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

TestPki::Issued TestPki::issue_with_ocsp(const std::string& file, const std::string& common_name,
                                         const std::vector<std::string>& dns_names,
                                         const std::string& ocsp_url, Key key, bool revoked) {
  request(file, common_name, dns_names, key);
  {
    std::ofstream ext(dir_ / (file + ".ext"), std::ios::app);
    ext << "authorityInfoAccess=OCSP;URI:" << ocsp_url << "\n";
  }
  const std::string leaf = (dir_ / (file + ".leaf.pem")).string();
  openssl({"x509", "-req", "-in", (dir_ / (file + ".csr")).string(), "-CA", ca_cert(), "-CAkey",
           ca_key(), "-CAcreateserial", "-days", "30", "-extfile",
           (dir_ / (file + ".ext")).string(), "-out", leaf});
  const std::string cert = (dir_ / (file + ".pem")).string();
  {
    std::ifstream leaf_in(leaf);
    std::ifstream ca_in(ca_cert());
    std::ofstream out(cert);
    out << leaf_in.rdbuf() << ca_in.rdbuf();
  }
  const std::string facts = openssl(
      {"x509", "-in", leaf, "-noout", "-serial", "-enddate", "-subject", "-nameopt", "compat"});
  const std::string expires = index_date(field(facts, "notAfter"));
  std::ofstream index(ocsp_index(), std::ios::app);
  index << (revoked ? "R" : "V") << "\t" << expires << "\t" << (revoked ? "200101000000Z" : "")
        << "\t" << field(facts, "serial") << "\tunknown\t" << field(facts, "subject") << "\n";
  return {cert, (dir_ / (file + ".key")).string()};
}

std::string TestPki::ocsp_response(const Issued& issued, const std::string& file, int minutes) {
  const std::string request_file = (dir_ / (file + ".req")).string();
  const std::string response_file = (dir_ / (file + ".der")).string();
  openssl(
      {"ocsp", "-issuer", ca_cert(), "-cert", issued.cert, "-no_nonce", "-reqout", request_file});
  std::vector<std::string> args{
      "ocsp",       "-index",   ocsp_index(),  "-rsigner", ca_cert(),
      "-rkey",      ca_key(),   "-CA",         ca_cert(),  "-reqin",
      request_file, "-respout", response_file, "-nmin",    std::to_string(minutes)};
  openssl(args);
  return response_file;
}

}  // namespace sluice::testing
