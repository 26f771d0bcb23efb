#!/usr/bin/env bash
# Run the OCI runtime-tools validation suite twice, once against plain runc
# and once against bulkhead in audit mode, and compare them program by
# program: the set of failing TAP tests of each program must be the same. In audit mode bulkhead hands the caller's spec to runc unchanged,
# so every difference is bulkhead's own doing (argv handling, state,
# routing, exit codes, stdio) and fails this script.
#
# Usage: hack/conformance.sh        (as root; `make conformance` builds first)
# Environment:
#   BULKHEAD        bulkhead binary (default: bin/bulkhead of this checkout)
#   RUNC            runc binary (default: runc from PATH)
#   CONFORMANCE_DIR work directory, kept between runs so the suite is built
#                   once (default: /var/tmp/bulkhead-conformance)
#   CONFORMANCE_RUN extended regexp of program names to run (default: all)
#   PROGRAM_TIMEOUT seconds one program may take (default: 120)
#
# Enforce mode is not compared: it changes the spec on purpose (uid, caps,
# read-only root, ...), and many programs check exactly those fields.
set -euo pipefail

MODULE=github.com/opencontainers/runtime-tools
VERSION=v0.9.1-0.20250523060157-0ea5ed0382a2 # v0.9.0 has no go.mod

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bulkhead=$(readlink -f "${BULKHEAD:-$here/bin/bulkhead}")
runc=$(command -v "${RUNC:-runc}" || true)
work=${CONFORMANCE_DIR:-/var/tmp/bulkhead-conformance}
only=${CONFORMANCE_RUN:-.}
timeout_s=${PROGRAM_TIMEOUT:-120}

die() { echo "conformance: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "must run as root: the suite creates containers"
[ -x "$bulkhead" ] || die "no bulkhead binary at $bulkhead (run make build)"
[ -n "$runc" ] || die "runc not found (hack/install-deps.sh installs it)"
[ -x /bin/busybox ] || die "busybox-static not found (hack/install-deps.sh installs it)"
command -v go >/dev/null || die "go not found"

# Three programs fail by chance, whichever runtime runs them: killsig
# signals a shell before it may have set its trap (PID 1 ignores a signal
# it has no handler for), pidfile kills a "true" that may have exited,
# process_rlimits sets a 1 GiB address-space limit that runc's own init
# process (about 1 GiB mapped) sometimes exceeds while loading seccomp.
# The patch makes each test what it means to, so no program is ever run
# again and no result is ever replaced. Its hash names the build.
patch=$here/hack/conformance/runtime-tools.patch
src=$work/src-$VERSION-$(sha256sum "$patch" | cut -c1-12)
mkdir -p "$work"
for old in "$work"/src-*; do
	[ "$old" = "$src" ] || rm -rf "$old"
done

# 1. The suite's source, from the module proxy through the module cache,
#    without its vendor/ tree (its vendored modules do not build with
#    current Go); dependencies come from the proxy too.
if [ ! -f "$src/.built" ]; then
	echo "conformance: building $MODULE@$VERSION in $src" >&2
	moddir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$moddir" ] || die "go mod download $MODULE@$VERSION failed"
	rm -rf "$src"
	cp -r "$moddir" "$src"
	chmod -R u+w "$src"
	rm -rf "$src/vendor"
	(
		cd "$src"
		git apply -p1 "$patch" || die "$patch does not apply to $MODULE@$VERSION"
		export GOFLAGS=-mod=mod
		CGO_ENABLED=0 go build -ldflags '-s -w -extldflags -static' -o runtimetest ./cmd/runtimetest
		for f in validation/*/*.go; do
			case $f in validation/util/*) continue ;; esac
			go build -o "${f%.go}.t" "$f"
		done
	)
	touch "$src/.built"
fi

# 2. The rootfs every program unpacks into its bundle: busybox-static and
#    one link per applet, built here rather than taken from the module.
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs"/{bin,sbin,etc,dev,proc,sys,tmp,root,usr/bin,var}
cp /bin/busybox "$rootfs/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ "$applet" = busybox ] || ln -sf busybox "$rootfs/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
chmod 1777 "$rootfs/tmp"
# The tar's "./" entry sets the bundle directory's mode; mktemp made 0700,
# which a non-root container user could not traverse.
chmod 0755 "$rootfs"
tar -C "$rootfs" -czf "$src/rootfs-amd64.tar.gz" .

# 3. bulkhead's configuration for the second pass: the default profile in
#    audit mode. bulkhead reads only a root-owned file that nobody else may
#    write.
config=$work/bulkhead-audit.toml
cat >"$config" <<EOF
# Written by hack/conformance.sh: every container in audit mode.
default_profile = "conformance"
audit_log = "$work/audit.jsonl"

[backends.runc]
path = "$runc"

[profiles.conformance]
mode = "audit"
EOF
chown root:root "$config"
chmod 0644 "$config"
: >"$work/audit.jsonl"

# result FILE EXIT: one word per program from its TAP output, for the
# table: pass:M (every test ok or skipped, plan met), fail:N/M (N of M not
# ok, or plan not met), error:EXIT (no TAP at all).
result() {
	awk -v code="$2" '
		/^1\.\.[0-9]+/ { split($1, p, "\\.\\."); plan += p[2]; next }
		/^ok /         { ok++; next }
		/^not ok /     { bad++; next }
		END {
			total = ok + bad
			if (total == 0 && plan == 0) { printf "error:%s\n", code; exit }
			if (bad == 0 && total >= plan) { printf "pass:%d\n", total; exit }
			printf "fail:%d/%d\n", bad, (plan > total ? plan : total)
		}' "$1"
}

# failures FILE EXIT: what the comparison looks at, the sorted set of
# failing TAP tests ("N - description", numbered since a program may
# repeat a description), plus "(plan not met: T of P)" and
# "(no TAP: exit E)" where the output itself falls short.
failures() {
	awk -v code="$2" '
		/^1\.\.[0-9]+/ { split($1, p, "\\.\\."); plan += p[2]; next }
		/^ok /           { ok++; next }
		/^not ok /       { bad++; sub(/^not ok /, ""); sub(/ # .*$/, ""); print; next }
		END {
			total = ok + bad
			if (total == 0 && plan == 0) { printf "(no TAP: exit %s)\n", code; exit }
			if (total < plan) { printf "(plan not met: %d of %d)\n", total, plan }
		}' "$1" | LC_ALL=C sort -u
}

programs=()
for t in "$src"/validation/*/*.t; do
	name=${t#"$src/validation/"}
	name=${name%.t}
	[[ $name =~ $only ]] && programs+=("$name")
done
[ ${#programs[@]} -gt 0 ] || die "no program matches $only"

# run PASS RUNTIME [ENV...]: every program from the source root, TAP kept
# under $work/PASS/.
run_one() {
	local pass=$1 runtime=$2 name=$3
	shift 3
	local log=$work/$pass/${name//\//_}.tap code=0
	# The programs make their bundles under TMPDIR; a container created
	# without a mount namespace of its own (as some programs ask) mounts
	# its /proc, /dev and /sys there in the host's, and a program that
	# fails midway leaves them. Whatever it left below its own TMPDIR goes.
	local tmp=$work/$pass/tmp-${name//\//_}
	mkdir -p "$tmp"
	(cd "$src" && env RUNTIME="$runtime" TMPDIR="$tmp" "$@" timeout "$timeout_s" "./validation/$name.t") >"$log" 2>&1 || code=$?
	{ grep -o " $tmp/[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	rm -rf "$tmp"
	result "$log" "$code" >"$log.result"
	failures "$log" "$code" >"$log.failures"
}

run_pass() {
	local pass=$1 runtime=$2
	shift 2
	rm -rf "${work:?}/$pass"
	mkdir -p "$work/$pass"
	local start=$SECONDS
	for name in "${programs[@]}"; do
		run_one "$pass" "$runtime" "$name" "$@"
	done
	echo "conformance: $pass pass took $((SECONDS - start)) s" >&2
}

run_pass runc "$runc"
run_pass bulkhead-audit "$bulkhead" BULKHEAD_CONFIG="$config"

same() {
	local file=${1//\//_}.tap
	cmp -s "$work/runc/$file.failures" "$work/bulkhead-audit/$file.failures"
}
# only_runc NAME: every test bulkhead failed, runc failed too (what differs
# is runc failing more).
only_runc() {
	local file=${1//\//_}.tap
	[ -z "$(LC_ALL=C comm -23 "$work/bulkhead-audit/$file.failures" "$work/runc/$file.failures")" ]
}

# Side by side, then the tallies. Only a test bulkhead failed that runc
# passed is a difference against bulkhead: a program plain runc failed on
# its own (a runc that errored on a busy machine, where bulkhead's run
# passed) is shown, not counted, since bulkhead did not do worse there.
differ=0
runc_only=0
printf '%-44s %-16s %-16s\n' PROGRAM "runc" "bulkhead(audit)"
declare -A full=([runc]=0 [bulkhead-audit]=0) oks=([runc]=0 [bulkhead-audit]=0) totals=([runc]=0 [bulkhead-audit]=0)
for name in "${programs[@]}"; do
	file=${name//\//_}.tap
	a=$(cat "$work/runc/$file.result")
	b=$(cat "$work/bulkhead-audit/$file.result")
	mark=""
	if ! same "$name"; then
		if only_runc "$name"; then
			mark="  <-- only runc failed more"
			runc_only=$((runc_only + 1))
		else
			mark="  <-- differs"
			differ=$((differ + 1))
		fi
	fi
	printf '%-44s %-16s %-16s%s\n' "$name" "$a" "$b" "$mark"
	if [ -n "$mark" ]; then
		LC_ALL=C comm -13 "$work/runc/$file.failures" "$work/bulkhead-audit/$file.failures" | sed 's/^/    only bulkhead failed: /'
		LC_ALL=C comm -23 "$work/runc/$file.failures" "$work/bulkhead-audit/$file.failures" | sed 's/^/    only runc failed:     /'
	fi
	for pass in runc bulkhead-audit; do
		tap=$work/$pass/$file
		[[ $(cat "$tap.result") == pass:* ]] && full[$pass]=$((full[$pass] + 1))
		oks[$pass]=$((oks[$pass] + $(grep -c '^ok ' "$tap" || true)))
		totals[$pass]=$((totals[$pass] + $(grep -cE '^(not )?ok ' "$tap" || true)))
	done
done
echo
for pass in runc bulkhead-audit; do
	printf '%-16s %d of %d programs pass fully; %d of %d TAP tests ok\n' \
		"$pass:" "${full[$pass]}" "${#programs[@]}" "${oks[$pass]}" "${totals[$pass]}"
done
echo "TAP output: $work/runc/ and $work/bulkhead-audit/; bulkhead's audit log: $work/audit.jsonl"
if [ "$runc_only" -gt 0 ]; then
	echo "conformance: in $runc_only program(s) plain runc failed tests bulkhead in audit mode passed (listed above)" >&2
fi
if [ "$differ" -gt 0 ]; then
	echo "conformance: $differ program(s) differ between runc and bulkhead in audit mode" >&2
	exit 1
fi
echo "conformance: bulkhead in audit mode fails no test that runc passes"
