# SPDX-License-Identifier: Apache-2.0
# Install rules and the Debian package (docs/packaging.md). `cmake --install build --prefix /usr`
# installs
#   /usr/bin/sluice, /etc/sluice/sluice.json, /usr/lib/systemd/system/sluice.service,
#   /etc/logrotate.d/sluice
# and `cpack` (from the build directory; `./deploy/dev.sh package`) builds sluice_<version>_amd64.deb
# with the same files. Only the binary is built by the install: everything else is copied from
# deploy/package.
include(GNUInstallDirs)

# `install` (and cpack) must not build `all` (tests, benchmarks): only sluice is installed.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

install(TARGETS sluice RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(_sluice_package_dir ${CMAKE_CURRENT_LIST_DIR})
install(CODE "
  set(SLUICE_PACKAGE_SOURCE \"${_sluice_package_dir}\")
  set(SLUICE_PACKAGE_STAGING \"${PROJECT_BINARY_DIR}/package-staging\")
  set(SLUICE_INSTALL_BINDIR \"${CMAKE_INSTALL_BINDIR}\")")
install(SCRIPT ${_sluice_package_dir}/install_system_files.cmake)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "edge API gateway with per-user rate limits and adaptive breakers")
set(CPACK_PACKAGE_DESCRIPTION "sluice is a reverse proxy for HTTP/1.1 and HTTP/2 APIs: it routes
requests to backends, limits each user's request rate (in memory or in Redis), sheds load to
failing backends with adaptive circuit breakers, and exports Prometheus metrics. It runs as a
sandboxed systemd service (sluice.service) on /etc/sluice/sluice.json.")
set(CPACK_PACKAGE_CONTACT "sluice maintainers <maintainers@users.noreply.a-seed-4b6f2fb4.example>")
# The Debian layout, whatever prefix the build was configured with: the unit, the conffiles
# list and the maintainer scripts name /usr/bin and /etc.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # sluice_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The runtime libraries with the versions the binary needs, from dpkg-shlibdeps (dpkg-dev): what
# `ldd build/bin/sluice` lists, never a hand-kept list that goes stale.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS logrotate)
# The release build carries line tables (-g1): the package ships the binary without them.
set(CPACK_STRIP_FILES ON)
# dpkg treats files under /etc as conffiles only when the control archive lists them; the
# maintainer scripts enable, start, stop and clean up the service.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${_sluice_package_dir}/debian/conffiles ${_sluice_package_dir}/debian/postinst
    ${_sluice_package_dir}/debian/prerm ${_sluice_package_dir}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
