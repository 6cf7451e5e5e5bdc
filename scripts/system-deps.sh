#!/usr/bin/env bash
# Install the Debian packages the tests need, when they are missing and we may (root, or passwordless sudo).
set -euo pipefail
need=()
command -v ffmpeg >/dev/null 2>&1 || need+=(ffmpeg)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
{ command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; } || need+=(postgresql)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
  echo "note: missing ${need[*]}; tests that need them will be skipped (install them with apt-get)" >&2; exit 0
fi
echo "installing ${need[*]} with apt-get" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
