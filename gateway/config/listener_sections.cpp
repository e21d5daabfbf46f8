// SPDX-License-Identifier: Apache-2.0
// The listeners: v1's `listen`, or the `listeners` array with each listener's `tls`
// (docs/behaviour.md "Configuration", docs/tls.md).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "gateway/config/config_sections.hpp"

namespace sluice::config::detail {
namespace {

/// The strings of array `key` (each checked by `valid`, which returns a problem or ""); absent:
/// `fallback`.
template <typename Valid>
std::vector<std::string> read_strings(ObjectReader& reader, std::string_view key,
                                      std::vector<std::string> fallback, Valid&& valid) {
  const auto* list = reader.array(key);
  if (list == nullptr) {
    return fallback;
  }
  std::vector<std::string> out;
  const auto list_path = reader.path_of(key);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto path = element_path(list_path, i);
    if (auto text = read_string((*list)[i], path, reader.problems())) {
      if (const std::string problem = valid(*text); !problem.empty()) {
        reader.problems().add(path, problem);
      } else {
        out.push_back(std::move(*text));
      }
    }
  }
  return out;
}

/// A listener's `tls` object (docs/tls.md): the certificates are read when the gateway starts
/// (and by --check), not here.
ListenerTlsConfig parse_listener_tls(ObjectReader& reader) {
  ListenerTlsConfig tls;
  const auto* certificates = reader.array("certificates", Presence::kRequired);
  if (certificates != nullptr && certificates->empty()) {
    reader.report("certificates", "must name at least one certificate");
  }
  if (certificates != nullptr) {
    for_each_object(
        reader, "certificates", *certificates, [&](ObjectReader& cert_reader, const std::string&) {
          TlsCertificateConfig cert;
          cert.cert = cert_reader.string("cert", Presence::kRequired).value_or("");
          cert.key = cert_reader.string("key", Presence::kRequired).value_or("");
          cert.server_names =
              read_strings(cert_reader, "server_names", {}, [](const std::string& name) {
                const bool ok = !name.empty() && name.find(' ') == std::string::npos;
                return ok ? std::string() : std::string("must be a host name");
              });
          cert.ocsp = cert_reader.nullable_string("ocsp");
          if (cert.ocsp && cert.ocsp->empty()) {
            cert_reader.report("ocsp", R"(must be a DER file, "fetch", or null)");
          }
          tls.certificates.push_back(std::move(cert));
        });
  }
  if (auto version = reader.string("min_version")) {
    if (*version != "1.2" && *version != "1.3") {
      reader.report("min_version", R"(must be "1.2" or "1.3" (older versions are refused))");
    } else {
      tls.min_version = std::move(*version);
    }
  }
  tls.alpn = read_strings(reader, "alpn", tls.alpn, [](const std::string& protocol) {
    return protocol == "http/1.1" || protocol == "h2"
               ? std::string()
               : std::string(R"(must be "http/1.1" or "h2")");
  });
  // OpenSSL judges the names when the certificates are loaded (start, --check, reload).
  for (auto [key, field] :
       {std::pair{"ciphers", &tls.ciphers}, std::pair{"ciphersuites", &tls.ciphersuites},
        std::pair{"groups", &tls.groups}}) {
    if (auto list = reader.string(key)) {
      if (list->empty()) {
        reader.report(key, "must name at least one (OpenSSL list syntax, ':' between names)");
      } else {
        *field = std::move(*list);
      }
    }
  }
  tls.client_ca = reader.nullable_string("client_ca");
  if (tls.client_ca && tls.client_ca->empty()) {
    reader.report("client_ca", "must be a file name (or null)");
  }
  tls.require_client_cert = reader.boolean("require_client_cert").value_or(false);
  if (tls.require_client_cert && !tls.client_ca) {
    reader.report("require_client_cert", "needs client_ca to verify the certificates against");
  }
  return tls;
}

/// The listener's `http2` object (docs/http2.md). On a TLS listener h2 is offered when `alpn`
/// lists it, and `enabled` may only agree.
void parse_http2(ObjectReader& reader, ListenerConfig& listener) {
  const bool alpn_h2 =
      listener.tls && std::find(listener.tls->alpn.begin(), listener.tls->alpn.end(), "h2") !=
                          listener.tls->alpn.end();
  ListenerHttp2Config& http2 = listener.http2;
  http2.enabled = alpn_h2;
  reader.nested("http2", [&](ObjectReader& h2) {
    if (const auto enabled = h2.boolean("enabled")) {
      if (listener.tls && *enabled != alpn_h2) {
        h2.report("enabled", *enabled ? R"(needs "h2" in tls.alpn on a TLS listener)"
                                      : R"(contradicts "h2" in tls.alpn (remove one))");
      }
      http2.enabled = *enabled;
    }
    http2.max_concurrent_streams = h2.integer<std::uint32_t>("max_concurrent_streams", 1, 10000)
                                       .value_or(http2.max_concurrent_streams);
    http2.max_stream_resets = h2.integer<std::uint32_t>("max_stream_resets", 1, 1000000)
                                  .value_or(http2.max_stream_resets);
  });
  if (listener.tls) {
    http2.enabled = alpn_h2;
  }
}

}  // namespace

std::vector<ListenerConfig> parse_listeners(ObjectReader& root) {
  const auto read_address = [](ObjectReader& reader, ListenerConfig& listener) {
    listener.address = read_ip_literal(reader, "address").value_or(listener.address);
    listener.port = reader.integer<std::uint16_t>("port", 0, 65535).value_or(listener.port);
  };
  if (root.has("listen") && root.has("listeners")) {
    root.report("listeners", "give either listen (v1) or listeners, not both");
    root.take("listen");
  }
  if (!root.has("listeners")) {
    ListenerConfig listener;
    root.nested("listen", [&](ObjectReader& reader) { read_address(reader, listener); });
    return {listener};
  }
  std::vector<ListenerConfig> listeners;
  const auto* list = root.array("listeners");
  if (list == nullptr) {
    return {ListenerConfig{}};
  }
  if (list->empty()) {
    root.report("listeners", "must name at least one listener");
  }
  std::set<std::string, std::less<>> names;
  for_each_object(root, "listeners", *list, [&](ObjectReader& reader, const std::string&) {
    ListenerConfig listener;
    if (auto name = reader.string("name", Presence::kRequired)) {
      if (name->empty() || !std::all_of(name->begin(), name->end(), [](char c) {
            return is_alpha(c) || is_digit(c) || c == '-' || c == '_';
          })) {
        reader.report("name", "must be letters, digits, - and _ (it is a metric label)");
      } else if (!names.insert(*name).second) {
        reader.report("name", "is used by another listener");
      }
      listener.name = std::move(*name);
    }
    read_address(reader, listener);
    reader.nested("tls", [&](ObjectReader& tls) { listener.tls = parse_listener_tls(tls); });
    listener.redirect_to_https = reader.boolean("redirect_to_https").value_or(false);
    if (listener.redirect_to_https && reader.has("tls")) {
      reader.report("redirect_to_https", "is for a plain listener (this one has tls)");
    }
    listener.proxy_protocol = reader.boolean("proxy_protocol").value_or(false);
    parse_http2(reader, listener);
    listeners.push_back(std::move(listener));
  });
  const bool any_tls = std::any_of(listeners.begin(), listeners.end(),
                                   [](const ListenerConfig& l) { return l.tls.has_value(); });
  for (std::size_t i = 0; i < listeners.size(); ++i) {
    if (listeners[i].redirect_to_https && !any_tls) {
      root.problems().add(element_path(root.path_of("listeners"), i) + ".redirect_to_https",
                          "needs a listener with tls to redirect to");
    }
  }
  return listeners.empty() ? std::vector<ListenerConfig>{ListenerConfig{}} : listeners;
}

}  // namespace sluice::config::detail
