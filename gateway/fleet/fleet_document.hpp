// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// What a fleet shares of a config document, and how one replica's change is carried onto a
// fleet version that moved on meanwhile (docs/fleet.md, "What the fleet shares" and "Writes").
// Pure JSON: no I/O, no state.
namespace sluice::fleet {

using Document = nlohmann::ordered_json;

/// The top-level members the fleet shares; everything else (listeners, threads, admin, store,
/// fleet, access_log, http, TLS files) stays each replica's own.
inline constexpr std::array<std::string_view, 7> kSharedSections = {
    "limits", "overrides", "tiers", "identity", "auth", "routes", "backends"};

/// The shared members of `document` (an object; absent members stay absent).
[[nodiscard]] Document shared_part(const Document& document);
/// shared_part(document).dump(), without copying the sections first.
[[nodiscard]] std::string dump_shared_part(const Document& document);
/// Whether `document`'s shared part equals `shared` (a shared part), without copying either.
[[nodiscard]] bool has_shared_part(const Document& document, const Document& shared);
/// `local` with its shared members replaced by those of `shared` (a member `shared` lacks is
/// removed: the replica then uses the default, as every other replica does).
[[nodiscard]] Document with_shared(Document local, const Document& shared);

/// One edit: the member at `path` (object keys from the root) set to `value`, or removed when
/// `value` is empty. Arrays and scalars are replaced whole.
struct Edit {
  std::vector<std::string> path;
  std::optional<Document> value;

  bool operator==(const Edit&) const = default;
};

/// The edits that turn `base` into `next`, member by member down through objects.
[[nodiscard]] std::vector<Edit> edits_between(const Document& base, const Document& next);
/// edits_between(shared_part(base), shared_part(next)) without copying either document's
/// shared sections: the same edits, grouped by section in kSharedSections order.
[[nodiscard]] std::vector<Edit> shared_edits_between(const Document& base, const Document& next);
/// `target` with `edits` applied in order (objects on the way are created as needed; a
/// non-object on the way is replaced by one).
[[nodiscard]] Document apply_edits(Document target, const std::vector<Edit>& edits);

}  // namespace sluice::fleet
