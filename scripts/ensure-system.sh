#!/usr/bin/env bash
# Install and start what the tests talk to for real: Docker (daemon + local sandbox image),
# bubblewrap (the local sandbox's walls),
# Neovim (the editor test), Node.js/npm and git (the VS Code package and pre-commit tests), and
# a real VS Code with chromium for the VS Code end-to-end tests (scripts/ensure-vscode.sh).
# Each step prints one line; a step that cannot run here says why, and the tests that need
# it skip with that reason printed.
set -u
cd "$(dirname "$0")/.."
apt_updated=0
apt_install() {
  if [ "$(id -u)" != 0 ]; then echo "ensure-system: not root, cannot apt-get install $*"; return 1; fi
  if [ "$apt_updated" = 0 ]; then apt-get update -qq >/dev/null 2>&1; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1
}
need() {  # need COMMAND PACKAGE...
  local cmd=$1; shift
  if command -v "$cmd" >/dev/null 2>&1; then return 0; fi
  echo "ensure-system: installing $*"
  apt_install "$@" || echo "ensure-system: $* unavailable; the tests that need $cmd will skip"
}
need nvim neovim
# bubblewrap: the local sandbox's walls (issue 27); without it the local sandbox runs unwalled and says so
need bwrap bubblewrap
need git git
need node nodejs npm
need npm npm
# --- headless Chromium (issue 15: report.html and compare.html are opened in it by the tests,
# driven by pip's playwright with executable_path=/usr/bin/chromium). Idempotent: `need`
# installs only when the command is missing.
need chromium chromium
bash scripts/ensure-docker.sh
bash scripts/ensure-vscode.sh
exit 0
