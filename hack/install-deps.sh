#!/usr/bin/env bash
# Installs what building and testing bulkhead needs on Debian 12, as root.
# Idempotent: packages already present are not fetched again.
set -euo pipefail

# docker.io brings dockerd, containerd and tini for the engine tests (test/engine).
want=(runc runsc busybox-static libseccomp-dev gcc libc6-dev pkg-config jq iproute2 util-linux containernetworking-plugins docker.io "$@")
# The toolchains of the job tests (test/jobs): pytest and black for Python,
# pip for the egress clients' `pip download`, cargo (with rustc) for Rust. Go is the one building bulkhead. npm comes
# with Debian's nodejs package, or is already there with another nodejs
# (NodeSource's bundles it and conflicts with Debian's npm).
want+=(python3-pytest python3-pip black cargo)
command -v npm >/dev/null 2>&1 || want+=(nodejs npm)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if command -v go >/dev/null 2>&1 && [ -f go.mod ]; then
  go mod download
fi
