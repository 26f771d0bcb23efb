#!/usr/bin/env bash
# Run Kubernetes' CRI validation suite (critest, from cri-tools) through
# containerd's CRI plugin against the runc handler and against bulkhead's
# handler, in audit and in enforce mode, on containerd 2.x and 1.6.
#
# No registry outside is reachable here, so the images critest pulls are
# stand-ins built from this machine's busybox-static and served by a small
# registry on 127.0.0.1 (hack/critest-registry); containerd's registry host
# configuration (hosts.toml) sends gcr.io, registry.k8s.io and k8s.gcr.io
# to it. Each pass gets a fresh private containerd.
#
# The containerd versions run side by side, each in a network namespace of
# its own (named after this script's pid, so that runs from two clones do
# not meet either) with its own registry, CNI bridge and iptables: critest
# binds fixed ports on 127.0.0.1 (12001 and 12002 for port forwarding, a
# host port of 12000) that two suites in one namespace would both want.
# containerd, its registry and critest enter it with nsenter --net only,
# never ip netns exec, whose new mount namespace would change what the
# mount propagation tests see. On the way out the namespace goes with
# whatever is still in it.
#
# Verdicts, per containerd version:
#   - audit: bulkhead hands the caller's spec over unchanged, so a test it
#     fails that runc passes is bulkhead's own doing and fails the run
#     (runc failing alone is shown, not counted, as in hack/conformance.sh);
#   - enforce: every test runc passes and bulkhead fails must be listed in
#     docs/critest-differences.md with the rule that refuses it and why;
#     an unlisted difference fails the run, and so does a listed test
#     that bulkhead passes; a listed test runc failed this run is shown
#     as not compared (runc failing says nothing about the list);
#   - root: of the tests the enforce list explains by the identity rule
#     (user), each runc passes must pass with uid 0; the others must stay
#     listed.
# A test that fails a verdict is run once more on its own in a fresh
# containerd (see engine_passes); passing then, it is shown, not counted.
#
# Usage: hack/critest.sh   (as root; `make conformance` builds first)
# Environment:
#   CRITEST_DIR       work directory, kept between runs so critest, the
#                     registry and the images are built once
#                     (default: /var/tmp/bulkhead-critest)
#   CRITEST_VERSION   cri-tools version (default: v1.37.0)
#   CRITEST_ENGINES   which containerd versions to run (default: "2 1.6")
#   CRITEST_PASSES    which passes (default: "runc audit enforce root")
#   CRITEST_FOCUS     ginkgo focus regexp (default: all)
#   CRITEST_COMPARE   only compare the results already in CRITEST_DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${CRITEST_DIR:-/var/tmp/bulkhead-critest}
version=${CRITEST_VERSION:-v1.37.0}
engines=${CRITEST_ENGINES:-2 1.6}
passes=${CRITEST_PASSES:-runc audit enforce root}
# The root pass: enforce mode with the sandbox user 0 instead of 65534
# (still no capability), over the tests whose host directories only root
# may read; it shows that what the identity rule refuses there is all the
# default profile refuses.
root_focus='Container Mount Propagation|should support adding volume and device|should support seccomp localhost profile'

focus=${CRITEST_FOCUS:-}
bin=$here/bin
list=$here/docs/critest-differences.md

die() { echo "critest: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "must run as root: the suite creates pods"
[ -x "$bin/bulkhead" ] && [ -x "$bin/containerd-shim-bulkhead-v2" ] || die "no bulkhead binaries in $bin (run make build)"
[ -x /bin/busybox ] || die "busybox-static not found (hack/install-deps.sh installs it)"
command -v jq >/dev/null || die "jq not found (hack/install-deps.sh installs it)"
[ -x /usr/lib/cni/bridge ] || bash "$here/hack/install-deps.sh" containernetworking-plugins >&2
runc=$(command -v runc) || die "runc not found (hack/install-deps.sh installs it)"
mkdir -p "$work"

# 1. critest itself: cmd/critest is a Go test package.
critest=$work/critest.$version
if [ ! -x "$critest" ]; then
	echo "critest: building sigs.k8s.io/cri-tools@$version cmd/critest" >&2
	moddir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/cri-tools@$version" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$moddir" ] || die "go mod download sigs.k8s.io/cri-tools@$version failed"
	(cd "$moddir" && GOFLAGS=-mod=mod go test -c -o "$critest.tmp" ./cmd/critest)
	mv "$critest.tmp" "$critest"
fi

# Everything started here is stopped on the way out, by pid, then what the
# pass under way left (see stop_pass) and the network namespace of the
# containerd version under way (see drop_netns). The script itself waits
# for the versions' subshells to finish their own cleaning.
pids=()
current=
netns=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait
	[ -z "$current" ] || stop_pass "$current"
	[ -z "$netns" ] || drop_netns "$netns"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# stop_pass DIR: the shims of the containerd whose state is in DIR (found
# by its socket), the containers it left (found by their bundles), its
# mounts and DIR itself. bulkhead's containers are deleted through
# bulkhead, which also unmounts the pins it keeps in its own state
# directory (their bundle there is bulkhead's, so only its record names
# DIR).
stop_pass() {
	local dir=$1 root=$1/state/runc/k8s.io p id rec
	for p in $(pgrep -f -- "-address $dir/containerd.sock" || true); do kill "$p" 2>/dev/null || true; done
	for rec in "$root"/bulkhead/*/record.json; do
		jq -e --arg d "$dir/" '.bundle | startswith($d)' "$rec" >/dev/null 2>&1 || continue
		BULKHEAD_CONFIG=$work/bulkhead-enforce.toml "$bin/bulkhead" --root "$root" delete --force "$(jq -r .id "$rec")" >/dev/null 2>&1 || true
	done
	for r in "$root" "$root/runc"; do
		for id in $("$runc" --root "$r" list 2>/dev/null | awk -v d="$dir/" 'index($4, d) == 1 { print $1 }'); do
			"$runc" --root "$r" delete --force "$id" >/dev/null 2>&1 || true
		done
	done
	{ grep -o " $dir/[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	rm -rf "$dir"
	current=
}

# drop_pods NETNS: a containerd stopped while pods were up leaves their
# network namespaces mounted in /run/netns; those with a veth pair ending
# in NETNS are its pods. Then the CNI bridge, so that the next pass starts
# on a new one.
drop_pods() {
	local pod
	for pod in $(ip -n "$1" netns list-id 2>/dev/null | sed -n 's/.*iproute2 netns name: \(.*\))$/\1/p'); do
		ip netns del "$pod" 2>/dev/null || true
	done
	ip -n "$1" link del bhcritest 2>/dev/null || true
}

# drop_netns NETNS: what still runs in it (nothing should, once stop_pass
# is done: a host-network pod's process would), its pods' namespaces and
# NETNS itself.
drop_netns() {
	local p
	for p in $(ip netns pids "$1" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
	drop_pods "$1"
	ip netns del "$1" 2>/dev/null || true
	netns=
}

if [ -z "${CRITEST_COMPARE:-}" ]; then
# 2. The registry and the stand-in images.
(cd "$here/hack/critest-registry" && GOFLAGS=-mod=mod go build -o "$work/critest-registry" .)
images=$work/images
rm -rf "$images"
mkdir -p "$images"
# base: busybox-static with one link per applet and the users critest's
# images name (www-data is uid 33 in busybox's own image).
base=$images/base
mkdir -p "$base"/{bin,sbin,etc,dev,proc,sys,tmp,root,usr/bin,var/run,www}
cp /bin/busybox "$base/bin/busybox"
# Hard links, as in busybox's own image: critest masks /bin/ls, which
# through a symbolic link would mask busybox itself.
for applet in $(/bin/busybox --list); do
	[ "$applet" = busybox ] || ln -f "$base/bin/busybox" "$base/bin/$applet"
done
# Tools critest calls that Debian's busybox-static lacks: pgrep (processes
# whose name matches the pattern) and ipcs (the System V shared
# memory the IPC namespace shows).
cat >"$base/bin/pgrep" <<'EOS'
#!/bin/sh
ps -o pid,comm | awk -v p="$1" 'NR > 1 && $2 ~ p { print $1; n++ } END { exit n == 0 }'
EOS
cat >"$base/bin/ipcs" <<'EOS'
#!/bin/sh
cat /proc/sysvipc/shm
EOS
# A web server that cannot listen (port 80 needs a capability the policy
# drops) still leaves a running container, so that exec and process tests
# see the container, and only the network tests see the server missing.
cat >"$base/bin/web" <<'EOS'
#!/bin/sh
httpd -f -p "$1" -h /www &
wait
while :; do sleep 3600; done
EOS
chmod 0755 "$base/bin/pgrep" "$base/bin/ipcs" "$base/bin/web"
printf 'root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www-data:/var/www:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$base/etc/passwd"
printf 'root:x:0:\nwww-data:x:33:\nusers:x:100:\nnogroup:x:65534:\n' >"$base/etc/group"
echo '<html><body>It works!</body></html>' >"$base/www/index.html"
chmod 1777 "$base/tmp"
chmod 0777 "$base/var/run"
cp -a "$base" "$images/predefined"
echo 'default-user:x:1000:1000::/home/default-user:/bin/sh' >>"$images/predefined/etc/passwd"
printf 'default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n' >>"$images/predefined/etc/group"
# Every repository gets an image of its own: critest counts the tags of
# the one it pulled.
for n in 1 2 3 latest tag-test tag-all; do
	cp -a "$base" "$images/test-$n"
	echo "$n" >"$images/test-$n/test-$n"
done
mkdir -p "$images/pause"
CGO_ENABLED=0 go build -C "$here" -ldflags '-s -w' -o "$images/pause/pause" ./test/cri/pause
staging=k8s-staging-cri-tools
e2e=e2e-test-images
# nginx and httpd stand-ins: busybox's httpd, and for nginx the pid file
# critest's namespace tests wait for.
# The script stays the process named nginx, and its arguments name a
# master process, as critest's pid namespace tests look for.
cp -a "$base" "$images/nginx"
cat >"$images/nginx/bin/nginx" <<'EOS'
#!/bin/sh
[ "$1" = "master process" ] || exec /bin/nginx "master process"
echo $$ >/var/run/nginx.pid
httpd -f -p 80 -h /www &
wait
while :; do sleep 3600; done
EOS
chmod 0755 "$images/nginx/bin/nginx"
cat >"$images/list" <<EOF
pause:3.9 $images/pause cmd=/pause
pause:3.10 same-as pause:3.9
pause:3.6 same-as pause:3.9
$e2e/busybox:1.29-2 $base cmd=/bin/sh
$e2e/nginx:1.14-2 $images/nginx cmd=/bin/nginx
$e2e/httpd:2.4.39-4 $base cmd=/bin/web,80
$staging/hostnet-nginx-amd64:latest $base cmd=/bin/web,12003
$staging/test-image-latest:latest $images/test-latest cmd=/bin/sh
$staging/test-image-tag:test $images/test-tag-test cmd=/bin/sh
$staging/test-image-tag:all $images/test-tag-all cmd=/bin/sh
$staging/test-image-1:latest $images/test-1 cmd=/bin/sh
$staging/test-image-2:latest $images/test-2 cmd=/bin/sh
$staging/test-image-3:latest $images/test-3 cmd=/bin/sh
$staging/test-image-tags:1 same-as $staging/test-image-1:latest
$staging/test-image-tags:2 same-as $staging/test-image-1:latest
$staging/test-image-tags:3 same-as $staging/test-image-1:latest
$staging/test-image-user-uid:latest $base user=1002 cmd=/bin/sh
$staging/test-image-user-username:latest $base user=www-data cmd=/bin/sh
$staging/test-image-user-uid-group:latest $base user=1003:users cmd=/bin/sh
$staging/test-image-user-username-group:latest $base user=www-data:users cmd=/bin/sh
$staging/test-image-predefined-group:latest $images/predefined user=1000 cmd=/bin/sh
EOF

# Every containerd version's network namespace has a registry of its own
# on this address (see start_registry).
registry=127.0.0.1:5000

# hosts.toml: every registry critest names goes to the local one; a pull
# from anywhere else fails, as it would here anyway.
hosts=$work/hosts.d
rm -rf "$hosts"
for name in gcr.io registry.k8s.io k8s.gcr.io; do
	mkdir -p "$hosts/$name"
	cat >"$hosts/$name/hosts.toml" <<EOF
server = "http://$registry"

[host."http://$registry"]
  capabilities = ["pull", "resolve"]
EOF
done
fi

# bulkhead's configurations: the default profile (enforce), the same in
# audit mode, and in enforce mode with uid and gid 0 (root). Only root may
# write them.
for mode in enforce audit root; do
	cat >"$work/bulkhead-$mode.toml" <<EOF
# Written by hack/critest.sh.
default_profile = "critest"
audit_log = "$work/audit-$mode.jsonl"

[backends.runc]
path = "$runc"

[profiles.critest]
mode = "$([ "$mode" = root ] && echo enforce || echo "$mode")"
# critest puts every pod below /test (its test.slice, translated where
# systemd does not run): the shared parent this host declares.
cgroup_parents = ["/docker", "/kubepods", "/kubepods/burstable", "/kubepods/besteffort", "/k8s.io", "/default", "/test"]
$([ "$mode" = root ] && printf 'uid = 0\ngid = 0\n')
EOF
	chmod 0644 "$work/bulkhead-$mode.toml"
done

# containerd_config VERSION DIR SOCKET: the CRI config of one pass, with a
# runc handler and bulkhead's (no options table: see README).
containerd_config() {
	local v=$1 dir=$2 sock=$3 cni=$2/cni
	# The bridge, its subnet and the port mappings' iptables rules are in
	# the version's network namespace: the same names serve every version
	# and every run.
	mkdir -p "$cni"
	cat >"$cni/10-critest.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "critest", "plugins": [
  {"type": "bridge", "bridge": "bhcritest", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.250.77.0/24"}]], "dataDir": "$dir/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}
]}
EOF
	if [ "$v" = 2 ]; then
		cat <<EOF
version = 3
root = "$dir/root"
state = "$dir/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = 'registry.k8s.io/pause:3.9'
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$hosts"
[plugins.'io.containerd.cri.v1.runtime']
  # the pause container asks for oom_score_adj -998; root here lacks
  # CAP_SYS_RESOURCE
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = 'io.containerd.runc.v2'
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.bulkhead]
    runtime_type = 'io.containerd.bulkhead.v2'
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = "$cni"
EOF
	else
		cat <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$hosts"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.bulkhead]
      runtime_type = "io.containerd.bulkhead.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cni"
EOF
	fi
}

# run_pass ENGINE PASS [FOCUS OUT]: a fresh containerd, critest with one
# handler, the results as "STATE<TAB>TEST" lines in $work/ENGINE-PASS/results
# (or in OUT, with only the tests FOCUS matches). Both run in the network
# namespace $netns.
run_pass() {
	local engine=$1 pass=$2 out=${4:-$work/$1-$2} bindir handler=bulkhead mode=$2
	case $engine in
	2) bindir=$(bash "$here/hack/install-containerd2.sh") ;;
	1.6) bindir=/usr/bin ;;
	esac
	[ "$pass" = runc ] && handler=runc mode=enforce
	local only=$focus
	[ "$pass" = root ] && only=${focus:-$root_focus}
	[ -z "${3:-}" ] || only=$3
	rm -rf "$out"
	mkdir -p "$out"
	local dir sock
	# Below /var/tmp, one of the default profile's bind_roots: the engine's own
	# files of a private containerd are recognised only at the usual paths.
	dir=$(mktemp -d /var/tmp/bulkhead-critest-run.XXXXXX)
	current=$dir
	sock=$dir/containerd.sock
	containerd_config "$engine" "$dir" "$sock" >"$dir/config.toml"
	PATH="$bin:$bindir:$PATH" BULKHEAD_CONFIG="$work/bulkhead-$mode.toml" \
		nsenter --net="/run/netns/$netns" \
		"$bindir/containerd" --config "$dir/config.toml" >"$out/containerd.log" 2>&1 &
	local cpid=$!
	pids+=("$cpid")
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.2; done
	[ -S "$sock" ] || die "containerd $engine did not start: $(tail -5 "$out/containerd.log")"
	local start=$SECONDS code=0
	echo "critest: containerd $engine, $pass: running (log: $out/critest.log)" >&2
	# In the background, so that a signal to this shell is handled at once
	# (cleanup stops critest) rather than once critest is done. Its host
	# directories (os.MkdirTemp) go below the pass's own directory: a test
	# that fails midway leaves shared mounts there, which stop_pass removes.
	mkdir -p "$dir/tmp"
	TMPDIR=$dir/tmp nsenter --net="/run/netns/$netns" \
		"$critest" --runtime-endpoint "unix://$sock" --image-endpoint "unix://$sock" \
		--runtime-handler "$handler" --ginkgo.json-report "$out/report.json" \
		${only:+--ginkgo.focus "$only"} --ginkgo.no-color --ginkgo.timeout 3h >"$out/critest.log" 2>&1 &
	local tpid=$!
	pids+=("$tpid")
	wait "$tpid" || code=$?
	echo "critest: containerd $engine, $pass: exit $code after $((SECONDS - start)) s" >&2
	kill "$cpid" 2>/dev/null || true
	wait "$cpid" 2>/dev/null || true
	stop_pass "$dir"
	drop_pods "$netns"
	[ -s "$out/report.json" ] || die "containerd $engine, $pass: critest wrote no report (exit $code; see $out/critest.log)"
	jq -r '.[].SpecReports[] | select(.LeafNodeType == "It") |
		[.State, ((.ContainerHierarchyTexts // []) + [.LeafNodeText] | join(" "))] | @tsv' \
		"$out/report.json" | LC_ALL=C sort -t "$(printf '\t')" -k2 >"$out/results"
}

# failed ENGINE PASS: the names of the tests that failed (not skipped),
# but for those that passed when run again (see engine_passes).
failed() {
	awk -F '\t' '$1 != "passed" && $1 != "skipped" { print $2 }' "$work/$1-$2/results" |
		LC_ALL=C sort -u | LC_ALL=C comm -23 - <(again "$1" "$2")
}
passed() { { awk -F '\t' '$1 == "passed" { print $2 }' "$work/$1-$2/results"; again "$1" "$2"; } | LC_ALL=C sort -u; }
# again ENGINE PASS: the tests that failed in the pass and passed when run
# again on their own.
again() { LC_ALL=C sort -u "$work/$1-$2/passed-again" 2>/dev/null || true; }
count() { awk -F '\t' -v s="$3" '$1 == s' "$work/$1-$2/results" | wc -l; }

# listed ENGINE [RULE]: the tests docs/critest-differences.md lists for it
# (table rows: | test | containerd versions | rule | why |), only those
# of RULE when given.
listed() {
	awk -F '|' -v e="$1" -v rule="${2:-}" 'NR > 2 && /^\|/ {
		t = $2; v = $3; r = $4; gsub(/^ +| +$/, "", t); gsub(/`/, "", t); gsub(/ /, "", r)
		if (t == "test" || t ~ /^-+$/) next
		if (rule != "" && r != rule) next
		n = split(v, vs, ",")
		for (i = 1; i <= n; i++) { x = vs[i]; gsub(/ /, "", x); if (x == e) print t }
	}' "$list" | LC_ALL=C sort -u
}

# unexpected ENGINE PASS: the tests of the pass whose failure fails the
# run (the verdicts at the top): for audit those runc passes; for enforce
# those runc passes that the list does not explain; for root those the
# list explains by the identity rule and those it does not list at all.
unexpected() {
	local engine=$1
	case $2 in
	audit) LC_ALL=C comm -12 <(passed "$engine" runc) <(failed "$engine" audit) ;;
	enforce) LC_ALL=C comm -23 <(LC_ALL=C comm -12 <(passed "$engine" runc) <(failed "$engine" enforce)) <(listed "$engine") ;;
	root)
		LC_ALL=C sort -u <(LC_ALL=C comm -12 <(LC_ALL=C comm -12 <(passed "$engine" runc) <(failed "$engine" root)) <(listed "$engine" user)) \
			<(LC_ALL=C comm -23 <(LC_ALL=C comm -12 <(passed "$engine" runc) <(failed "$engine" root)) <(listed "$engine"))
		;;
	esac
}

# start_registry ENGINE: the registry of one containerd version, on
# $registry in its network namespace.
start_registry() {
	local log=$work/registry-$1
	nsenter --net="/run/netns/$netns" \
		"$work/critest-registry" -addr "$registry" -images "$images/list" >"$log.out" 2>"$log.err" &
	local rpid=$!
	pids+=("$rpid")
	for _ in $(seq 600); do
		grep -q ready "$log.out" 2>/dev/null && return
		kill -0 "$rpid" 2>/dev/null || die "containerd $1: the registry ended: $(tail -3 "$log.err")"
		sleep 0.2
	done
	die "containerd $1: the registry did not store its images in 120 s"
}

# engine_passes ENGINE: every pass on one containerd version, in order, in
# a network namespace of its own with its own registry. The versions run
# side by side, so the suite takes the time of the slower one; a subshell
# cleans up what it started itself.
engine_passes() {
	pids=()
	current=
	netns=
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	local name=bhcritest-$$-$1 pass
	# $$ is the script's pid, so no other run has this name; one left by a
	# run that was killed outright may still hold its containerd.
	[ ! -e "/run/netns/$name" ] || die "containerd $1: network namespace $name exists already (a run killed before it could clean up?)"
	ip netns add "$name" || die "containerd $1: ip netns add $name failed"
	netns=$name
	ip -n "$netns" link set lo up
	start_registry "$1"
	for pass in $passes; do
		run_pass "$1" "$pass"
	done
	# Some of critest's tests race containerd's own handling of a task's
	# exit (one removes a container whose process may still be exiting),
	# so a pass's unexpected failures are run once more on their own, in
	# a fresh containerd: those that pass then are shown and not counted,
	# those that fail again fail the run. runc's failures are not run
	# again: they are shown, never counted.
	[ -f "$work/$1-runc/results" ] || return 0
	local names
	for pass in $passes; do
		[ "$pass" != runc ] || continue
		names=$(unexpected "$1" "$pass")
		[ -n "$names" ] || continue
		run_pass "$1" "$pass" "($(echo "$names" | sed 's/[][\.|$^?*+(){}]/\\&/g' | paste -sd '|'))\$" "$work/$1-$pass-again"
		awk -F '\t' '$1 == "passed" { print $2 }' "$work/$1-$pass-again/results" |
			LC_ALL=C sort -u | LC_ALL=C comm -12 - <(echo "$names") >"$work/$1-$pass/passed-again"
	done
}

if [ -z "${CRITEST_COMPARE:-}" ]; then
	epids=()
	for engine in $engines; do
		engine_passes "$engine" &
		epids+=($!)
		pids+=($!)
	done
	rc=0
	for p in "${epids[@]}"; do
		wait "$p" || rc=$?
	done
	[ "$rc" = 0 ] || die "a containerd version's passes did not finish (exit $rc); see the lines above"
fi

bad=0
for engine in $engines; do
	[ -f "$work/$engine-runc/results" ] || continue
	echo
	echo "containerd $engine:"
	for pass in runc audit enforce root; do
		[ -f "$work/$engine-$pass/results" ] || continue
		printf '  %-18s %3d passed, %3d failed, %3d skipped\n' "$pass" \
			"$(passed "$engine" "$pass" | wc -l)" "$(failed "$engine" "$pass" | wc -l)" "$(count "$engine" "$pass" skipped)"
		again "$engine" "$pass" | sed 's/^/    failed, then passed when run again (shown, not counted): /'
	done
	if [ -f "$work/$engine-audit/results" ]; then
		worse=$(unexpected "$engine" audit)
		better=$(LC_ALL=C comm -12 <(failed "$engine" runc) <(passed "$engine" audit))
		[ -z "$better" ] || echo "$better" | sed 's/^/    only runc failed (shown, not counted): /'
		if [ -n "$worse" ]; then
			echo "$worse" | sed 's/^/    audit fails, runc passes: /'
			bad=1
		else
			echo "  audit: fails no test that runc passes"
		fi
	fi
	if [ -f "$work/$engine-enforce/results" ]; then
		differ=$(LC_ALL=C comm -12 <(passed "$engine" runc) <(failed "$engine" enforce))
		unlisted=$(unexpected "$engine" enforce)
		# Only bulkhead passing a listed test shows the row is stale; runc
		# failing it shows nothing about the row, and a test the pass did
		# not run (a focus, a skip) shows nothing either.
		stale=$(LC_ALL=C comm -12 <(listed "$engine") <(passed "$engine" enforce))
		uncompared=$(LC_ALL=C comm -23 <(LC_ALL=C comm -12 <(listed "$engine") <(failed "$engine" runc)) <(echo "$stale" | sed '/^$/d'))
		unrun=$(LC_ALL=C comm -23 <(listed "$engine") <(LC_ALL=C sort -u <(passed "$engine" enforce) <(failed "$engine" enforce) <(failed "$engine" runc)))
		echo "  enforce: $(echo "$differ" | sed '/^$/d' | wc -l) tests runc passes fail on bulkhead; each is explained in docs/critest-differences.md unless shown below"
		if [ -n "$unlisted" ]; then
			echo "$unlisted" | sed 's/^/    not in the list: /'
			bad=1
		fi
		if [ -n "$stale" ]; then
			echo "$stale" | sed 's/^/    listed, but bulkhead passes it: /'
			bad=1
		fi
		echo "$uncompared" | sed '/^$/d; s/^/    not compared this run: runc failed it: /'
		[ -z "$unrun" ] || echo "    $(echo "$unrun" | wc -l) listed tests not run in this pass (focus or skip)"
	fi
	if [ -f "$work/$engine-root/results" ]; then
		ran=$(awk -F '\t' '$1 != "skipped" { print $2 }' "$work/$engine-root/results" | LC_ALL=C sort -u)
		# Tests the root pass ran, runc passed and the list explains by
		# the identity rule: with uid 0 they must pass.
		byuser=$(listed "$engine" user)
		want=$(LC_ALL=C comm -12 <(LC_ALL=C comm -12 <(echo "$ran") <(passed "$engine" runc)) <(echo "$byuser" | sed '/^$/d'))
		still=$(LC_ALL=C comm -12 <(echo "$want" | sed '/^$/d') <(failed "$engine" root))
		other=$(LC_ALL=C comm -23 <(LC_ALL=C comm -12 <(passed "$engine" runc) <(failed "$engine" root)) <(listed "$engine"))
		echo "  root: $(echo "$want" | sed '/^$/d' | wc -l) tests the list explains by the identity rule ran with uid 0; $(echo "$still" | sed '/^$/d' | wc -l) of them still fail"
		if [ -n "$still$other" ]; then
			echo "$still" | sed '/^$/d; s/^/    fails with uid 0 too: /'
			echo "$other" | sed '/^$/d; s/^/    fails with uid 0, not in the list: /'
			bad=1
		fi
	fi
done
echo "results: $work/<containerd>-<pass>/results, critest logs beside them"
if [ "$bad" != 0 ]; then
	echo "critest: differences above" >&2
	exit 1
fi
echo "critest: every difference is explained"
