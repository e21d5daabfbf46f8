# syntax=docker/dockerfile:1
# sluice in a container: a thin wrapper around the steps CI runs (`./deploy/dev.sh deps` and
# `./deploy/dev.sh build`), so the image builds what `./deploy/dev.sh test` tested. No Docker
# engine runs on our build machines: the test suite checks this file instead (ports, health
# path, non-root user, and that the runtime packages below provide every shared library the
# binary needs; tests/deploy/test_deploy_artifacts.py).
#
#   docker build -t sluice:dev .
#   docker run --rm -p 8080:8080 -p 9901:9901 -e SLUICE_ADMIN_TOKEN=change-me \
#     -v "$PWD/deploy/compose/sluice.json:/etc/sluice/sluice.json:ro" sluice:dev

FROM debian:12 AS build
WORKDIR /src
COPY . .
RUN ./deploy/dev.sh deps && ./deploy/dev.sh build

FROM debian:12-slim
# Only the shared libraries build/bin/sluice links (ldd), nothing else: no compiler, no curl.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libfmt9 libhiredis0.14 libmimalloc2.0 libnghttp2-14 libprometheus-cpp-core1.0 libspdlog1.10 \
      libssl3 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin sluice
COPY --from=build /src/build/bin/sluice /src/build/bin/sluice-demo-backend /usr/local/bin/
# The default config; mount your own over it (read-only is fine: admin.persist needs a
# writable file, see docs/operations.md).
COPY conf/sluice.json /etc/sluice/sluice.json
USER 10001:10001
# 8080: the proxy listener; 9901: the admin listener (/healthz, /readyz, /metrics, /admin/).
EXPOSE 8080 9901
# /healthz is on the admin listener and needs no token. bash's /dev/tcp instead of curl keeps
# the image free of anything the binary does not need.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9901 && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["--config", "/etc/sluice/sluice.json"]
