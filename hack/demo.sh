#!/usr/bin/env bash
# make demo: judge the host with `bulkhead doctor`, run one container
# through bulkhead and show what the policy did, then attempt every boundary
# from inside with `bulkhead probe` on runc, and on runsc when it is
# installed. Needs root and `make deps build`.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BULKHEAD_BIN:-$PWD/bin}
bulkhead="$BIN/bulkhead"
[ "$(id -u)" = 0 ] || { echo "demo: run as root (containers are created for real)" >&2; exit 1; }
[ -x "$bulkhead" ] && [ -x "$BIN/bulkhead-probe" ] || { echo "demo: run make build first" >&2; exit 1; }
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || { echo "demo: busybox-static is missing (make deps)" >&2; exit 1; }

work=$(mktemp -d /tmp/bulkhead-demo.XXXXXX)
root="$work/state"
id="demo-$$"
cleanup() {
	"$bulkhead" --root "$root" --config "$work/config.toml" delete --force "$id" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# A configuration of our own: the built-in policy, audit log in the demo dir.
# Configuration files must be root's and writable by nobody else.
printf 'audit_log = "%s/audit.jsonl"\n' "$work" >"$work/config.toml"
chmod 0644 "$work/config.toml"
g=(--root "$root" --config "$work/config.toml")

step() { printf '\n== %s\n' "$*"; }

step "bulkhead doctor: can this host hold the boundary? (the demo goes on whatever it says)"
if "$bulkhead" "${g[@]}" doctor; then
	echo "  doctor: no check fails on this host"
else
	echo "  doctor: the checks marked fail above weaken or refuse containers here; the demo goes on to show the rest"
fi

step "a busybox bundle whose config asks for root, a shell and a credential in the environment"
bundle="$work/bundle"
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/etc" "$bundle/rootfs/tmp"
cp "$busybox" "$bundle/rootfs/bin/busybox"
for applet in $("$busybox" --list); do
	[ "$applet" = busybox ] || ln -sf busybox "$bundle/rootfs/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$bundle/rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$bundle/rootfs/etc/group"
cat >"$bundle/rootfs/demo.sh" <<'EOF'
echo "  inside: $(id)"
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t' ' ' | sed 's/^/  /'
echo "  interfaces: $(ls /sys/class/net | tr '\n' ' ')"
echo "  DEMO_API_TOKEN: ${DEMO_API_TOKEN:-(not in the environment)}"
touch /etc/demo 2>&1 | sed 's/^/  /'
echo scratch >/tmp/demo && echo "  /tmp: writable scratch ($(df -h /tmp | awk 'NR==2 {print $2}'))"
EOF
(cd "$bundle" && runc spec)
sed -i -e 's/"terminal": true/"terminal": false/' \
	-e 's/^\(\s*\)"sh"$/\1"sh", "\/demo.sh"/' \
	-e 's/"TERM=xterm"/"TERM=xterm", "DEMO_API_TOKEN=not-a-real-token"/' "$bundle/config.json"
grep -E '"uid"|"/demo.sh"|DEMO_API_TOKEN' "$bundle/config.json" | sed 's/^\s*/  config.json: /'

step "bulkhead run: the policy rewrites the spec, runc creates, bulkhead verifies, then starts"
# Through a pipe, with no input: runc gives the container's user every
# stdio file it is handed, so bulkhead refuses the caller's terminal or
# log file there (README, "What the caller hands the container").
"$bulkhead" "${g[@]}" run --bundle "$bundle" "$id" </dev/null 2>&1 | cat

step "what the audit log says about it"
# This container's lines only: doctor's live check wrote its own.
audit="$work/audit-$id.jsonl"
grep -F "\"id\":\"$id\"" "$work/audit.jsonl" >"$audit" || true
printf '  decisions: %s, verification checks as expected: %s of %s, %s\n' \
	"$(grep -o '"rule":' "$audit" | wc -l)" \
	"$(grep -o '"OK":true' "$audit" | wc -l)" \
	"$(grep -o '"OK":' "$audit" | wc -l)" \
	"$(grep -o '"outcome":"[^"]*"' "$audit" | tail -1)"
printf '  secrets removed (names only): %s\n' "$(grep -o '"secret_env_removed":\[[^]]*\]' "$audit" | head -1 || echo none)"

step "bulkhead probe on runc: every boundary attempted from inside"
"$bulkhead" "${g[@]}" probe --backend runc

if command -v runsc >/dev/null; then
	step "bulkhead probe on runsc (gVisor)"
	"$bulkhead" "${g[@]}" probe --backend runsc
else
	step "runsc is not installed: skipping the gVisor probe"
fi
echo
echo "demo: done"
