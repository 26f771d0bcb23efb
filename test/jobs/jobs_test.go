package jobs

import (
	"bulkhead.dev/bulkhead/test/jobimage"
	"path/filepath"
	"strings"
	"testing"
)

// hostEnv is the environment of a job run directly on the host: the same
// PATH, and a home of its own for the caches.
func hostEnv(t *testing.T) []string {
	return []string{jobPath, "HOME=" + t.TempDir()}
}

// TestJobsPassInsideTheBoundary: under the tests profile, on runc and on
// runsc, each job passes as it does on the host; with one test broken it
// fails with the host's exit status and the tool's own failure report,
// never with a boundary's error.
func TestJobsPassInsideTheBoundary(t *testing.T) {
	for _, backend := range []string{"runc", "runsc"} {
		for _, j := range jobimage.Jobs {
			t.Run(backend+"/"+j.Name, func(t *testing.T) {
				needTools(t, j.Tools...)
				b := newBox(t, backend)

				ws := checkout(t, j.Src, 65534, nil)
				id := jobID(j.Name)
				o := b.run(t, b.jobBundle(t, "tests", ws, j.Cwd, j.Args, nil), id)
				if o.code != 0 || !strings.Contains(o.output, j.Pass) {
					t.Fatalf("passing %s under the tests profile: %v", j.Name, o)
				}
				if p, bk := b.profileOf(t, id); p != "tests" || bk != backend {
					t.Fatalf("ran under profile %s on %s, want tests on %s", p, bk, backend)
				}
				t.Logf("pass: %v in bulkhead", o.wall.Round(1e6))

				host := checkout(t, j.Src, 0, &j.BreakTest)
				want := command(t, filepath.Join(host, j.Cwd), hostEnv(t), jobimage.HostArgv(j.Args)...)
				if want.code == 0 || !strings.Contains(want.output, j.Fail) {
					t.Fatalf("the broken test does not fail on the host: %v", want)
				}
				ws = checkout(t, j.Src, 65534, &j.BreakTest)
				got := b.run(t, b.jobBundle(t, "tests", ws, j.Cwd, j.Args, nil), jobID(j.Name+"-fail"))
				if got.code != want.code || !strings.Contains(got.output, j.Fail) {
					t.Fatalf("a failing test: exit %d with %q on the host, inside: %v", want.code, j.Fail, got)
				}
				for _, boundary := range []string{"read-only file system", "no space left", "permission denied", "Permission denied", "Killed"} {
					if strings.Contains(got.output, boundary) {
						t.Errorf("the failing run met the boundary (%q):\n%s", boundary, got.output)
					}
				}
			})
		}
	}
}

// TestDefaultProfileStillRefuses: the default profile grants no home, no
// scratch and its 256m: `go test` fails at its first write below the
// image's HOME (EROFS), as it did before job profiles existed.
func TestDefaultProfileStillRefuses(t *testing.T) {
	j := jobimage.Jobs[0]
	needTools(t, j.Tools...)
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			b := newBox(t, backend)
			ws := checkout(t, j.Src, 65534, nil)
			id := jobID("default")
			o := b.run(t, b.jobBundle(t, "", ws, j.Cwd, j.Args, []string{"HOME=/root"}), id)
			if o.code == 0 || !strings.Contains(o.output, "read-only file system") {
				t.Fatalf("go test under the default profile: want a read-only file system error, got %v", o)
			}
			if p, _ := b.profileOf(t, id); p != "default" {
				t.Fatalf("ran under %s, want default", p)
			}
		})
	}
}

// TestOnlyAJobProfileExecutesWhatItWrites: a program copied to /tmp or to
// the home cannot be executed (EACCES from noexec), one copied to the
// scratch can; the workspace's copy-on-write layer executes what the job
// writes only under a job profile (cargo's target/), never under the
// default profile, which has no scratch at all. Nor does a memfd, which
// no mount's noexec covers: memfd_create answers ENOSYS there.
func TestOnlyAJobProfileExecutesWhatItWrites(t *testing.T) {
	script := `for d in /tmp /home/sandbox /scratch /workspace; do
  if cp /usr/bin/true $d/prog 2>/dev/null; then
    if $d/prog 2>/dev/null; then echo "$d exec"; else echo "$d noexec $?"; fi
  else echo "$d nowrite"; fi
done
out=$(python3 -c 'import os, errno
try:
    fd = os.memfd_create("prog")
except OSError as e:
    print("memfd", errno.errorcode[e.errno]); raise SystemExit(3)
os.write(fd, open("/usr/bin/true", "rb").read())
os.execv("/proc/self/fd/%d" % fd, ["true"])')
if [ $? = 0 ]; then echo "memfd exec"; else echo "$out"; fi
if /lib64/ld-linux-x86-64.so.2 /tmp/prog 2>/dev/null; then echo "ld.so /tmp runs"; else echo "ld.so /tmp refused"; fi`
	// The dynamic loader maps a file instead of executing it: Linux
	// refuses an executable mapping from a noexec mount, gVisor (Debian's
	// 2022 build) does not check noexec for mappings at all, as the
	// README says under "What gVisor answers instead". Should gVisor start
	// refusing, this line fails and the README changes with it.
	ldso := map[string]string{"runc": "ld.so /tmp refused\n", "runsc": "ld.so /tmp runs\n"}
	for _, backend := range []string{"runc", "runsc"} {
		for _, tc := range []struct{ profile, want string }{
			{"tests", "/tmp noexec 126\n/home/sandbox noexec 126\n/scratch exec\n/workspace exec\nmemfd exec\n"},
			{"", "/tmp noexec 126\n/home/sandbox nowrite\n/scratch nowrite\n/workspace noexec 126\nmemfd ENOSYS\n"},
		} {
			name := tc.profile
			if name == "" {
				name = "default"
			}
			t.Run(backend+"/"+name, func(t *testing.T) {
				b := newBox(t, backend)
				ws := checkout(t, "go", 65534, nil)
				o := b.run(t, b.jobBundle(t, tc.profile, ws, ".", []string{"sh", "-c", script}, nil), jobID("scratch"))
				want := tc.want + ldso[backend]
				if o.code != 0 || o.output != want {
					t.Fatalf("got %v\nwant:\n%s", o, want)
				}
			})
		}
	}
}

// TestJobPlacesAreSized: the home and the scratch of the tests profile
// end at their sizes with ENOSPC, on runc and in gVisor, and the job
// keeps running: a job that fills them meets its own error.
func TestJobPlacesAreSized(t *testing.T) {
	script := `for d in /home/sandbox /scratch; do
  if dd if=/dev/zero of=$d/fill bs=1M count=300 2>/tmp/err; then echo "$d unbounded"; else grep -o "No space left on device" /tmp/err | head -1; fi
  rm -f $d/fill
done`
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			b := newBox(t, backend)
			ws := checkout(t, "go", 65534, nil)
			o := b.run(t, b.jobBundle(t, "tests", ws, ".", []string{"sh", "-c", script}, nil), jobID("sized"))
			want := "No space left on device\nNo space left on device\n"
			if o.code != 0 || o.output != want {
				t.Fatalf("filling home and scratch (256m each) with 300m: %v\nwant:\n%s", o, want)
			}
		})
	}
}

// TestCallersHomeInReadOnlyRoot: an engine sends HOME=/root (Docker does
// for every image whose user it does not know), which lies in the
// read-only root. Under a job profile writes below HOME land in the
// writable home, as a developer's git config --global does; under the
// default profile, which grants no home, HOME is left as it came.
func TestCallersHomeInReadOnlyRoot(t *testing.T) {
	needTools(t, "/usr/bin/git")
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			b := newBox(t, backend)
			ws := checkout(t, jobimage.Jobs[0].Src, 65534, nil)
			args := []string{"sh", "-c", `git config --global user.name sandbox && git config --global user.name && echo "HOME=$HOME"`}
			o := b.run(t, b.jobBundle(t, "tests", ws, "", args, []string{"HOME=/root"}), jobID("home"))
			if o.code != 0 || !strings.Contains(o.output, "sandbox\nHOME=/home/sandbox") {
				t.Fatalf("git config --global under the tests profile with HOME=/root: %v", o)
			}
			o = b.run(t, b.jobBundle(t, "", ws, "", args, []string{"HOME=/root"}), jobID("home-default"))
			if o.code == 0 || strings.Contains(o.output, "HOME=/home/sandbox") {
				t.Fatalf("the default profile moved HOME or let git write below /root: %v", o)
			}
		})
	}
}
