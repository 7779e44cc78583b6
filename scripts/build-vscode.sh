#!/usr/bin/env bash
# Build and package the VS Code extension: editors/vscode/dist/endstate-author-<version>.vsix.
# Installs the pinned npm packages from package-lock.json (npm ci, skipped when node_modules
# was installed from this very lockfile: npm's own node_modules/.package-lock.json is newer
# and the same packages are recorded), copies the shipped JSON
# Schema in, type-checks, bundles, runs the unit tests and packages with @vscode/vsce.
set -euo pipefail
cd "$(dirname "$0")/../editors/vscode"
if ! command -v npm >/dev/null 2>&1; then
  echo "build-vscode: npm is not installed (install Node.js 20 or later)" >&2
  exit 1
fi
start=$(date +%s)
hidden=node_modules/.package-lock.json
if [ -f "$hidden" ] && [ "$hidden" -nt package-lock.json ] \
  && node -e 'const a=require("./package-lock.json").packages,b=require("./'"$hidden"'").packages;
      for (const [k, v] of Object.entries(a)) if (k && (b[k] ? b[k].integrity !== v.integrity : !v.optional)) process.exit(1)'; then
  echo "build-vscode: node_modules already installed from package-lock.json"
else
  npm ci --no-audit --no-fund --loglevel=error
fi
npm test --silent
rm -rf dist
npx --no-install vsce package --allow-missing-repository --out dist/
vsix=$(ls dist/*.vsix)
echo "build-vscode: $vsix ($(wc -c <"$vsix") bytes) in $(( $(date +%s) - start ))s"
