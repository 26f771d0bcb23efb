package jobs

import (
	"path/filepath"
	"strings"
	"testing"
)

// job is one real workload, unmodified, as an agent or a CI runner starts
// it in a checkout.
type job struct {
	name  string
	tools []string // host files the toolchain needs; the test skips without them
	src   string   // the project under testdata/
	cwd   string   // where the command runs, relative to the checkout
	args  []string
	// breakTest turns one passing test into a failing one: file, old, new.
	breakTest  [3]string
	pass, fail string // what the tool prints for a passing and a failing run
}

var jobs = []job{
	{name: "go", tools: []string{"/usr/local/go/bin/go"}, src: "go", cwd: ".",
		args:      []string{"go", "test", "./..."},
		breakTest: [3]string{"calc/calc_test.go", "Add(2, 3), 5", "Add(2, 3), 6"},
		pass:      "ok  \texample.com/calc/calc", fail: "--- FAIL: TestAdd"},
	{name: "pytest", tools: []string{"/usr/bin/pytest"}, src: "python", cwd: ".",
		args:      []string{"pytest", "-q"},
		breakTest: [3]string{"tests/test_add.py", "== 5", "== 6"},
		pass:      "1 passed", fail: "1 failed"},
	{name: "npm", tools: []string{"/usr/bin/node", "/usr/bin/npm"}, src: "npm", cwd: "app",
		// The local dependency (file:../lib) is installed without a registry.
		args:      []string{"sh", "-c", "npm install --offline --no-audit --no-fund && npm test"},
		breakTest: [3]string{"app/add.test.js", "add(2, 3), 5", "add(2, 3), 6"},
		pass:      "# pass 1", fail: "# fail 1"},
	{name: "cargo", tools: []string{"/usr/bin/cargo", "/usr/bin/rustc"}, src: "cargo", cwd: ".",
		args:      []string{"cargo", "test", "--offline"},
		breakTest: [3]string{"src/lib.rs", "add(2, 3), 5", "add(2, 3), 6"},
		pass:      "test result: ok. 1 passed", fail: "test result: FAILED"},
}

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
		for _, j := range jobs {
			t.Run(backend+"/"+j.name, func(t *testing.T) {
				needTools(t, j.tools...)
				b := newBox(t, backend)

				ws := checkout(t, j.src, 65534, nil)
				id := jobID(j.name)
				o := b.run(t, b.jobBundle(t, "tests", ws, j.cwd, j.args, nil), id)
				if o.code != 0 || !strings.Contains(o.output, j.pass) {
					t.Fatalf("passing %s under the tests profile: %v", j.name, o)
				}
				if p, bk := b.profileOf(t, id); p != "tests" || bk != backend {
					t.Fatalf("ran under profile %s on %s, want tests on %s", p, bk, backend)
				}
				t.Logf("pass: %v in bulkhead", o.wall.Round(1e6))

				host := checkout(t, j.src, 0, &j.breakTest)
				want := command(t, filepath.Join(host, j.cwd), hostEnv(t), j.args...)
				if want.code == 0 || !strings.Contains(want.output, j.fail) {
					t.Fatalf("the broken test does not fail on the host: %v", want)
				}
				ws = checkout(t, j.src, 65534, &j.breakTest)
				got := b.run(t, b.jobBundle(t, "tests", ws, j.cwd, j.args, nil), jobID(j.name+"-fail"))
				if got.code != want.code || !strings.Contains(got.output, j.fail) {
					t.Fatalf("a failing test: exit %d with %q on the host, inside: %v", want.code, j.fail, got)
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
	j := jobs[0]
	needTools(t, j.tools...)
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			b := newBox(t, backend)
			ws := checkout(t, j.src, 65534, nil)
			id := jobID("default")
			o := b.run(t, b.jobBundle(t, "", ws, j.cwd, j.args, []string{"HOME=/root"}), id)
			if o.code == 0 || !strings.Contains(o.output, "read-only file system") {
				t.Fatalf("go test under the default profile: want a read-only file system error, got %v", o)
			}
			if p, _ := b.profileOf(t, id); p != "default" {
				t.Fatalf("ran under %s, want default", p)
			}
		})
	}
}

// TestScratchIsTheOnlyExecutableTmpfs: a program copied to /tmp or to the
// home cannot be executed (EACCES from noexec), one copied to the scratch
// can; the default profile has no scratch at all.
func TestScratchIsTheOnlyExecutableTmpfs(t *testing.T) {
	script := `for d in /tmp /home/sandbox /scratch; do
  if cp /usr/bin/true $d/prog 2>/dev/null; then
    if $d/prog 2>/dev/null; then echo "$d exec"; else echo "$d noexec $?"; fi
  else echo "$d nowrite"; fi
done`
	for _, backend := range []string{"runc", "runsc"} {
		for _, tc := range []struct{ profile, want string }{
			{"tests", "/tmp noexec 126\n/home/sandbox noexec 126\n/scratch exec\n"},
			{"", "/tmp noexec 126\n/home/sandbox nowrite\n/scratch nowrite\n"},
		} {
			name := tc.profile
			if name == "" {
				name = "default"
			}
			t.Run(backend+"/"+name, func(t *testing.T) {
				b := newBox(t, backend)
				ws := checkout(t, "go", 65534, nil)
				o := b.run(t, b.jobBundle(t, tc.profile, ws, ".", []string{"sh", "-c", script}, nil), jobID("scratch"))
				if o.code != 0 || o.output != tc.want {
					t.Fatalf("got %v\nwant:\n%s", o, tc.want)
				}
			})
		}
	}
}
