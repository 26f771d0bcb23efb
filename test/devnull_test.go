package test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// runsc gives every stdio descriptor of create, run and exec to the
// sandbox's host user (nobody), /dev/null included, where runc leaves
// /dev/null alone: `bulkhead run </dev/null` on runsc made the host's
// /dev/null 65534's, which could then chmod it for every process on the
// host. The host's /dev/null stays root's through run, create, exec and
// an egress container's start on both backends.
func TestDevNullStaysRoots(t *testing.T) {
	needRoot(t, "runc", "runsc", "ip", "unshare", "openssl", "curl")
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	owner := func() uint32 {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(null.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return st.Uid
	}
	if uid := owner(); uid != 0 {
		// Left so by an earlier build: the host's to have back.
		t.Logf("/dev/null was uid %d's before the test; giving it back to root", uid)
		if err := os.Chown(os.DevNull, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.Chown(os.DevNull, 0, 0) })
	withNull := func(t *testing.T, args ...string) {
		t.Helper()
		r := binaries.Cmd{StdinFile: null}.Run(t, binaries.Bulkhead(t), args...)
		if r.Code != 0 {
			t.Fatalf("bulkhead %v with stdin /dev/null: exit %d\n%s", args, r.Code, r.Stderr)
		}
		if uid := owner(); uid != 0 {
			t.Fatalf("after bulkhead %v with stdin /dev/null: the host's /dev/null is uid %d's", args, uid)
		}
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			g := []string{"--root", stateRoot(t), "--backend", backend}
			withNull(t, append(g, "run", "--bundle", bundle.New(t, []string{"true"}), uniqueID("null-run-"+backend))...)
			id := uniqueID("null-exec-" + backend)
			withNull(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "600"}), id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			withNull(t, append(g, "start", id)...)
			withNull(t, append(g, "exec", id, "true")...)

			// An egress container's start runs the forwarder and its check
			// through runsc exec with descriptors of bulkhead's own.
			h := newEgressHost(t)
			config, _, hosts := egressConfig(t, h, "")
			eg := []string{"--config", config, "--root", stateRoot(t), "--backend", backend}
			eid := uniqueID("null-egress-" + backend)
			if r := createWithHosts(t, hosts, append(eg, "create", "--bundle", egressBundle(t, h), eid)...); r.code != 0 {
				t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
			}
			t.Cleanup(func() { bulkhead(t, "", append(eg, "delete", "--force", eid)...) })
			withNull(t, append(eg, "start", eid)...)

			// runsc hands a pod member's start its stdio.
			p := startPodSandbox(t, g, "null-pod-"+backend)
			member := p.createMember(t, "null-member-"+backend, []string{"sleep", "600"}, backend == "runc")
			withNull(t, append(g, "start", member)...)
		})
	}
}

// runsc creates a container of a gVisor pod only at start, with start's
// stdio, which it gives to the container's user for good: start judges
// them as create judges its own. A root-only file stays root's, and the
// member does not read it.
func TestPodMemberStartStdio(t *testing.T) {
	needRoot(t, "runsc")
	g := []string{"--root", stateRoot(t), "--backend", "runsc"}
	p := startPodSandbox(t, g, "start-stdio")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := p.createMember(t, "start-stdio", []string{"cat"}, false)
	r := binaries.Cmd{StdinFile: f}.Run(t, binaries.Bulkhead(t), append(g, "start", id)...)
	var st syscall.Stat_t
	if err := syscall.Stat(secret, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 0 || st.Gid != 0 {
		t.Fatalf("start with a root-only file on stdin (exit %d): the file is now %d:%d's\n%s", r.Code, st.Uid, st.Gid, r.Stderr)
	}
	if r.Code == 0 || !strings.Contains(r.Stderr, "stdin") {
		t.Fatalf("start with a root-only file on stdin: exit %d, want a refusal naming stdin\n%s", r.Code, r.Stderr)
	}
	// A pipe is the container's to read.
	r = binaries.Cmd{Stdin: "hello\n"}.Run(t, binaries.Bulkhead(t), append(g, "start", id)...)
	if r.Code != 0 {
		t.Fatalf("start with a pipe on stdin: exit %d\n%s", r.Code, r.Stderr)
	}
}
