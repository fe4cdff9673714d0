#!/usr/bin/env bash
# Make Debian's headless-capable `chromium` available for the run-report browser test
# (test/test_report.py loads the HTML report and checks that its images decode).
#
#   scripts/ensure_chromium.sh
#
# Installs the `chromium` package with apt-get when no chromium is on PATH and we run
# as root. It never fails the build: when it cannot install (not root, no apt-get, no
# network), it prints a warning and exits 0, and the browser test skips with a reason.
set -uo pipefail

warn() {
    echo "warning: ensure_chromium: $*; the headless browser check of the run report will be skipped" >&2
    exit 0
}

for name in chromium chromium-browser; do
    if command -v "$name" >/dev/null 2>&1; then
        echo "ensure_chromium: $(command -v "$name") is already installed"
        exit 0
    fi
done

command -v apt-get >/dev/null 2>&1 || warn "apt-get not found (not a Debian-based system)"
[ "$(id -u)" -eq 0 ] || warn "not root, cannot apt-get install chromium"

export DEBIAN_FRONTEND=noninteractive
# Bounded: a hung mirror must not hold CI forever.
limit=()
command -v timeout >/dev/null 2>&1 && limit=(timeout 900)

echo "ensure_chromium: installing Debian's chromium with apt-get (quiet)"
${limit[@]+"${limit[@]}"} apt-get update -qq >/dev/null || warn "apt-get update failed"
${limit[@]+"${limit[@]}"} apt-get install -y -qq --no-install-recommends chromium >/dev/null ||
    warn "apt-get install chromium failed"

command -v chromium >/dev/null 2>&1 || warn "chromium is still not on PATH after installing"
echo "ensure_chromium: installed $(chromium --version 2>/dev/null || echo chromium)"
exit 0
