package test

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestPlainBindKeepsAHomePrivate: runc mounts a bind as root, past every
// directory above its source, so a bind below a home its owner keeps from
// others (0700) showed the job world-readable files no local user can
// reach (~/.npmrc's token, ~/.m2/settings.xml). Such binds are refused on
// both backends, as is any dot-entry of a home; a directory of a home
// others may enter is bound and shows what others may read.
func TestPlainBindKeepsAHomePrivate(t *testing.T) {
	home := fmt.Sprintf("/home/bh-test-%d", os.Getpid())
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			t.Cleanup(func() { os.RemoveAll(home) })
			for name, body := range map[string]string{".npmrc": "_authToken=npm_SECRET\n", ".m2/settings.xml": "<password>s</password>\n", "project/README": "public\n"} {
				p := filepath.Join(home, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(home, 0o700); err != nil {
				t.Fatal(err)
			}
			root := stateRoot(t)
			bind := func(src string) result {
				b := bundle.New(t, []string{"sh", "-c", "cat /data/* /data 2>/dev/null; true"}, func(s *rspec.Spec) {
					s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
				})
				return bulkhead(t, "", "--root", root, "--backend", backend, "run", "--bundle", b, uniqueID("home-"+backend))
			}
			for _, src := range []string{filepath.Join(home, ".npmrc"), filepath.Join(home, ".m2"), filepath.Join(home, "project")} {
				r := bind(src)
				if r.code == 0 || !strings.Contains(r.stderr, "rule host_mounts") || strings.Contains(r.stdout, "SECRET") {
					t.Errorf("%s below a 0700 home: exit %d, stdout %q\n%s", src, r.code, r.stdout, r.stderr)
				}
			}
			if err := os.Chmod(home, 0o755); err != nil {
				t.Fatal(err)
			}
			if r := bind(filepath.Join(home, "project")); r.code != 0 || !strings.Contains(r.stdout, "public") {
				t.Errorf("a directory of a home others may enter: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}
			if r := bind(filepath.Join(home, ".npmrc")); r.code == 0 || !strings.Contains(r.stderr, "dot-entry") {
				t.Errorf("~/.npmrc of a home others may enter: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestHomeReachedElsewhereStaysPrivate: a home is the same home where it
// is mounted again (an operator's bind of /home/alice at /srv) and where
// /home/<name> is a symlink (an LDAP site's homes elsewhere): a plain bind
// there is refused as it is at /home/<name>, and so is a workspace in a
// dot-entry of it, whose id map would show the owner's 0600 files.
func TestHomeReachedElsewhereStaysPrivate(t *testing.T) {
	pid := os.Getpid()
	home := fmt.Sprintf("/home/bh-test-m%d", pid)
	mirror := fmt.Sprintf("/srv/bh-test-mirror-%d", pid)
	users := fmt.Sprintf("/srv/bh-test-users-%d", pid)
	linked := fmt.Sprintf("/home/bh-test-l%d", pid)
	dataset := fmt.Sprintf("/srv/bh-test-share-%d", pid)
	group := fmt.Sprintf("/home/bh-test-g%d", pid)
	ownFS := filepath.Join(group, "dave")
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			t.Cleanup(func() {
				exec.Command("umount", mirror).Run()
				os.RemoveAll(mirror)
				os.Remove(linked)
				os.RemoveAll(users)
				os.RemoveAll(dataset)
				os.RemoveAll(group)
				os.RemoveAll(home)
			})
			for _, h := range []string{home, filepath.Join(users, "bob")} {
				for name, body := range map[string]string{".m2/token": "SECRET-0600\n", "proj/notes": "PRIVATE\n"} {
					p := filepath.Join(h, name)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Chown(p, 1000, 1000); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chmod(filepath.Join(h, "proj/notes"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := exec.Command("chown", "-R", "1000:1000", h).Run(); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(h, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(mirror, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mount", "--bind", home, mirror).CombinedOutput(); err != nil {
				t.Fatalf("mount --bind: %v %s", err, out)
			}
			if err := os.Symlink(filepath.Join(users, "bob"), linked); err != nil {
				t.Fatal(err)
			}
			root := stateRoot(t)
			run := func(b string) result {
				return bulkhead(t, "", "--root", root, "--backend", backend, "run", "--bundle", b, uniqueID("homeel-"+backend))
			}
			for _, src := range []string{filepath.Join(mirror, "proj"), filepath.Join(mirror, ".m2"), filepath.Join(linked, "proj"), filepath.Join(linked, ".m2")} {
				b := bundle.New(t, []string{"sh", "-c", "cat /data/*"}, func(s *rspec.Spec) {
					s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
				})
				if r := run(b); r.code == 0 || !strings.Contains(r.stderr, "rule host_mounts") {
					t.Errorf("a plain bind of %s: exit %d, stdout %q\n%s", src, r.code, r.stdout, r.stderr)
				}
			}
			for _, src := range []string{filepath.Join(mirror, ".m2"), filepath.Join(linked, ".m2")} {
				if r := run(workspaceBundle(t, src, "cat /workspace/token")); r.code == 0 || strings.Contains(r.stdout, "SECRET") {
					t.Errorf("a workspace of %s: exit %d, stdout %q\n%s", src, r.code, r.stdout, r.stderr)
				}
			}
			// A home on a filesystem of its own below /home/<group> (NFS,
			// a dataset per user), mounted again elsewhere: its own place
			// is judged as a home's.
			if err := os.MkdirAll(ownFS, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700,uid=1000,gid=1000", "bh-test-home", ownFS).CombinedOutput(); err != nil {
				t.Fatalf("mount tmpfs: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", ownFS).Run() })
			if err := os.MkdirAll(filepath.Join(ownFS, "private"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ownFS, "private", "secret"), []byte("DAVE-SECRET\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ownMirror := filepath.Join(mirror+"-own", "dave")
			if err := os.MkdirAll(ownMirror, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mount", "--bind", ownFS, ownMirror).CombinedOutput(); err != nil {
				t.Fatalf("mount --bind: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", ownMirror).Run(); os.RemoveAll(mirror + "-own") })
			b0 := bundle.New(t, []string{"sh", "-c", "cat /data/*"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: filepath.Join(ownMirror, "private"), Options: []string{"rbind", "ro"}})
			})
			if r := run(b0); r.code == 0 || strings.Contains(r.stdout, "DAVE-SECRET") {
				t.Errorf("a home of its own filesystem, mounted again: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}

			// A public dataset also bound into the private home (as HPC and
			// JupyterHub sites do) is refused at its own place too: a mount
			// inside a home cannot be told from the owner's own (a home on
			// a filesystem of its own below /home/staff, ~/.local on another
			// disk), so the refusal fails closed and says where.
			if err := os.MkdirAll(filepath.Join(dataset, "data"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dataset, "data", "README"), []byte("PUBLIC-DATA\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			inHome := filepath.Join(home, "proj", "data")
			if err := os.MkdirAll(inHome, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mount", "--bind", filepath.Join(dataset, "data"), inHome).CombinedOutput(); err != nil {
				t.Fatalf("mount --bind: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", inHome).Run() })
			b := bundle.New(t, []string{"sh", "-c", "cat /data/*"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: filepath.Join(dataset, "data"), Options: []string{"rbind", "ro"}})
			})
			if r := run(b); r.code == 0 || !strings.Contains(r.stderr, "is a mount of "+inHome) {
				t.Errorf("a public dataset also mounted in a private home: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestPlainBindKeepsAUsersDirectoryPrivate: what holds below a home holds
// below any directory a user keeps from others, wherever it lies: a bind
// of /tmp/<alice's 0700 directory>/sub showed the job alice's files, which
// no other local user can read. Root's own such directories (a harness's
// mktemp -d, every test's temporary directory) are the caller's.
func TestPlainBindKeepsAUsersDirectoryPrivate(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		private := filepath.Join(t.TempDir(), "alice")
		sub := filepath.Join(private, "sub")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "notes"), []byte("ALICE-PRIVATE\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(private, 1500, 1500); err != nil {
			t.Fatal(err)
		}
		chmod(t, private, 0o700)
		bind := func() result {
			b := bundle.New(t, []string{"sh", "-c", "cat /data/notes; true"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: sub, Options: []string{"rbind", "ro"}})
			})
			return bulkhead(t, "", append(g, "run", "--bundle", b, uniqueID("private-"+backend))...)
		}
		if r := bind(); r.code == 0 || !strings.Contains(r.stderr, "rule host_mounts") || !strings.Contains(r.stderr, "uid 1500's") || strings.Contains(r.stdout, "ALICE") {
			t.Errorf("below uid 1500's 0700 directory: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		chmod(t, private, 0o711)
		if r := bind(); r.code != 0 || !strings.Contains(r.stdout, "ALICE-PRIVATE") {
			t.Errorf("below a directory others may enter: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		// Others' x is not all: an ACL entry may keep a user out, and a
		// group its members (the kernel holds them to its bits alone).
		if err := unix.Setxattr(private, "system.posix_acl_access", posixACL(65534, 0, 1, 1), 0); err != nil {
			t.Fatalf("set an ACL on %s: %v", private, err)
		}
		if r := bind(); r.code == 0 || !strings.Contains(r.stderr, "its ACL may keep some users out") || strings.Contains(r.stdout, "ALICE") {
			t.Errorf("below uid 1500's 0711 directory whose ACL denies uid 65534: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		if err := unix.Removexattr(private, "system.posix_acl_access"); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(private, 1500, 65534); err != nil {
			t.Fatal(err)
		}
		chmod(t, private, 0o701)
		if r := bind(); r.code == 0 || !strings.Contains(r.stderr, "its group may not enter it") || strings.Contains(r.stdout, "ALICE") {
			t.Errorf("below uid 1500's 0701 directory of group 65534: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		// Root's 0750 that an ACL opens to uid 1500 (udisks's
		// /media/<user>) is hers; root's own without one is the caller's.
		if err := os.Chown(private, 0, 0); err != nil {
			t.Fatal(err)
		}
		chmod(t, private, 0o750)
		if err := unix.Setxattr(private, "system.posix_acl_access", posixACL(1500, 5, 5, 0), 0); err != nil {
			t.Fatalf("set an ACL on %s: %v", private, err)
		}
		if r := bind(); r.code == 0 || !strings.Contains(r.stderr, "with an ACL for some users") || strings.Contains(r.stdout, "ALICE") {
			t.Errorf("below root's 0750 with an ACL for uid 1500: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		if err := unix.Removexattr(private, "system.posix_acl_access"); err != nil {
			t.Fatal(err)
		}
		chmod(t, private, 0o750)
		if r := bind(); r.code != 0 || !strings.Contains(r.stdout, "ALICE-PRIVATE") {
			t.Errorf("below root's own 0750: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		// A group other than root's opens it to its members as an ACL
		// does (root:staff 0750).
		if err := os.Chown(private, 0, 50); err != nil {
			t.Fatal(err)
		}
		if r := bind(); r.code == 0 || !strings.Contains(r.stderr, "open to group 50") || strings.Contains(r.stdout, "ALICE") {
			t.Errorf("below root's 0750 of group 50: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		// An owner other than root kept out by its own bits.
		if err := os.Chown(private, 1500, 1500); err != nil {
			t.Fatal(err)
		}
		chmod(t, private, 0o055)
		if r := bind(); r.code == 0 || !strings.Contains(r.stderr, "its owner may not enter it") {
			t.Errorf("below uid 1500's 0055 directory: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
	})
}

// posixACL is the system.posix_acl_access value of u::rwx,
// user:<uid>:<named>, g::r-x, m::<mask>, o::<other>. The kernel reads the
// ACL only under a mask that is not empty.
func posixACL(uid uint32, named, mask, other uint16) []byte {
	const undefined = 0xffffffff
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 7, undefined}, {0x02, named, uid}, {0x04, 5, undefined}, {0x10, mask, undefined}, {0x20, other, undefined}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// TestCwdInAUsersPrivateDirectory: runc enters the working directory as
// root before it drops to the job's user, so a cwd in alice's 0700
// directory inside a bind of its open parent gave the job her files,
// which it could not reach by any path. Verification after create finds
// the cwd out of the user's reach and fails closed, and an exec's cwd
// there is refused before it runs; runsc refuses the cwd itself. A
// directory others may enter is the job's cwd.
func TestCwdInAUsersPrivateDirectory(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		parent, sub := alicesTree(t, "secret")
		run := func() result {
			b := bundle.New(t, []string{"cat", "secret"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: parent, Options: []string{"rbind", "ro"}})
				s.Process.Cwd = "/data/alice/sub"
			})
			return bulkhead(t, "", append(g, "run", "--bundle", b, uniqueID("cwd-"+backend))...)
		}
		chmod(t, filepath.Dir(sub), 0o700)
		r := run()
		if r.code == 0 || strings.Contains(r.stdout, "ALICE") || (backend == "runc" && !strings.Contains(r.stderr, "cwd reached")) {
			t.Errorf("cwd in uid 1500's 0700 directory: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		// An exec's cwd there is refused before runc runs: a short process
		// is done before the verification after start.
		b := bundle.New(t, []string{"sleep", "300"}, func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: parent, Options: []string{"rbind", "ro"}})
		})
		id := uniqueID("cwd-exec-" + backend)
		must(t, append(g, "run", "--detach", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		r = bulkhead(t, "", append(g, "exec", "--cwd", "/data/alice/sub", id, "cat", "secret")...)
		if r.code == 0 || strings.Contains(r.stdout, "ALICE") || (backend == "runc" && !strings.Contains(r.stderr, "rule cwd refuses process.cwd /data/alice/sub")) {
			t.Errorf("exec --cwd in uid 1500's 0700 directory: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}

		chmod(t, filepath.Dir(sub), 0o711)
		if r := run(); r.code != 0 || !strings.Contains(r.stdout, "ALICE-SECRET") {
			t.Errorf("cwd below a directory others may enter: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		if r := bulkhead(t, "", append(g, "exec", "--cwd", "/data/alice/sub", id, "cat", "secret")...); r.code != 0 || !strings.Contains(r.stdout, "ALICE-SECRET") {
			t.Errorf("exec --cwd below a directory others may enter: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		if backend != "runc" {
			return // runsc applies no host ACL (README)
		}
		// An ACL's entry for uid 65534 denies it what the others' --x
		// allows (mode 0711 shown): the kernel's rule, not the mode's.
		if err := unix.Setxattr(filepath.Dir(sub), "system.posix_acl_access", posixACL(65534, 0, 1, 1), 0); err != nil {
			t.Fatalf("set an ACL: %v", err)
		}
		if r := run(); r.code == 0 || strings.Contains(r.stdout, "ALICE") || !strings.Contains(r.stderr, "cwd reached") {
			t.Errorf("cwd below a directory whose ACL denies uid 65534: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		if r := bulkhead(t, "", append(g, "exec", "--cwd", "/data/alice/sub", id, "cat", "secret")...); r.code == 0 || strings.Contains(r.stdout, "ALICE") || !strings.Contains(r.stderr, "with an ACL) is not searchable by uid 65534") {
			t.Errorf("exec --cwd below a directory whose ACL denies uid 65534: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestExecCwdSwappedByTheJob: the job turns the link /tmp/d between its
// own directory and one inside alice's 0700 directory while execs ask for
// cwd /tmp/d. bulkhead judges the cwd before runc enters it, so runc is
// handed the directory judged, not a path the job can swap: no exec reads
// her file, and an exec that was judged on the job's directory runs there.
func TestExecCwdSwappedByTheJob(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		parent, sub := alicesTree(t, "f")
		chmod(t, filepath.Dir(sub), 0o700)
		swap := "mkdir -p /tmp/own && echo job-file > /tmp/own/f && while :; do ln -sfn /tmp/own /tmp/d; ln -sfn /data/alice/sub /tmp/d; done"
		b := bundle.New(t, []string{"sh", "-c", swap}, func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: parent, Options: []string{"rbind", "ro"}})
		})
		id := uniqueID("cwd-swap-" + backend)
		must(t, append(g, "run", "--detach", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		ran := 0
		for i := 0; i < 40; i++ {
			r := bulkhead(t, "", append(g, "exec", "--cwd", "/tmp/d", id, "cat", "f")...)
			if strings.Contains(r.stdout, "ALICE") {
				t.Fatalf("exec %d --cwd /tmp/d read alice's file: exit %d, stdout %q\n%s", i, r.code, r.stdout, r.stderr)
			}
			if r.code == 0 && strings.Contains(r.stdout, "job-file") {
				ran++
			}
		}
		if ran == 0 {
			t.Errorf("no exec of 40 ran in the job's own directory /tmp/d")
		}
		// A cwd whose way no user but root may change is handed to runc as
		// the path: the process gets no descriptor it did not ask for.
		if backend == "runc" {
			for cwd, want := range map[string]string{"/data": "no-fd-3", "/tmp/own": "/tmp/own"} {
				r := bulkhead(t, "", append(g, "exec", "--cwd", cwd, id, "sh", "-c", `readlink /proc/$$/fd/3 || echo no-fd-3`)...)
				if r.code != 0 || strings.TrimSpace(r.stdout) != want {
					t.Errorf("exec --cwd %s: descriptor 3 of the process: exit %d, stdout %q, want %q\n%s", cwd, r.code, r.stdout, want, r.stderr)
				}
			}
		}
		// A cwd that is not there is refused by name: on runc by bulkhead,
		// before runc runs; runsc looks for it in the sandbox's tree.
		want := "process.cwd /tmp/nope: there is no such directory in the container"
		if backend == "runsc" {
			want = `failed to find initial working directory "/tmp/nope"`
		}
		r := bulkhead(t, "", append(g, "exec", "--cwd", "/tmp/nope", id, "true")...)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("exec --cwd /tmp/nope: exit %d, want the cwd refused by name (%s)\n%s", r.code, want, r.stderr)
		}
		// runsc quotes the exec's argv: it must be one a person reads, not
		// the seccomp filter bulkhead's program installs (kilobytes).
		if len(r.stderr) > 1024 {
			t.Errorf("exec --cwd /tmp/nope: a refusal of %d bytes:\n%.300s...", len(r.stderr), r.stderr)
		}
		t.Logf("%s: %d of 40 execs ran in the job's directory", backend, ran)
	})
}

// alicesTree makes shared/alice/sub in a test directory, alice uid 1500's
// and open to all until a test closes it, with the file name in sub
// holding ALICE-SECRET; it returns shared and sub.
func alicesTree(t *testing.T, name string) (string, string) {
	t.Helper()
	parent := filepath.Join(t.TempDir(), "shared")
	sub := filepath.Join(parent, "alice", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, name), []byte("ALICE-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Dir(sub), 1500, 1500); err != nil {
		t.Fatal(err)
	}
	return parent, sub
}

// TestCwdOfARootJobWithoutCapabilities: a profile may run the job as
// uid 0, with every capability set empty all the same. The kernel then
// keeps alice's 0700 directory from it as from anyone, but runc enters
// the cwd with its capabilities: the cwd check must ask for the job as
// it runs, uid 0 without capabilities, not pass it for its uid.
func TestCwdOfARootJobWithoutCapabilities(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		parent, sub := alicesTree(t, "secret")
		chmod(t, filepath.Dir(sub), 0o700)
		dir := t.TempDir()
		config := filepath.Join(dir, "root.toml")
		body := fmt.Sprintf("audit_log = %q\n[profiles.default]\nuid = 0\ngid = 0\n", filepath.Join(dir, "audit.jsonl"))
		if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		g = append([]string{"--config", config}, g...)
		data := func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: parent, Options: []string{"rbind", "ro"}})
		}
		b := bundle.New(t, []string{"cat", "secret"}, data, func(s *rspec.Spec) { s.Process.Cwd = "/data/alice/sub" })
		r := bulkhead(t, "", append(g, "run", "--bundle", b, uniqueID("cwd-root-"+backend))...)
		if r.code == 0 || strings.Contains(r.stdout, "ALICE") || (backend == "runc" && !strings.Contains(r.stderr, "is not searchable by uid 0")) {
			t.Errorf("uid 0's cwd in uid 1500's 0700 directory: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		id := uniqueID("cwd-root-exec-" + backend)
		must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sleep", "300"}, data), id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		r = bulkhead(t, "", append(g, "exec", "--cwd", "/data/alice/sub", id, "sh", "-c", "id -u; cat secret")...)
		if r.code == 0 || strings.Contains(r.stdout, "ALICE") || (backend == "runc" && !strings.Contains(r.stderr, "is not searchable by uid 0")) {
			t.Errorf("exec --cwd of uid 0 in uid 1500's 0700 directory: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		if r := bulkhead(t, "", append(g, "exec", id, "id", "-u")...); r.code != 0 || strings.TrimSpace(r.stdout) != "0" {
			t.Errorf("the profile's job runs as uid 0: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
	})
}
