#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The rooms of gateway/proxy/ and the one direction of their arrows (docs/architecture.md,
"The rooms of the proxy").

Each room is a folder under gateway/proxy/. A file may include files of its own room and of
the rooms below it in ROOMS, never of a room above: the arrows run one way. Files straight under
gateway/proxy/ (there should be none) and rooms not listed here fail the check, so a new room is
placed in the order on purpose. Also checked: gateway/ modules outside proxy/ never include the
proxy's rooms except app/ and replay/, the composition roots that run it.

    check_rooms.py [REPO_ROOT]     exits 1 and names every offending include
"""
import pathlib
import re
import sys
import unittest

# Bottom to top: a room may use the rooms before it.
ROOMS = ["io", "routing", "upstream", "request", "steps", "exchange", "session"]
# Modules of gateway/ that may include the proxy (they compose or drive it).
PROXY_USERS = {"app", "replay"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"gateway/proxy/([^"]+)"', re.M)


def room_of(relative):
    """The room of a path relative to gateway/proxy/, or None when it is in no room."""
    parts = pathlib.PurePosixPath(relative).parts
    return parts[0] if len(parts) > 1 else None


def problems(root):
    proxy = root / "gateway" / "proxy"
    found = []
    for path in sorted(proxy.rglob("*")):
        if path.suffix not in (".hpp", ".cpp"):
            continue
        rel = path.relative_to(proxy).as_posix()
        room = room_of(rel)
        if room not in ROOMS:
            found.append(f"gateway/proxy/{rel}: not in a room of {ROOMS}")
            continue
        for target in INCLUDE.findall(path.read_text()):
            other = room_of(target)
            if other not in ROOMS:
                found.append(f"gateway/proxy/{rel}: includes gateway/proxy/{target}, in no room")
            elif ROOMS.index(other) > ROOMS.index(room):
                found.append(f"gateway/proxy/{rel} ({room}) includes gateway/proxy/{target}"
                             f" ({other}): an arrow up")
    for path in sorted((root / "gateway").rglob("*")):
        if path.suffix not in (".hpp", ".cpp") or proxy in path.parents:
            continue
        module = path.relative_to(root / "gateway").parts[0]
        if module in PROXY_USERS or module.endswith(".cpp"):
            continue
        for target in INCLUDE.findall(path.read_text()):
            found.append(f"{path.relative_to(root).as_posix()} ({module}) includes "
                         f"gateway/proxy/{target}: only {sorted(PROXY_USERS)} use the proxy")
    return found


class RoomsTest(unittest.TestCase):
    def test_arrows_run_one_way(self):
        root = pathlib.Path(__file__).resolve().parents[2]
        self.assertEqual(problems(root), [])

    def test_an_arrow_up_is_found(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            (root / "gateway/proxy/io").mkdir(parents=True)
            (root / "gateway/proxy/session").mkdir(parents=True)
            (root / "gateway/proxy/io/net.hpp").write_text(
                '#include "gateway/proxy/session/worker.hpp"\n')
            (root / "gateway/proxy/session/worker.hpp").write_text(
                '#include "gateway/proxy/io/net.hpp"\n')
            (root / "gateway/proxy/loose.hpp").write_text("")
            found = problems(root)
            self.assertEqual(len(found), 2, found)
            self.assertIn("an arrow up", found[0] + found[1])
            self.assertIn("not in a room", found[0] + found[1])


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        issues = problems(pathlib.Path(sys.argv[1]))
        print("\n".join(issues) or "rooms: every arrow runs one way")
        sys.exit(1 if issues else 0)
    unittest.main()
