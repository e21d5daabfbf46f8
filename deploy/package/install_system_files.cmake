# SPDX-License-Identifier: Apache-2.0
# Runs at install time (`cmake --install`, and cpack's staging install), because only then is
# the prefix known: cpack installs with the prefix /usr whatever the build was configured with.
# Installs the config, the logrotate file and the systemd unit, whose command lines name the
# binary and the config where this install puts them. Set by packaging.cmake before it runs:
# SLUICE_PACKAGE_SOURCE (deploy/package), SLUICE_PACKAGE_STAGING (a scratch directory in the
# build tree), SLUICE_INSTALL_BINDIR (GNUInstallDirs' bin, relative to the prefix).

# GNUInstallDirs' rule for the system configuration directory: /etc for the prefixes / and
# /usr, else <prefix>/etc.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/")
  set(SLUICE_SYSCONFDIR /etc)
else()
  set(SLUICE_SYSCONFDIR "${CMAKE_INSTALL_PREFIX}/etc")
endif()
string(REGEX REPLACE "/$" "" _prefix "${CMAKE_INSTALL_PREFIX}")
set(SLUICE_BINARY "${_prefix}/${SLUICE_INSTALL_BINDIR}/sluice")
set(SLUICE_CONFIG "${SLUICE_SYSCONFDIR}/sluice/sluice.json")

# One staging directory per destination, so two installs at once (a test and dev.sh package)
# do not write the same file.
string(SHA1 _key "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
set(_staging "${SLUICE_PACKAGE_STAGING}/${_key}")
configure_file("${SLUICE_PACKAGE_SOURCE}/sluice.service.in" "${_staging}/sluice.service" @ONLY)

# file(INSTALL) puts DESTDIR in front and records each file in install_manifest.txt.
file(INSTALL DESTINATION "${_prefix}/lib/systemd/system" TYPE FILE
     FILES "${_staging}/sluice.service")
file(INSTALL DESTINATION "${SLUICE_SYSCONFDIR}/sluice" TYPE FILE
     FILES "${SLUICE_PACKAGE_SOURCE}/sluice.json")
file(INSTALL DESTINATION "${SLUICE_SYSCONFDIR}/logrotate.d" TYPE FILE RENAME sluice
     FILES "${SLUICE_PACKAGE_SOURCE}/logrotate")
file(REMOVE_RECURSE "${_staging}")
