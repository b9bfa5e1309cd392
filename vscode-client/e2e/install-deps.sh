#!/usr/bin/env bash
# Installs what `npm run e2e` needs, idempotently: Debian's chromium, ripgrep and libkrb5-dev, and
# code-server 4.100.3 (VS Code 1.100.3) into a cache dir outside the repo.
set -euo pipefail

CACHE_DIR="${CTXPROXY_E2E_CACHE:-$HOME/.cache/ctxproxy-e2e}"
CODE_SERVER_VERSION=4.100.3
RG_CACHE_DIR=/tmp/vscode-ripgrep-cache-1.15.11
RG_TARBALL="$RG_CACHE_DIR/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"

missing=()
for pkg in chromium ripgrep libkrb5-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# @vscode/ripgrep (inside code-server) downloads rg unless this cached tarball exists.
if [ ! -f "$RG_TARBALL" ]; then
  mkdir -p "$RG_CACHE_DIR"
  tmp="$(mktemp -d)"
  cp /usr/bin/rg "$tmp/rg"
  tar -czf "$RG_TARBALL" -C "$tmp" rg
  rm -rf "$tmp"
fi

code_server_bin="$CACHE_DIR/node_modules/.bin/code-server"
installed_marker="$CACHE_DIR/.installed-$CODE_SERVER_VERSION"
if [ -f "$installed_marker" ] && [ -x "$code_server_bin" ]; then
  echo "install-deps: code-server $CODE_SERVER_VERSION already in $CACHE_DIR"
else
  echo "install-deps: installing code-server $CODE_SERVER_VERSION into $CACHE_DIR"
  mkdir -p "$CACHE_DIR"
  [ -f "$CACHE_DIR/package.json" ] || echo '{"name":"ctxproxy-e2e-cache","private":true}' > "$CACHE_DIR/package.json"
  # code-server's postinstall builds its native modules (node-pty, kerberos, ...) with nested npm runs;
  # newer npm blocks dependency install scripts unless allowed, hence the last variable.
  (cd "$CACHE_DIR" && npm_config_unsafe_perm=true npm_config_yes=true \
    npm_config_dangerously_allow_all_scripts=true \
    npm install --no-audit --no-fund --no-save "code-server@$CODE_SERVER_VERSION")
  "$code_server_bin" --version
  touch "$installed_marker"
fi
