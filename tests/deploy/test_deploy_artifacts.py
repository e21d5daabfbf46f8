# SPDX-License-Identifier: Apache-2.0
"""Every shipped deployment artefact is checked here, so none of it rots (issue 7):

- deploy/prometheus: `promtool check config`, `promtool check rules`, `promtool test rules`;
- every YAML and JSON file under deploy/ parses;
- the Kubernetes manifests, the Compose stack and the Dockerfile use the ports, paths, env var
  names and host names the config and the binary really use, and their configs pass
  `sluice --check`;
- the Grafana dashboard shows every metric of docs/behaviour.md "Metrics";
- a running sluice (with two demo backends and some traffic) exports every metric the rules and
  the dashboard use, answers the probe paths, passes the Dockerfile's HEALTHCHECK command, and a
  real Prometheus on loopback scrapes it: its query API returns the series, every dashboard
  query is valid PromQL with data, and every alerting rule evaluates without error.

Run by ctest (tests/CMakeLists.txt) with SLUICE_BINARY and SLUICE_DEMO_BACKEND set; needs
promtool and prometheus (Debian package `prometheus`), PyYAML (`python3-yaml`) and dpkg.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from child import Child  # noqa: E402 (tests/support, after the path is set)

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS_DIR = DEPLOY / "prometheus"
ALERTS = PROMETHEUS_DIR / "sluice-alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "sluice-dashboard.json"
K8S = DEPLOY / "kubernetes"
COMPOSE = DEPLOY / "compose"
SLUICE = os.environ.get("SLUICE_BINARY", str(ROOT / "build" / "bin" / "sluice"))
DEMO_BACKEND = os.environ.get("SLUICE_DEMO_BACKEND", str(ROOT / "build" / "bin" / "sluice-demo-backend"))

# docs/behaviour.md "Metrics", the metric contract (names without the _bucket/_sum/_count series suffixes).
CONTRACT_METRICS = [
    "sluice_requests_total",
    "sluice_request_duration_seconds",
    "sluice_upstream_requests_total",
    "sluice_upstream_duration_seconds",
    "sluice_ratelimit_requests_total",
    "sluice_ratelimit_tracked_keys",
    "sluice_breaker_drops_total",
    "sluice_breaker_drop_probability",
    "sluice_breaker_window_requests",
    "sluice_breaker_window_accepts",
    "sluice_downstream_connections",
    "sluice_tunnels_active",
    "sluice_upstream_connections",
    "sluice_store_operations_total",
    "sluice_store_fallback_active",
    "sluice_config_reloads_total",
    "sluice_admin_changes_total",
    "sluice_build_info",
    "sluice_auth_total",
    "sluice_jwks_refreshes_total",
    "sluice_tls_handshakes_total",
    "sluice_tls_certificate_expiry_timestamp_seconds",
    "sluice_endpoint_healthy",
    "sluice_endpoint_ejections_total",
    "sluice_retries_total",
    "sluice_fleet_connected",
    "sluice_fleet_config_version",
    "sluice_fleet_replicas",
    "sluice_fleet_sync_seconds",
    "sluice_fleet_applies_total",
]
LIVE_API_KEY = "deploy-test-api-key-0123456789"
EXPECTED_ALERTS = {
    "SluiceDown", "SluiceUserHeavilyLimited", "SluiceBreakerDropping", "SluiceUpstreamErrorRatio",
    "SluiceHighLatencyP99", "SluiceConfigReloadFailed", "SluiceStoreFallbackActive",
    "SluiceCertificateExpiresSoon", "SluiceBackendEndpointsUnhealthy", "SluiceRetryBudgetExhausted",
    "SluiceOcspStapleStale", "SluiceFleetDisconnected", "SluiceJwksRefreshFailing",
}
TIMEOUT = 20.0


def run(args, cwd=None, env=None, check=True):
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def linked_packages(binary):
    """The Debian packages (without ":arch") that hold the shared libraries `binary` links (ldd,
    dpkg -S)."""
    needed = set()
    for path in re.findall(r"=> (/\S+)", run(["ldd", str(binary)]).stdout):
        owner = run(["dpkg", "-S", os.path.realpath(path)], check=False)
        if owner.returncode != 0:
            owner = run(["dpkg", "-S", path])
        needed.add(owner.stdout.split(":")[0])
    return needed


def load_yaml_documents(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def alert_rules():
    return [r for g in load_yaml_documents(ALERTS)[0]["groups"] for r in g["rules"]]


def dashboard_exprs():
    with open(DASHBOARD, encoding="utf-8") as f:
        dashboard = json.load(f)
    exprs = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            exprs.append(target["expr"])
    return dashboard, exprs


def metric_names(expr):
    """The metric names an expression reads (sluice_* and up), histogram suffixes removed."""
    names = set(re.findall(r"\b(sluice_[a-z_]+|up)\b(?=\s*[{\[(]|\s*$|\s*[)=!<>*/+-])", expr))
    families = set()
    for name in names:
        families.add(re.sub(r"_(bucket|sum|count)$", "", name))
    return families


def check_config(config, env_extra=None):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(json.dumps(config) if isinstance(config, dict) else config)
        path = f.name
    try:
        env = dict(os.environ, **(env_extra or {}))
        result = run([SLUICE, "--config", path, "--check"], env=env, check=False)
        return result.returncode, result.stdout + result.stderr
    finally:
        os.unlink(path)


def make_certificates(directory):
    """`./deploy/dev.sh certs DIR`: a local CA (ca.crt) and a localhost certificate (tls.crt,
    tls.key), as a newcomer makes them for the Compose stack."""
    run([str(DEPLOY / "dev.sh"), "certs", str(directory)])
    return Path(directory)


def with_certificates_at(config, mount_dir, files):
    """`config` with every TLS certificate and key path under `mount_dir` (where a Secret is
    mounted) replaced by the file of the same role in `files`: {"cert": PATH, "key": PATH}.
    Returns the new config and the paths it replaced."""
    config = json.loads(json.dumps(config))
    replaced = []
    for listener in config.get("listeners", []):
        for cert in listener.get("tls", {}).get("certificates", []):
            for role in ("cert", "key"):
                replaced.append(cert[role])
                if cert[role].startswith(mount_dir + "/"):
                    cert[role] = str(files[role])
    return config, replaced


def staple_for(certs):
    """A chain file (the certificate, then the CA) and a DER OCSP response about the
    certificate of `make_certificates(certs)`, signed offline by its CA with `openssl ocsp`,
    good for an hour: what `"ocsp": FILE` staples (docs/tls.md, OCSP stapling)."""
    chain = certs / "chain.crt"
    chain.write_text((certs / "tls.crt").read_text() + (certs / "ca.crt").read_text())
    facts = run(["openssl", "x509", "-in", str(certs / "tls.crt"), "-noout", "-serial",
                 "-enddate"]).stdout
    serial = re.search(r"serial=(\S+)", facts).group(1)
    not_after = re.search(r"notAfter=(.+)", facts).group(1).strip()
    expires = time.strftime("%y%m%d%H%M%SZ", time.strptime(not_after, "%b %d %H:%M:%S %Y GMT"))
    (certs / "index.txt").write_text(f"V\t{expires}\t\t{serial}\tunknown\t/CN=localhost\n")
    run(["openssl", "ocsp", "-issuer", str(certs / "ca.crt"), "-cert", str(certs / "tls.crt"),
         "-no_nonce", "-reqout", str(certs / "ocsp.req")])
    run(["openssl", "ocsp", "-index", str(certs / "index.txt"), "-rsigner", str(certs / "ca.crt"),
         "-rkey", str(certs / "ca.key"), "-CA", str(certs / "ca.crt"), "-reqin",
         str(certs / "ocsp.req"), "-respout", str(certs / "ocsp.der"), "-nmin", "60"])
    return chain, certs / "ocsp.der"


def listener(config, name):
    return next(l for l in config["listeners"] if l["name"] == name)


def conf_default():
    with open(ROOT / "conf" / "sluice.json", encoding="utf-8") as f:
        return json.load(f)


class PrometheusFilesTest(unittest.TestCase):
    def test_promtool_checks_the_scrape_config(self):
        run(["promtool", "check", "config", "prometheus.yml"], cwd=PROMETHEUS_DIR)

    def test_promtool_checks_the_rules(self):
        out = run(["promtool", "check", "rules", ALERTS.name], cwd=PROMETHEUS_DIR).stdout
        self.assertIn(f"SUCCESS: {len(EXPECTED_ALERTS)} rules found", out)

    def test_promtool_unit_tests_fire_each_alert_and_keep_it_quiet(self):
        run(["promtool", "test", "rules", "tests/alerts_test.yml"], cwd=PROMETHEUS_DIR)
        # Every alert is exercised by the unit tests (firing at least once).
        tests = load_yaml_documents(PROMETHEUS_DIR / "tests" / "alerts_test.yml")[0]["tests"]
        fired = {t["alertname"] for case in tests for t in case.get("alert_rule_test", [])
                 if t.get("exp_alerts")}
        self.assertEqual(fired, EXPECTED_ALERTS)

    def test_every_alert_has_a_summary_a_runbook_and_a_section_in_the_operations_guide(self):
        operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
        rules = alert_rules()
        self.assertEqual({r["alert"] for r in rules}, EXPECTED_ALERTS)
        for rule in rules:
            with self.subTest(alert=rule["alert"]):
                self.assertTrue(rule["annotations"].get("summary"))
                self.assertTrue(rule["annotations"].get("runbook"))
                self.assertIn(rule["labels"]["severity"], {"page", "ticket"})
                self.assertRegex(operations, rf"(?m)^#+ .*`{rule['alert']}`")

    def test_the_breaker_alert_is_drop_probability_above_a_tenth_for_two_minutes(self):
        rule = next(r for r in alert_rules() if r["alert"] == "SluiceBreakerDropping")
        self.assertIn("sluice_breaker_drop_probability", rule["expr"])
        self.assertIn("> 0.1", rule["expr"])
        self.assertEqual(rule["for"], "2m")

    def test_the_endpoints_alert_pages_below_half_healthy_for_two_minutes(self):
        rule = next(r for r in alert_rules() if r["alert"] == "SluiceBackendEndpointsUnhealthy")
        self.assertIn("sluice_endpoint_healthy", rule["expr"])
        self.assertIn("< 0.5", rule["expr"])
        self.assertEqual(rule["for"], "2m")
        self.assertEqual(rule["labels"]["severity"], "page")


class ManifestsParseTest(unittest.TestCase):
    def test_every_yaml_and_json_file_under_deploy_parses(self):
        yaml_files = sorted(list(DEPLOY.rglob("*.yml")) + list(DEPLOY.rglob("*.yaml")))
        json_files = sorted(DEPLOY.rglob("*.json"))
        self.assertGreaterEqual(len(yaml_files), 8)
        self.assertGreaterEqual(len(json_files), 2)
        for path in yaml_files:
            with self.subTest(path=str(path.relative_to(ROOT))):
                self.assertTrue(load_yaml_documents(path))
        for path in json_files:
            with self.subTest(path=str(path.relative_to(ROOT))):
                with open(path, encoding="utf-8") as f:
                    json.load(f)


class DashboardTest(unittest.TestCase):
    def test_every_spec_metric_is_on_the_dashboard(self):
        _, exprs = dashboard_exprs()
        used = set().union(*(metric_names(e) for e in exprs))
        for metric in CONTRACT_METRICS:
            with self.subTest(metric=metric):
                self.assertIn(metric, used)

    def test_panels_have_unique_ids_titles_and_use_the_data_source_variable(self):
        dashboard, _ = dashboard_exprs()
        ids = [p["id"] for p in dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        for panel in dashboard["panels"]:
            if panel["type"] == "row":
                continue
            with self.subTest(panel=panel["title"]):
                self.assertEqual(panel["datasource"]["uid"], "${datasource}")
                self.assertTrue(panel.get("description"))
                self.assertTrue(panel["targets"])

    def test_the_issue_s_panels_are_there(self):
        dashboard, _ = dashboard_exprs()
        titles = " | ".join(p["title"].lower() for p in dashboard["panels"])
        for words in ["request rate by route and code", "p50 / p99", "limited and shadow-limited",
                      "drop probability", "window: requests and accepts", "upstream outcomes",
                      "connections", "store", "certificate expiry", "tls handshakes",
                      "healthy endpoints by backend", "endpoint health by endpoint",
                      "outlier ejections by endpoint", "retries by backend and result",
                      "retry share of upstream requests", "auth results by reason",
                      "jwks refreshes by result"]:
            self.assertIn(words, titles)


class KubernetesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = load_yaml_documents(K8S / "sluice.yaml") + load_yaml_documents(K8S / "redis.yaml")
        cls.by_kind = {}
        for d in cls.docs:
            cls.by_kind.setdefault(d["kind"], []).append(d)
        cls.deployment = next(d for d in cls.by_kind["Deployment"] if d["metadata"]["name"] == "sluice")
        cls.container = cls.deployment["spec"]["template"]["spec"]["containers"][0]
        configmap = next(d for d in cls.by_kind["ConfigMap"] if d["metadata"]["name"] == "sluice-config")
        cls.config = json.loads(configmap["data"]["sluice.json"])
        cls.configmap = configmap

    def port(self, name):
        return next(p["containerPort"] for p in self.container["ports"] if p["name"] == name)

    def test_kustomization_lists_every_manifest(self):
        kustomization = load_yaml_documents(K8S / "kustomization.yaml")[0]
        self.assertEqual(sorted(kustomization["resources"]),
                         sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml"))

    def tls_mount(self):
        volume = next(v for v in self.deployment["spec"]["template"]["spec"]["volumes"]
                      if v["name"] == "tls")
        mount = next(m for m in self.container["volumeMounts"] if m["name"] == "tls")
        return volume, mount

    def test_the_config_map_holds_a_valid_config(self):
        # The certificate comes from the Secret at run time: --check loads a real one in its place.
        _, mount = self.tls_mount()
        with tempfile.TemporaryDirectory() as tmp:
            certs = make_certificates(tmp)
            config, _ = with_certificates_at(self.config, mount["mountPath"],
                                             {"cert": certs / "tls.crt", "key": certs / "tls.key"})
            code, out = check_config(config, {self.config["admin"]["token_env"]: "t"})
        self.assertEqual(code, 0, out)
        self.assertIn("config ok", out)

    def test_the_https_listener_reads_its_certificate_from_the_tls_secret(self):
        volume, mount = self.tls_mount()
        self.assertEqual(volume["secret"]["secretName"], "sluice-tls")
        self.assertTrue(mount["readOnly"])
        https = listener(self.config, "https")
        cert = https["tls"]["certificates"][0]
        # A kubernetes.io/tls Secret holds tls.crt and tls.key.
        self.assertEqual(cert["cert"], f"{mount['mountPath']}/tls.crt")
        self.assertEqual(cert["key"], f"{mount['mountPath']}/tls.key")
        self.assertEqual(self.port("https"), https["port"])
        service = next(d for d in self.by_kind["Service"] if d["metadata"]["name"] == "sluice")
        ports = {p["name"]: p for p in service["spec"]["ports"]}
        self.assertEqual((ports["https"]["port"], ports["https"]["targetPort"]), (443, "https"))
        # The unprivileged user reads the key through the pod's fsGroup.
        pod = self.deployment["spec"]["template"]["spec"]
        self.assertEqual(pod["securityContext"]["fsGroup"], pod["securityContext"]["runAsGroup"])
        self.assertEqual(volume["secret"]["defaultMode"] & 0o040, 0o040)
        operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
        self.assertIn("kubectl create secret tls sluice-tls", operations)

    def test_ports_match_the_config(self):
        self.assertEqual(self.port("http"), listener(self.config, "http")["port"])
        self.assertEqual(self.port("admin"), self.config["admin"]["port"])
        self.assertEqual(listener(self.config, "http")["address"], "0.0.0.0")
        self.assertEqual(self.config["admin"]["address"], "0.0.0.0")  # kubelet and Prometheus
        service = next(d for d in self.by_kind["Service"] if d["metadata"]["name"] == "sluice")
        self.assertEqual(service["spec"]["ports"][0]["targetPort"], "http")
        annotations = self.deployment["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/scrape"], "true")
        self.assertEqual(int(annotations["prometheus.io/port"]), self.config["admin"]["port"])
        self.assertEqual(annotations["prometheus.io/path"], "/metrics")

    def test_probes_use_the_admin_listener_s_paths(self):
        self.assertEqual(self.container["readinessProbe"]["httpGet"],
                         {"path": "/readyz", "port": "admin"})
        self.assertEqual(self.container["livenessProbe"]["httpGet"],
                         {"path": "/healthz", "port": "admin"})

    def test_the_admin_token_comes_from_the_secret_under_the_configured_name(self):
        env = {e["name"]: e for e in self.container["env"]}
        token_env = self.config["admin"]["token_env"]
        self.assertIn(token_env, env)
        ref = env[token_env]["valueFrom"]["secretKeyRef"]
        secret = next(d for d in self.by_kind["Secret"] if d["metadata"]["name"] == ref["name"])
        self.assertIn(ref["key"], secret["stringData"])

    def test_the_config_file_is_where_the_args_say(self):
        args = self.container["args"]
        config_path = args[args.index("--config") + 1]
        mount = next(m for m in self.container["volumeMounts"] if m["name"] == "config")
        self.assertEqual(config_path, f"{mount['mountPath']}/sluice.json")
        self.assertIn("sluice.json", self.configmap["data"])

    def test_replicas_drain_resources_and_security(self):
        spec = self.deployment["spec"]
        self.assertGreaterEqual(spec["replicas"], 2)
        pod = spec["template"]["spec"]
        pre_stop = self.container["lifecycle"]["preStop"]["exec"]["command"]
        self.assertEqual(pre_stop[0], "sleep")
        drain_s = self.config["drain_timeout_ms"] / 1000
        self.assertGreater(pod["terminationGracePeriodSeconds"], int(pre_stop[1]) + drain_s)
        resources = self.container["resources"]
        self.assertTrue(resources["requests"]["cpu"] and resources["requests"]["memory"])
        self.assertTrue(resources["limits"]["cpu"] and resources["limits"]["memory"])
        self.assertLessEqual(self.config["threads"], float(resources["limits"]["cpu"]))
        self.assertGreaterEqual(self.config["threads"], 1)
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertNotEqual(pod["securityContext"]["runAsUser"], 0)
        self.assertFalse(self.container["securityContext"]["allowPrivilegeEscalation"])

    def test_budget_and_autoscaler_target_the_deployment(self):
        labels = self.deployment["spec"]["template"]["metadata"]["labels"]
        pdb = self.by_kind["PodDisruptionBudget"][0]
        for key, value in pdb["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels[key], value)
        self.assertLess(pdb["spec"]["minAvailable"], self.deployment["spec"]["replicas"])
        hpa = self.by_kind["HorizontalPodAutoscaler"][0]
        self.assertEqual(hpa["spec"]["scaleTargetRef"]["name"], "sluice")
        self.assertEqual(hpa["spec"]["scaleTargetRef"]["kind"], "Deployment")
        self.assertGreaterEqual(hpa["spec"]["minReplicas"], 2)

    def test_the_store_is_the_redis_service(self):
        self.assertEqual(self.config["store"]["type"], "redis")
        service = next(d for d in self.by_kind["Service"]
                       if d["metadata"]["name"] == self.config["store"]["host"])
        self.assertEqual(service["spec"]["ports"][0]["port"], self.config["store"]["port"])

    def test_the_replicas_are_one_fleet_that_follows_the_config_map(self):
        # docs/operations.md "Changing a fleet": an admin change reaches every pod; a ConfigMap
        # update is re-read without a signal (a directory mount: subPath never updates).
        self.assertTrue(self.config["fleet"]["enabled"])
        self.assertTrue(self.config["config_watch"])
        deployment = next(d for d in self.by_kind["Deployment"] if d["metadata"]["name"] == "sluice")
        mounts = deployment["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        config_mount = next(m for m in mounts if m["mountPath"] == "/etc/sluice")
        self.assertNotIn("subPath", config_mount)


class ComposeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.compose = load_yaml_documents(COMPOSE / "compose.yml")[0]
        with open(COMPOSE / "sluice.json", encoding="utf-8") as f:
            cls.config = json.load(f)
        cls.services = cls.compose["services"]

    def test_the_config_is_valid_with_the_certificates_dev_sh_makes(self):
        with tempfile.TemporaryDirectory() as tmp:
            certs = make_certificates(tmp)
            config, _ = with_certificates_at(self.config, "/run/secrets",
                                             {"cert": certs / "tls.crt", "key": certs / "tls.key"})
            code, out = check_config(config, {self.config["admin"]["token_env"]: "t"})
        self.assertEqual(code, 0, out)

    def test_two_replicas_form_one_fleet_on_the_compose_redis(self):
        self.assertTrue(self.config["fleet"]["enabled"])
        self.assertEqual(self.config["store"]["host"], "redis")
        second = self.services["sluice-2"]
        self.assertEqual(second["command"], self.services["sluice"]["command"])
        self.assertEqual(second["volumes"], self.services["sluice"]["volumes"])

    def test_the_https_listener_s_files_are_compose_secrets_from_the_certs_directory(self):
        cert = listener(self.config, "https")["tls"]["certificates"][0]
        sluice = self.services["sluice"]
        for role, file in (("cert", "tls.crt"), ("key", "tls.key")):
            with self.subTest(role=role):
                self.assertTrue(cert[role].startswith("/run/secrets/"))
                secret = cert[role][len("/run/secrets/"):]
                self.assertIn(secret, sluice["secrets"])
                self.assertEqual(self.compose["secrets"][secret]["file"], f"./tls/{file}")
        # ./deploy/dev.sh certs writes there by default, and git ignores it.
        dev_sh = (DEPLOY / "dev.sh").read_text(encoding="utf-8")
        self.assertIn("local dir=${1:-deploy/compose/tls}", dev_sh)
        self.assertIn("/deploy/compose/tls/", (ROOT / ".gitignore").read_text(encoding="utf-8"))

    def test_sluice_publishes_its_ports_and_mounts_its_config_where_the_command_says(self):
        sluice = self.services["sluice"]
        published = {int(p.split(":")[1]) for p in sluice["ports"]}
        self.assertEqual(published, {l["port"] for l in self.config["listeners"]} |
                         {self.config["admin"]["port"]})
        command = sluice["command"]
        target = command[command.index("--config") + 1]
        self.assertIn(f"./sluice.json:{target}:ro", sluice["volumes"])
        self.assertIn(self.config["admin"]["token_env"], sluice["environment"])

    def test_store_and_backends_are_services_of_the_stack(self):
        self.assertEqual(self.config["store"]["type"], "redis")
        self.assertIn(self.config["store"]["host"], self.services)
        for endpoint in self.config["backends"]["users"]["endpoints"]:
            host, port = endpoint.rsplit(":", 1)
            with self.subTest(endpoint=endpoint):
                self.assertIn(host, self.services)
                command = self.services[host]["command"]
                self.assertEqual(command[command.index("--port") + 1], port)
                self.assertEqual(self.services[host]["entrypoint"], ["/usr/local/bin/sluice-demo-backend"])

    def test_prometheus_scrapes_the_admin_port_and_loads_the_rules(self):
        config = load_yaml_documents(PROMETHEUS_DIR / "prometheus.yml")[0]
        job = next(j for j in config["scrape_configs"] if j["job_name"] == "sluice")
        port = self.config['admin']['port']
        self.assertEqual(job["static_configs"][0]["targets"], [f"sluice:{port}", f"sluice-2:{port}"])
        self.assertEqual(job.get("metrics_path", "/metrics"), "/metrics")
        mounts = self.services["prometheus"]["volumes"]
        for rule_file in config["rule_files"]:
            self.assertIn(f"../prometheus/{rule_file}:/etc/prometheus/{rule_file}:ro", mounts)

    def test_grafana_is_provisioned_with_the_data_source_and_the_dashboard(self):
        mounts = self.services["grafana"]["volumes"]
        self.assertIn("./grafana/provisioning:/etc/grafana/provisioning:ro", mounts)
        dashboards_dir = next(m.split(":")[1] for m in mounts if m.startswith("../grafana:"))
        provider = load_yaml_documents(COMPOSE / "grafana/provisioning/dashboards/sluice.yml")[0]
        self.assertEqual(provider["providers"][0]["options"]["path"], dashboards_dir)
        source = load_yaml_documents(COMPOSE / "grafana/provisioning/datasources/prometheus.yml")[0]
        dashboard, _ = dashboard_exprs()
        variable = next(v for v in dashboard["templating"]["list"] if v["name"] == "datasource")
        self.assertEqual(source["datasources"][0]["uid"], variable["current"]["value"])
        self.assertEqual(source["datasources"][0]["url"], "http://prometheus:9090")


class DockerfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
        cls.text = re.sub(r"\\\n", " ", text)  # join continued lines
        cls.lines = [l.strip() for l in cls.text.splitlines() if l.strip() and not l.startswith("#")]

    def instruction(self, name):
        return [l[len(name):].strip() for l in self.lines if l.startswith(name + " ")]

    def test_multi_stage_on_debian_12_with_the_ci_steps(self):
        self.assertEqual(self.instruction("FROM"), ["debian:12 AS build", "debian:12-slim"])
        self.assertIn("./deploy/dev.sh deps && ./deploy/dev.sh build", self.instruction("RUN")[0])

    def test_exposes_the_default_config_s_ports_and_runs_as_a_non_root_user(self):
        conf = conf_default()
        exposed = {int(p) for p in self.instruction("EXPOSE")[0].split()}
        self.assertEqual(exposed, {conf["listen"]["port"], conf["admin"]["port"]})
        user = self.instruction("USER")[0].split(":")[0]
        self.assertNotIn(user, {"0", "root"})

    def test_the_runtime_packages_provide_every_library_the_binary_links(self):
        if shutil.which("dpkg") is None:
            self.skipTest("dpkg is not available")
        run_line = next(r for r in self.instruction("RUN") if "--no-install-recommends" in r)
        packages = set(re.search(r"--no-install-recommends\s+(.*?)\s+&&", run_line).group(1).split())
        base = {"libc6", "libstdc++6", "libgcc-s1"}  # in debian:12-slim already
        needed = linked_packages(SLUICE)
        self.assertTrue(needed)
        self.assertEqual(needed - base, packages)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, headers=None, method="GET", data=None, context=None):
    request = urllib.request.Request(url, headers=headers or {}, method=method, data=data)
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class LiveGatewayTest(unittest.TestCase):
    """sluice with two demo backends and traffic that touches every metric family."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sluice-deploy-test-")
        cls.children = []
        try:
            cls.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start(cls):
        backends = []
        for _ in range(2):
            child = Child([DEMO_BACKEND, "--address", "127.0.0.1", "--port", "0"], cls.dir)
            cls.children.append(child)
            backends.append(child.wait_for(r"listening (\S+)").group(1))
        # A fleet of one on a real redis-server, so the fleet's metrics are exported too.
        redis_port = free_port()
        redis = Child([shutil.which("redis-server") or "redis-server", "--port", str(redis_port),
                       "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], cls.dir)
        cls.children.append(redis)
        redis.wait_for(r"Ready to accept connections")
        config = conf_default()
        config["store"] = {"type": "redis", "host": "127.0.0.1", "port": redis_port}
        config["fleet"] = {"enabled": True, "name": "deploy-test"}
        certs = make_certificates(Path(cls.dir) / "tls")
        cls.ca = certs / "ca.crt"
        chain, staple = staple_for(certs)
        del config["listen"]
        config["listeners"] = [
            {"name": "http", "address": "127.0.0.1", "port": 0},
            {"name": "https", "address": "127.0.0.1", "port": 0,
             "tls": {"certificates": [{"cert": str(chain), "key": str(certs / "tls.key"),
                                       "ocsp": str(staple)}]}},
        ]
        config["admin"] = {"address": "127.0.0.1", "port": 0, "token_env": "SLUICE_TEST_TOKEN",
                           "persist": False}
        config["threads"] = 1
        config["access_log"] = {"enabled": False, "path": "-"}
        config["backends"]["users"]["endpoints"] = backends
        config["backends"]["broken"] = {"endpoints": ["127.0.0.1:1"], "connect_timeout_ms": 200,
                                        "timeout_ms": 1000}
        config["limits"]["tiny"] = {"requests": 2, "window_ms": 60000, "buckets": 6}
        config["auth"] = {"api_keys": {"header": "X-Deploy-Key", "keys": [
            {"sha256": hashlib.sha256(LIVE_API_KEY.encode()).hexdigest(), "user": "deploy-bot"}]}}
        config["identity"] = [{"api_key": True}] + config.get("identity", [{"client_ip": True}])
        config["routes"].insert(0, {"name": "secure", "prefix": "/secure", "backend": "users",
                                    "strip_prefix": True, "auth": "required"})
        config["routes"].insert(0, {"name": "broken", "prefix": "/broken", "backend": "broken",
                                    "limit": "tiny"})
        config_path = Path(cls.dir) / "sluice.json"
        config_path.write_text(json.dumps(config))
        os.environ["SLUICE_TEST_TOKEN"] = "deploy-test-token"
        gateway = Child([SLUICE, "--config", str(config_path)], cls.dir)
        cls.children.append(gateway)
        ready = gateway.wait_for(r"ready proxy=(\S+) admin=(\S+) .*https@(\S+)")
        cls.proxy = f"http://{ready.group(1)}"
        cls.https_port = int(ready.group(3).rsplit(":", 1)[1])
        cls.admin = f"http://{ready.group(2)}"
        cls.admin_port = int(ready.group(2).rsplit(":", 1)[1])
        cls.gateway = gateway
        cls.config_path = config_path
        cls.traffic()

    @classmethod
    def traffic(cls):
        token = {"Authorization": "Bearer deploy-test-token"}
        for i in range(20):
            http_get(f"{cls.proxy}/demo/ok", {"X-API-Key": f"user-{i % 3}"})
        context = ssl.create_default_context(cafile=str(cls.ca))
        status, _ = http_get(f"https://localhost:{cls.https_port}/demo/ok", context=context)
        assert status == 200, status
        for _ in range(4):
            http_get(f"{cls.proxy}/api/login", {"X-API-Key": "login-user"}, method="POST", data=b"x")
        for _ in range(4):
            http_get(f"{cls.proxy}/broken/x", {"X-API-Key": "breaker-user"})  # limited after 2
        for i in range(3):
            http_get(f"{cls.proxy}/demo/status/500", {"X-API-Key": f"failing-{i}"})
        # docs/identity.md: one request with the API key the config lists, one without.
        status, body = http_get(f"{cls.proxy}/secure/ok", {"X-Deploy-Key": LIVE_API_KEY})
        assert status == 200, (status, body)
        status, _ = http_get(f"{cls.proxy}/secure/ok")
        assert status == 401, status
        status, _ = http_get(f"{cls.admin}/admin/limits/standard/overrides/deploy-test",
                             token, method="PUT", data=b'{"requests": 7}')
        assert status == 200, status
        cls.gateway.process.send_signal(signal.SIGHUP)
        cls.gateway.wait_for(r"reload")

    @classmethod
    def tearDownClass(cls):
        for child in reversed(cls.children):
            child.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def scrape_families(self):
        status, text = http_get(f"{self.admin}/metrics")
        self.assertEqual(status, 200)
        return set(re.findall(r"(?m)^# TYPE (\S+) ", text)), text

    def test_every_metric_of_the_rules_and_the_dashboard_is_exported(self):
        families, _ = self.scrape_families()
        _, exprs = dashboard_exprs()
        exprs += [r["expr"] for r in alert_rules()]
        used = set().union(*(metric_names(e) for e in exprs)) - {"up"}
        self.assertTrue(used)
        for metric in sorted(used | set(CONTRACT_METRICS)):
            with self.subTest(metric=metric):
                self.assertIn(metric, families)

    def test_the_probe_paths_answer(self):
        self.assertEqual(http_get(f"{self.admin}/healthz")[0], 200)
        self.assertEqual(http_get(f"{self.admin}/readyz")[0], 200)

    def test_the_dockerfile_healthcheck_command_passes_against_a_live_admin_listener(self):
        line = next(l for l in DockerfileTest.lines_of_dockerfile() if l.startswith("HEALTHCHECK "))
        command = json.loads(line[line.index("CMD") + 3:].strip())
        conf_admin_port = str(conf_default()["admin"]["port"])
        self.assertIn(f"/dev/tcp/127.0.0.1/{conf_admin_port}", command[2])
        self.assertIn("/healthz", command[2])
        live = command[:2] + [command[2].replace(f"/{conf_admin_port}", f"/{self.admin_port}")]
        self.assertEqual(run(live, check=False).returncode, 0)
        dead = command[:2] + [command[2].replace(f"/{conf_admin_port}", f"/{free_port()}")]
        self.assertNotEqual(run(dead, check=False).returncode, 0)

    def test_a_real_prometheus_scrapes_sluice_and_evaluates_every_rule_and_panel(self):
        prometheus = shutil.which("prometheus")
        self.assertIsNotNone(prometheus, "prometheus is missing (apt package prometheus)")
        config = load_yaml_documents(PROMETHEUS_DIR / "prometheus.yml")[0]
        config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
        config["rule_files"] = [str(ALERTS)]
        config["scrape_configs"][0]["static_configs"][0]["targets"] = [f"127.0.0.1:{self.admin_port}"]
        directory = Path(self.dir) / "prometheus"
        directory.mkdir(exist_ok=True)
        (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
        port = free_port()
        child = Child([prometheus, f"--config.file={directory / 'prometheus.yml'}",
                       f"--storage.tsdb.path={directory / 'data'}",
                       f"--web.listen-address=127.0.0.1:{port}"], self.dir)
        try:
            api = f"http://127.0.0.1:{port}/api/v1"

            def query(expr):
                status, body = http_get(f"{api}/query?" + urllib.parse.urlencode({"query": expr}))
                reply = json.loads(body)
                self.assertEqual(reply["status"], "success", f"{expr}: {body}")
                return reply["data"]["result"]

            deadline = time.time() + TIMEOUT * 2
            result = []
            while time.time() < deadline:
                try:
                    result = query('sluice_requests_total{route="demo"}')
                    if result and query("sluice_build_info"):
                        break
                except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
                    pass
                time.sleep(0.5)
            self.assertTrue(result, "Prometheus never stored a sluice series")
            self.assertEqual(query('up{job="sluice"}')[0]["value"][1], "1")
            # Every dashboard query is valid PromQL over real series (no rate() yet: one query
            # window of the scraped samples, with the dashboard's variables filled in).
            _, exprs = dashboard_exprs()
            for expr in exprs:
                concrete = expr.replace("$__rate_interval", "1m").replace("$instance", ".*")
                with self.subTest(expr=expr):
                    query(concrete)
            # Every alerting rule is loaded and evaluates without error.
            deadline = time.time() + TIMEOUT
            while time.time() < deadline:
                rules = json.loads(http_get(f"{api}/rules")[1])["data"]["groups"][0]["rules"]
                if all(r.get("lastEvaluation", "").startswith("0001") is False and
                       r.get("health") == "ok" for r in rules):
                    break
                time.sleep(0.5)
            self.assertEqual({r["name"] for r in rules}, EXPECTED_ALERTS)
            for rule in rules:
                with self.subTest(rule=rule["name"]):
                    self.assertEqual(rule["health"], "ok", rule.get("lastError"))
        finally:
            child.stop()


def _dockerfile_lines():
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    return [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("#")]


DockerfileTest.lines_of_dockerfile = staticmethod(_dockerfile_lines)


if __name__ == "__main__":
    unittest.main(verbosity=2)
