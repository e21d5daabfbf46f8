// SPDX-License-Identifier: Apache-2.0
#include "gateway/fleet/fleet_document.hpp"

#include <string>
#include <utility>

#include "gateway/config/json_members.hpp"

namespace sluice::fleet {
namespace {

void collect(const Document& base, const Document& next, std::vector<std::string>& path,
             std::vector<Edit>& edits) {
  // Indexed: an overrides object may hold thousands of keys (config/json_members.hpp).
  const config::MemberIndex base_members(base);
  const config::MemberIndex next_members(next);
  for (auto it = base.begin(); it != base.end(); ++it) {
    if (!next_members.contains(it.key())) {
      path.push_back(it.key());
      edits.push_back(Edit{path, std::nullopt});
      path.pop_back();
    }
  }
  for (auto it = next.begin(); it != next.end(); ++it) {
    path.push_back(it.key());
    const Document* old = base_members.find(it.key());
    if (old == nullptr && it->is_object() && !it->empty()) {
      // A new object: its members one by one, so what another replica put beside them on
      // the newer version stays (two replicas adding overrides to a policy that had none).
      collect(Document::object(), *it, path, edits);
    } else if (old == nullptr) {
      edits.push_back(Edit{path, *it});
    } else if (old->is_object() && it->is_object()) {
      if (*old != *it) {  // most members of a large overrides object are unchanged
        collect(*old, *it, path, edits);
      }
    } else if (*old != *it) {
      edits.push_back(Edit{path, *it});
    }
    path.pop_back();
  }
}

}  // namespace

Document shared_part(const Document& document) {
  Document shared = Document::object();
  for (const auto section : kSharedSections) {
    if (const auto it = document.find(section); it != document.end()) {
      shared[std::string(section)] = *it;
    }
  }
  return shared;
}

std::string dump_shared_part(const Document& document) {
  std::string text = "{";
  for (const auto section : kSharedSections) {
    if (const auto it = document.find(section); it != document.end()) {
      if (text.size() > 1) {
        text += ',';
      }
      text += Document(section).dump();
      text += ':';
      text += it->dump();
    }
  }
  text += '}';
  return text;
}

bool has_shared_part(const Document& document, const Document& shared) {
  if (!document.is_object() || !shared.is_object()) {
    return false;
  }
  std::size_t present = 0;
  for (const auto section : kSharedSections) {
    const auto mine = document.find(section);
    const auto theirs = shared.find(section);
    if ((mine == document.end()) != (theirs == shared.end())) {
      return false;
    }
    if (mine != document.end()) {
      ++present;
      if (*mine != *theirs) {
        return false;
      }
    }
  }
  return present == shared.size();  // and nothing beside the shared sections
}

Document with_shared(Document local, const Document& shared) {
  for (const auto section : kSharedSections) {
    const std::string key(section);
    if (const auto it = shared.find(key); it != shared.end()) {
      local[key] = *it;  // in place: the file keeps the operator's order
    } else {
      local.erase(key);
    }
  }
  return local;
}

std::vector<Edit> edits_between(const Document& base, const Document& next) {
  std::vector<Edit> edits;
  std::vector<std::string> path;
  if (base.is_object() && next.is_object()) {
    collect(base, next, path, edits);
  }
  return edits;
}

std::vector<Edit> shared_edits_between(const Document& base, const Document& next) {
  std::vector<Edit> edits;
  if (!base.is_object() || !next.is_object()) {
    return edits;
  }
  const auto empty = Document::object();
  std::vector<std::string> path;
  for (const auto section : kSharedSections) {
    const auto was = base.find(section);
    const auto now = next.find(section);
    if (was == base.end() && now == next.end()) {
      continue;
    }
    // The section as a one-member object on each side: collect() treats it as it treats a
    // member of shared_part(), added, removed or compared.
    Document before = Document::object();
    Document after = Document::object();
    const std::string key(section);
    const Document& base_section = was == base.end() ? empty : *was;
    const Document& next_section = now == next.end() ? empty : *now;
    if (was != base.end() && now != next.end()) {
      if (base_section == next_section) {
        continue;
      }
      if (base_section.is_object() && next_section.is_object()) {
        path.push_back(key);
        collect(base_section, next_section, path, edits);
        path.pop_back();
        continue;
      }
    }
    if (was != base.end()) {
      before[key] = base_section;
    }
    if (now != next.end()) {
      after[key] = next_section;
    }
    collect(before, after, path, edits);
  }
  return edits;
}

Document apply_edits(Document target, const std::vector<Edit>& edits) {
  for (const Edit& edit : edits) {
    if (edit.path.empty()) {
      continue;
    }
    Document* at = &target;
    bool reached = true;
    for (std::size_t i = 0; i + 1 < edit.path.size() && reached; ++i) {
      if (!edit.value) {
        // A removal follows what is there: a path already gone is nothing to remove.
        const auto next = at->is_object() ? at->find(edit.path[i]) : at->end();
        reached = at->is_object() && next != at->end();
        at = reached ? &*next : at;
        continue;
      }
      if (!at->is_object()) {
        *at = Document::object();
      }
      at = &(*at)[edit.path[i]];
    }
    if (!edit.value) {
      if (reached && at->is_object()) {
        at->erase(edit.path.back());
      }
      continue;
    }
    if (!at->is_object()) {
      *at = Document::object();
    }
    (*at)[edit.path.back()] = *edit.value;
  }
  return target;
}

}  // namespace sluice::fleet
