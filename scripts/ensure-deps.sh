#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages the build, the tests and the demo need, when they are missing.
# As root it runs apt-get; otherwise it prints the one line to run.
set -euo pipefail
packages=(pkg-config libstdc++-12-dev libfprint-2-dev libglib2.0-dev libpam0g-dev libsystemd-dev libcrypt-dev
    libpam-wrapper pamtester python3-pypamtest clang-format man-db util-linux systemd
    python3-dbusmock dbus-daemon i3lock xvfb xdotool valgrind sudo tmux
    fprintd libpam-fprintd polkitd python3-gi gir1.2-glib-2.0)
# The keyring scenario (make pam-test-keyring): the real pam_gnome_keyring and its daemon, secret-tool, gdbus.
packages+=(libpam-gnome-keyring gnome-keyring libsecret-tools libglib2.0-bin)
# A target that needs more names them: scripts/ensure-deps.sh dpkg-dev (make deb).
# Sealing to the machine (docs/adr/0006-sealing.md): systemd-creds loads tpm2-tss at run time; the
# tests seal against a software TPM.
packages+=(swtpm swtpm-tools libtss2-esys-3.0.2-0 libtss2-mu0 libtss2-rc0 libtss2-tcti-swtpm0)
# Messages (po/po.mk): xgettext, msgfmt and msgmerge; the locales' sources, from which the tests
# build de_DE, ko_KR, zh_CN and fr_FR (UTF-8) with localedef into a private directory (/etc stays as it is).
packages+=(gettext locales)
# dbus-monitor: Tests/system/logind_mock.py logs every message on its bus, so tests count logind's round trips.
packages+=(dbus-bin)
# Touch ID for ssh (make test-ssh): OpenSSH's sshd on 127.0.0.1, and ssh, ssh-add, ssh-keygen through the agent.
packages+=(openssh-server openssh-client)
# strace: Tests/IntegrationTests/ClientDescriptorTests traces the client's close() calls (a descriptor closed twice).
packages+=(strace)
packages+=("$@")
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "Missing Debian packages. Run as root:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "Installing ${missing[*]} …"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
