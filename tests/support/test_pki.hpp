// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace sluice::testing {

/// Certificates for the TLS tests, made with the `openssl` command line in a temporary
/// directory (removed with the object): one CA, and the certificates it signs. Every method
/// throws std::runtime_error with openssl's output when a command fails.
///
/// Thread-safety: none; one test uses one. Lifetime: the files live as long as the object.
class TestPki {
 public:
  enum class Key { kEcdsaP256, kRsa2048 };

  /// A certificate and its key, as PEM files.
  struct Issued {
    std::string cert;
    std::string key;
  };

  TestPki();  ///< makes the CA (ECDSA P-256)

  /// The CA's certificate (PEM), for clients that verify.
  [[nodiscard]] std::string ca_cert() const;

  /// A certificate for `common_name` with `dns_names` in its subjectAltName (a name written
  /// "URI:..." or "IP:..." goes in as that type), valid from now for
  /// `days` days, signed by the CA. `file` names its files (FILE.pem, FILE.key).
  Issued issue(const std::string& file, const std::string& common_name,
               const std::vector<std::string>& dns_names, Key key = Key::kEcdsaP256, int days = 30);
  /// The same, but it expired on 2020-01-02.
  Issued issue_expired(const std::string& file, const std::string& common_name,
                       const std::vector<std::string>& dns_names);

  /// A certificate like issue()'s whose Authority Information Access names `ocsp_url` as its
  /// OCSP responder, in a file that holds the CA's certificate after it (the chain), recorded
  /// in the responder's index (ocsp_index()) as valid, or as revoked.
  Issued issue_with_ocsp(const std::string& file, const std::string& common_name,
                         const std::vector<std::string>& dns_names, const std::string& ocsp_url,
                         Key key = Key::kEcdsaP256, bool revoked = false);
  /// A DER OCSP response about `issued` (a certificate of issue_with_ocsp()), signed by the CA,
  /// valid for `minutes` from now, written offline by `openssl ocsp`
  /// to FILE.der; returns its path.
  std::string ocsp_response(const Issued& issued, const std::string& file, int minutes);
  /// The index file an `openssl ocsp` responder for this CA reads.
  [[nodiscard]] std::string ocsp_index() const { return (dir_ / "ocsp-index.txt").string(); }
  [[nodiscard]] std::string ca_key() const { return (dir_ / "ca.key").string(); }

  [[nodiscard]] const TempDir& dir() const noexcept { return dir_; }

 private:
  /// Makes FILE.key and a request FILE.csr for `common_name`, and the extension file FILE.ext.
  void request(const std::string& file, const std::string& common_name,
               const std::vector<std::string>& dns_names, Key key);
  TempDir dir_{"sluice-pki"};
};

}  // namespace sluice::testing
