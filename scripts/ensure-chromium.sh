#!/usr/bin/env bash
# Makes sure a Chromium is installed for the support console's browser
# tests (middleware/console/browsertest, driven by chromedp). Installs
# Debian's chromium package if no chromium, chromium-browser or
# google-chrome is on PATH. Under CI the tests fail without one; this
# script is what make test runs first so that they find it.
set -euo pipefail

for name in chromium chromium-browser google-chrome; do
  if command -v "$name" >/dev/null 2>&1; then
    echo "ensure-chromium: $("$name" --version 2>/dev/null || echo "$name") at $(command -v "$name")"
    exit 0
  fi
done

echo "ensure-chromium: installing chromium from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq chromium >/dev/null
echo "ensure-chromium: $(chromium --version)"
