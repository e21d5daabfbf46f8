# SPDX-License-Identifier: Apache-2.0
"""The Debian package (deploy/package, docs/packaging.md), built by cpack from the build tree
into a temporary directory and unpacked into a throwaway root, never installed:

- it holds the binary, the config, the systemd unit and the logrotate file where the unit and
  the docs say, and its conffiles are exactly its files under /etc;
- Depends names a package for every shared library the binary links, and nothing else;
- the unit passes `systemd-analyze verify` (skipped, saying so, without systemd-analyze), runs
  the installed binary on the installed config, and gives the drain time to finish;
- the installed binary accepts the installed config, and its access log is the file logrotate
  rotates (`logrotate -d`, skipped without logrotate);
- the maintainer scripts are valid sh and touch systemd only when it runs.

Run by ctest (tests/CMakeLists.txt) with SLUICE_BINARY and SLUICE_CPACK_CONFIG (the build
tree's CPackConfig.cmake) set; needs cpack, dpkg-deb and dpkg-shlibdeps (dpkg-dev).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from test_deploy_artifacts import ROOT, SLUICE, linked_packages, run

CPACK_CONFIG = os.environ.get("SLUICE_CPACK_CONFIG", str(ROOT / "build" / "CPackConfig.cmake"))
FILES = {
    "binary": "usr/bin/sluice",
    "config": "etc/sluice/sluice.json",
    "unit": "usr/lib/systemd/system/sluice.service",
    "logrotate": "etc/logrotate.d/sluice",
}


def unit_settings(text):
    """{key: [values...]} of a unit file (comments and sections ignored)."""
    settings = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="sluice-package-"))
        run(["cpack", "--config", CPACK_CONFIG, "-B", str(cls.work / "out")])
        debs = list((cls.work / "out").glob("*.deb"))
        assert len(debs) == 1, debs
        cls.deb = debs[0]
        cls.root = cls.work / "root"
        run(["dpkg-deb", "-x", str(cls.deb), str(cls.root)])
        run(["dpkg-deb", "-e", str(cls.deb), str(cls.work / "control")])
        cls.unit = unit_settings((cls.root / FILES["unit"]).read_text(encoding="utf-8"))
        cls.config = json.loads((cls.root / FILES["config"]).read_text(encoding="utf-8"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def field(self, name):
        return run(["dpkg-deb", "-f", str(self.deb), name]).stdout.strip()

    def test_the_file_name_carries_the_binary_s_version_and_the_architecture(self):
        version = run([SLUICE, "--version"]).stdout.split()[1]
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        self.assertEqual(self.deb.name, f"sluice_{version}_{arch}.deb")
        self.assertEqual(self.field("Package"), "sluice")
        self.assertEqual(self.field("Version"), version)

    def test_the_files_are_where_the_unit_and_the_docs_say(self):
        for name, path in FILES.items():
            with self.subTest(name):
                self.assertTrue((self.root / path).is_file(), path)
        self.assertTrue(os.access(self.root / FILES["binary"], os.X_OK))
        listed = {l.split()[-1].lstrip(".") for l in
                  run(["dpkg-deb", "-c", str(self.deb)]).stdout.splitlines() if l[0] == "-"}
        self.assertEqual(listed, {"/" + p for p in FILES.values()})

    def test_the_conffiles_are_the_files_under_etc(self):
        conffiles = (self.work / "control" / "conffiles").read_text().split()
        self.assertEqual(set(conffiles), {"/" + p for p in FILES.values() if p.startswith("etc/")})

    def test_depends_names_a_package_for_every_linked_library_and_nothing_else(self):
        depends = {d.split()[0] for d in self.field("Depends").split(", ")}
        provided = {}
        for package in linked_packages(self.root / FILES["binary"]):
            names = run(["dpkg-query", "-W", "-f", "${Provides}", package]).stdout
            provided[package] = {package} | {p.split()[0] for p in names.split(", ") if p}
        for package, names in provided.items():
            with self.subTest(package):
                self.assertTrue(names & depends, f"{package} (or what it provides) not in {depends}")
        self.assertEqual(depends - set().union(*provided.values()), set())

    def test_the_unit_runs_the_installed_binary_on_the_installed_config(self):
        command = f"/{FILES['binary']} --config /{FILES['config']}"
        self.assertEqual(self.unit["Type"], ["notify"])
        self.assertEqual(self.unit["ExecStartPre"], [command + " --check"])
        self.assertEqual(self.unit["ExecStart"], [command])
        self.assertEqual(self.unit["ExecReload"], ["/bin/kill -HUP $MAINPID"])
        self.assertEqual(self.unit["KillSignal"], ["SIGTERM"])

    def test_the_stop_timeout_leaves_room_for_the_drain(self):
        stop_seconds = int(self.unit["TimeoutStopSec"][0])
        self.assertGreater(stop_seconds, self.config["drain_timeout_ms"] / 1000 + 5)

    def test_the_unit_is_sandboxed(self):
        for key, value in {"DynamicUser": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
                           "NoNewPrivileges": "yes", "PrivateTmp": "yes", "PrivateDevices": "yes",
                           "CapabilityBoundingSet": "CAP_NET_BIND_SERVICE",
                           "AmbientCapabilities": "CAP_NET_BIND_SERVICE",
                           "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
                           "Restart": "on-failure"}.items():
            with self.subTest(key):
                self.assertEqual(self.unit[key], [value])
        self.assertIn("@system-service", self.unit["SystemCallFilter"])

    def test_systemd_analyze_verifies_the_unit(self):
        analyze = shutil.which("systemd-analyze")
        if analyze is None:
            self.skipTest("systemd-analyze is not installed (Debian package systemd)")
        # verify checks that the commands exist: point them at the unpacked root. Everything
        # else is the packaged file as it is. It exits 0 on warnings, so any output fails.
        text = (self.root / FILES["unit"]).read_text(encoding="utf-8")
        for path in (FILES["binary"], FILES["config"]):
            text = text.replace("/" + path, str(self.root / path))
        unit = self.work / "verify" / "sluice.service"
        unit.parent.mkdir()
        unit.write_text(text, encoding="utf-8")
        result = run([analyze, "verify", str(unit)], check=False)
        self.assertEqual((result.returncode, result.stdout + result.stderr), (0, ""))

    def test_the_installed_binary_accepts_the_installed_config(self):
        result = run([str(self.root / FILES["binary"]), "--config",
                      str(self.root / FILES["config"]), "--check"], check=False)
        self.assertEqual((result.returncode, result.stdout), (0, "config ok\n"), result.stderr)

    def test_the_access_log_is_in_the_logs_directory_logrotate_rotates(self):
        self.assertEqual(self.unit["LogsDirectory"], ["sluice"])
        log = Path(self.config["access_log"]["path"])
        self.assertEqual(log.parent, Path("/var/log/sluice"))
        text = (self.root / FILES["logrotate"]).read_text(encoding="utf-8")
        self.assertIn("/var/log/sluice/*.log {", text)
        self.assertTrue(log.match("/var/log/sluice/*.log"))
        self.assertRegex(text, r"systemctl kill .*--signal=USR1 sluice\.service")

    def test_logrotate_accepts_the_file(self):
        logrotate = shutil.which("logrotate") or shutil.which("logrotate", path="/usr/sbin")
        if logrotate is None:
            self.skipTest("logrotate is not installed (Debian package logrotate)")
        state = self.work / "logrotate.state"
        result = run([logrotate, "-d", "-s", str(state), str(self.root / FILES["logrotate"])],
                     check=False)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNotIn("error", result.stderr.lower())

    def test_the_maintainer_scripts_are_sh_and_guard_every_systemctl(self):
        for name in ("postinst", "prerm", "postrm"):
            with self.subTest(name):
                script = self.work / "control" / name
                self.assertTrue(os.access(script, os.X_OK))
                run(["sh", "-n", str(script)])
                text = script.read_text(encoding="utf-8")
                # Each systemctl call sits below the check that systemd is running.
                for match in re.finditer(r"^\s*systemctl .*$", text, re.MULTILINE):
                    guard = text.rfind("[ -d /run/systemd/system ]", 0, match.start())
                    self.assertNotEqual(guard, -1, match.group(0))


if __name__ == "__main__":
    unittest.main(verbosity=2)
