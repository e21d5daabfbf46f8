// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/tls_listeners.hpp"

#include <algorithm>

#include "gateway/core/utc_time.hpp"

namespace sluice::app {
namespace {

std::string tls_path(std::size_t index) {
  return "listeners[" + std::to_string(index) + "].tls";
}

}  // namespace

TlsListeners::TlsListeners(const std::vector<config::ListenerConfig>& listeners,
                           metrics::Metrics& metrics, const core::Clock& clock,
                           std::shared_ptr<spdlog::logger> log)
    : listeners_(listeners),
      metrics_(metrics),
      clock_(clock),
      log_(std::move(log)),
      keys_since_(clock.now()),
      slots_(listeners.size()) {}

bool TlsListeners::any() const noexcept {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const auto& slot) { return slot != nullptr; });
}

std::optional<std::string> TlsListeners::load_all(
    std::vector<std::shared_ptr<const tls::ServerTls>>& out) const {
  out.assign(listeners_.size(), nullptr);
  for (std::size_t i = 0; i < listeners_.size(); ++i) {
    if (!listeners_[i].tls) {
      continue;
    }
    std::string error;
    out[i] = tls::ServerTls::load(*listeners_[i].tls, tls_path(i), keys_, error);
    if (!out[i]) {
      return error;
    }
  }
  return std::nullopt;
}

std::optional<std::string> TlsListeners::load() {
  std::vector<std::shared_ptr<const tls::ServerTls>> loaded;
  if (auto error = load_all(loaded)) {
    return error;
  }
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (loaded[i]) {
      warn_ocsp(*loaded[i], i);
      slots_[i] = std::make_shared<tls::CertificateSlot>(std::move(loaded[i]));
    }
  }
  export_expiry();
  return std::nullopt;
}

std::optional<std::string> TlsListeners::reload() {
  std::vector<std::shared_ptr<const tls::ServerTls>> loaded;
  if (auto error = load_all(loaded)) {
    log_->error("tls reload failed (the certificates served before stay) problem={}", *error);
    return error;
  }
  std::size_t certificates = 0;
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (loaded[i]) {
      certificates += loaded[i]->certificates().size();
      warn_ocsp(*loaded[i], i);
      slots_[i]->store(std::move(loaded[i]));  // new connections only; open ones keep theirs
    }
  }
  export_expiry();
  watch_ocsp();
  log_->info("tls reload ok certificates={}", certificates);
  return std::nullopt;
}

void TlsListeners::start_ocsp(boost::asio::any_io_executor executor) {
  ocsp_ =
      std::make_unique<tls::OcspFetcher>(std::move(executor), log_, [this] { export_expiry(); });
  watch_ocsp();
}

void TlsListeners::watch_ocsp() {
  if (!ocsp_) {
    return;
  }
  std::vector<std::shared_ptr<const tls::ServerTls>> served(slots_.size());
  std::vector<std::string> names(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    served[i] = slots_[i] ? slots_[i]->load() : nullptr;
    names[i] = listeners_[i].name;
  }
  ocsp_->watch(served, names);
}

void TlsListeners::tick() {
  if (any() && clock_.now() - keys_since_ >= tls::TicketKeys::kRotationPeriod) {
    keys_->rotate();
    keys_since_ = clock_.now();
    log_->info("tls session ticket keys rotated");
  }
  if (ocsp_) {
    ocsp_->tick(std::chrono::system_clock::now());
  }
}

void TlsListeners::warn_ocsp(const tls::ServerTls& served, std::size_t listener) const {
  for (std::size_t c = 0; c < served.certificates().size(); ++c) {
    if (!served.certificates()[c].ocsp_problem.empty()) {
      log_->warn("tls ocsp file staples nothing listener={} certificate={} problem={}",
                 listeners_[listener].name, c, served.certificates()[c].ocsp_problem);
    }
  }
}

void TlsListeners::export_expiry() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i]) {
      continue;
    }
    const auto served = slots_[i]->load();
    for (std::size_t c = 0; c < served->certificates().size(); ++c) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
          served->certificates()[c].not_after.time_since_epoch());
      metrics_.tls_certificate_expiry(listeners_[i].name, c)
          .Set(static_cast<double>(seconds.count()));
      if (const auto& ocsp = served->certificates()[c].ocsp) {
        const auto staple = ocsp->load();
        const auto stale_at = staple ? std::chrono::duration_cast<std::chrono::seconds>(
                                           staple->next_update.time_since_epoch())
                                     : std::chrono::seconds(0);
        metrics_.tls_ocsp_staple_expiry(listeners_[i].name, c)
            .Set(static_cast<double>(stale_at.count()));
      }
    }
  }
}

nlohmann::json TlsListeners::describe() const {
  std::vector<std::shared_ptr<const tls::ServerTls>> served(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i]) {
      served[i] = slots_[i]->load();
    }
  }
  return describe(served);
}

std::optional<std::string> TlsListeners::preview(nlohmann::json& would_serve) const {
  std::vector<std::shared_ptr<const tls::ServerTls>> loaded;
  if (auto error = load_all(loaded)) {
    return error;
  }
  would_serve = describe(loaded);
  return std::nullopt;
}

nlohmann::json TlsListeners::describe(
    const std::vector<std::shared_ptr<const tls::ServerTls>>& served) const {
  nlohmann::json listeners = nlohmann::json::array();
  for (std::size_t i = 0; i < served.size(); ++i) {
    if (!served[i]) {
      continue;
    }
    nlohmann::json certificates = nlohmann::json::array();
    for (std::size_t c = 0; c < served[i]->certificates().size(); ++c) {
      const tls::ServedCertificate& cert = served[i]->certificates()[c];
      nlohmann::json entry = {{"index", c},
                              {"cert", listeners_[i].tls->certificates[c].cert},
                              {"subject", cert.subject},
                              {"key_type", cert.key_type},
                              {"names", cert.names},
                              {"not_after", core::utc_iso8601(cert.not_after)}};
      if (cert.ocsp) {
        const auto staple = cert.ocsp->load();
        entry["ocsp"] =
            staple ? nlohmann::json{{"next_update", core::utc_iso8601(staple->next_update)}}
                   : nlohmann::json{{"stapled", false}};
      }
      certificates.push_back(std::move(entry));
    }
    listeners.push_back({{"name", listeners_[i].name}, {"certificates", std::move(certificates)}});
  }
  return {{"listeners", std::move(listeners)}};
}

}  // namespace sluice::app
