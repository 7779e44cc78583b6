#!/usr/bin/env bash
# Make a real Docker daemon and the toolkit's sandbox image available for `make test`.
#
# Why this exists: the Docker sandbox tests must run against a real daemon, and the machines
# this project runs on start none and cannot pull from Docker Hub. So this script installs
# Debian's docker.io and debootstrap if needed, starts dockerd when nothing answers, and has
# `endstate-author sandbox build` build the toolkit's own image from Debian packages (run
# `make setup` first: the Makefile's `system` target depends on it).
#
# Idempotent: every step checks first and is skipped when already done. It never fails
# silently: when Docker truly cannot start here it says why and exits 0, so the docker tests
# skip with a printed reason instead of the whole test run failing.
set -u -o pipefail

cd "$(dirname "$0")/.."
DOCKERD_LOG="${DOCKERD_LOG:-/tmp/dockerd.log}"
WAIT_S=60

step() { printf 'ensure-docker: %s\n' "$*"; }
give_up() {
    step "SKIP: $* (docker tests will be skipped)"
    exit 0
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else
        return 1
    fi
}

docker_answers() { timeout 10 docker info >/dev/null 2>&1; }

# 1. packages -----------------------------------------------------------------------------
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    step "installing ${missing[*]} with apt-get"
    as_root apt-get update -qq >/dev/null 2>&1 || step "apt-get update failed (continuing)"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/tmp/ensure-docker-apt.log 2>&1; then
        tail -5 /tmp/ensure-docker-apt.log
        give_up "apt-get install ${missing[*]} failed (see /tmp/ensure-docker-apt.log)"
    fi
else
    step "dockerd and debootstrap present"
fi
command -v docker >/dev/null 2>&1 || give_up "no docker client on PATH after install"

# 2. daemon -------------------------------------------------------------------------------
if docker_answers; then
    step "docker daemon answers"
else
    command -v dockerd >/dev/null 2>&1 || give_up "dockerd is not installed"
    [ "$(id -u)" -eq 0 ] || give_up "no daemon answers and starting dockerd needs root"
    step "starting dockerd (log: $DOCKERD_LOG)"
    # iptables may be unusable inside a container-based machine; the sandbox runs with
    # network_mode=none anyway, so the daemon does not need to manage NAT rules.
    start_dockerd() {
        setsid nohup dockerd "$@" >>"$DOCKERD_LOG" 2>&1 </dev/null &
        local pid=$!
        local waited=0
        while [ "$waited" -lt "$WAIT_S" ]; do
            if docker_answers; then return 0; fi
            kill -0 "$pid" 2>/dev/null || return 1
            sleep 1
            waited=$((waited + 1))
        done
        kill "$pid" 2>/dev/null
        return 1
    }
    if start_dockerd; then
        step "dockerd answers"
    elif start_dockerd --iptables=false --ip6tables=false; then
        step "dockerd answers (started with --iptables=false)"
    elif start_dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=vfs; then
        step "dockerd answers (started with --iptables=false --bridge=none --storage-driver=vfs)"
    else
        tail -5 "$DOCKERD_LOG"
        give_up "dockerd did not answer within ${WAIT_S}s (see $DOCKERD_LOG)"
    fi
fi

# 3. image: the toolkit's own, built by the tool (the same command a user runs) -------------
# `sandbox build` reads the Debian archive from apt's own configuration and does nothing when
# the image already exists; building needs root, so a non-root run retries with sudo -n.
author=.venv/bin/endstate-author
[ -x "$author" ] || give_up "$author is missing (run make setup first)"
if "$author" sandbox build; then exit 0; fi
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n "$author" sandbox build; then
    exit 0
fi
give_up "endstate-author sandbox build failed (its message is above)"
