#!/usr/bin/env bash
# Build and package the VS Code extension: editors/vscode/dist/endstate-author-<version>.vsix.
# Installs the pinned npm packages from package-lock.json (npm ci), copies the shipped JSON
# Schema in, type-checks, bundles, runs the unit tests and packages with @vscode/vsce.
set -euo pipefail
cd "$(dirname "$0")/../editors/vscode"
if ! command -v npm >/dev/null 2>&1; then
  echo "build-vscode: npm is not installed (install Node.js 20 or later)" >&2
  exit 1
fi
start=$(date +%s)
npm ci --no-audit --no-fund --loglevel=error
npm test --silent
rm -rf dist
npx --no-install vsce package --allow-missing-repository --out dist/
vsix=$(ls dist/*.vsix)
echo "build-vscode: $vsix ($(wc -c <"$vsix") bytes) in $(( $(date +%s) - start ))s"
