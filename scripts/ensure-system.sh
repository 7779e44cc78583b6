#!/usr/bin/env bash
# Install and start what the tests talk to: Docker (daemon + local sandbox image), Neovim.
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
if ! command -v nvim >/dev/null 2>&1; then
  echo "ensure-system: installing neovim"
  apt_install neovim || echo "ensure-system: neovim unavailable; the editor test will skip"
fi
if [ -x scripts/ensure-docker.sh ] || [ -f scripts/ensure-docker.sh ]; then
  bash scripts/ensure-docker.sh
fi
exit 0
