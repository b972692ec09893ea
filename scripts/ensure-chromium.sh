#!/usr/bin/env bash
# The browser tests (test/web-browser.test.ts) drive Debian's chromium at /usr/bin/chromium
# through playwright-core, which downloads no browser of its own. Installs it when absent;
# .ci/run calls this before `npm test`. Needs root (or sudo) and Debian's package archive.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium
/usr/bin/chromium --version
