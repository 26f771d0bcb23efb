package jobs

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/egresshost"
	"bulkhead.dev/bulkhead/test/leftover"
)

// Real clients behind the broker, on runc and on runsc: the job's git, pip and npm, unmodified, find
// the broker through the proxy variables bulkhead sets, reach the test
// host by name with CONNECT, and check its TLS against the test's CA,
// which the job names the ordinary way (GIT_SSL_CAINFO, pip --cert, npm
// --cafile). The test host serves git's smart HTTP protocol (git
// http-backend), a package index in the layout pip reads (PEP 503) with
// one wheel and an npm registry with one package, both built here. What
// the job got is checked on its bytes: the commit it cloned, the wheel's
// and the tarball's sha256.
func TestEgressClients(t *testing.T) {
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) { egressClients(t, backend) })
	}
}

func egressClients(t *testing.T, backend string) {
	needTools(t, "/usr/bin/git", "/usr/lib/git-core/git-http-backend", "/usr/bin/python3")
	if err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").Run(); err != nil {
		t.Fatalf("Debian's pip is not installed (hack/install-deps.sh installs python3-pip): %v", err)
	}
	b := newBox(t, backend)
	h := egresshost.New(t)
	ca := egresshost.NewCA(t, "git.test", "pypi.test", "npm.test")

	repos, commit := gitRepo(t)
	wheelName, wheel := testWheel(t)
	sum := sha256.Sum256(wheel)
	wheelSum := hex.EncodeToString(sum[:])
	mux := http.NewServeMux()
	mux.Handle("/git/", &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend", Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"}})
	mux.HandleFunc("/simple/hello-egress/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!DOCTYPE html><html><body><a href=\"/files/%s#sha256=%s\">%s</a></body></html>\n", wheelName, wheelSum, wheelName)
	})
	mux.HandleFunc("/files/"+wheelName, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(wheel)
	})
	tgzName, tgz := testTarball(t)
	tgzSHA256 := sha256.Sum256(tgz)
	mux.HandleFunc("/hello-egress", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(packument(tgz))
	})
	mux.HandleFunc("/hello-egress/-/"+tgzName, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(tgz)
	})
	h.Serve(t, 443, mux, &ca.Server)

	body := fmt.Sprintf(`audit_log = %q
changes_dir = %q
[profiles.install]
selectable = true
memory = "1g"
pids_limit = 128
home_size = "64m"
tmpfs_total = "512m"
max_lifetime = "10m"
egress = ["git.test:443", "pypi.test:443", "npm.test:443", "%s:443"]
`, b.audit, filepath.Join(filepath.Dir(b.cfg), "changes"), h.Addr)
	if err := os.WriteFile(b.cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "checkout")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "ca.pem"), ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	runtime := egresshost.Runtime(t, h.HostsFile(t, "git.test", "pypi.test", "npm.test"), binaries.Bulkhead(t))

	run := func(t *testing.T, name, script string, env ...string) outcome {
		t.Helper()
		dir := b.jobBundle(t, "install", ws, "", []string{"sh", "-c", script}, env)
		id := jobID(name)
		o := command(t, "", os.Environ(), runtime, "--root", b.root, "--config", b.cfg, "run", "--bundle", dir, id)
		if p, bk := b.profileOf(t, id); p != "install" || bk != backend {
			t.Fatalf("ran under profile %s on %s, want install on %s", p, bk, backend)
		}
		if pids := leftover.Brokers(id); len(pids) != 0 {
			t.Errorf("brokers %v still running after run", pids)
		}
		return o
	}
	t.Run("git-clone", func(t *testing.T) {
		o := run(t, "git-clone", "git clone -q https://git.test/git/project.git /tmp/project && git -C /tmp/project rev-parse HEAD && cat /tmp/project/README",
			"GIT_SSL_CAINFO=/workspace/ca.pem")
		if o.code != 0 || !strings.Contains(o.output, commit+"\n") || !strings.Contains(o.output, "cloned through the broker") {
			t.Fatalf("git clone through the broker: want commit %s and its README; %v", commit, o)
		}
	})
	t.Run("pip-download", func(t *testing.T) {
		o := run(t, "pip-download", "python3 -m pip download -q --no-deps --no-cache-dir --disable-pip-version-check "+
			"--index-url https://pypi.test/simple/ --cert /workspace/ca.pem -d /tmp/dl hello-egress==0.1 && sha256sum /tmp/dl/*")
		if o.code != 0 || !strings.Contains(o.output, wheelSum+"  /tmp/dl/"+wheelName) {
			t.Fatalf("pip download through the broker: want %s with sha256 %s; %v", wheelName, wheelSum, o)
		}
	})
	t.Run("npm-pack", func(t *testing.T) {
		o := run(t, "npm-pack", "mkdir /tmp/npm && npm pack -q --registry https://npm.test/ --cafile /workspace/ca.pem "+
			"--no-audit --no-fund --pack-destination /tmp/npm hello-egress@0.1.0 && sha256sum /tmp/npm/*")
		want := hex.EncodeToString(tgzSHA256[:]) + "  /tmp/npm/" + tgzName
		if o.code != 0 || !strings.Contains(o.output, want) {
			t.Fatalf("npm pack through the broker: want %q; %v", want, o)
		}
	})
	// The job's direct way out is the empty namespace, not the broker's
	// list: git with the proxy variables removed cannot reach the listed
	// host's address (curl's verbose log names the errno).
	t.Run("git-without-proxy", func(t *testing.T) {
		o := run(t, "git-direct", "unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY; git clone -q https://"+h.Addr+"/git/project.git /tmp/direct",
			"GIT_SSL_CAINFO=/workspace/ca.pem", "GIT_CURL_VERBOSE=1")
		// gVisor's empty netstack answers EHOSTUNREACH.
		unreachable := map[string]string{"runc": "Network is unreachable", "runsc": "No route to host"}[backend]
		if o.code == 0 || !strings.Contains(o.output, unreachable) {
			t.Fatalf("git clone without the proxy: want %q; %v", unreachable, o)
		}
	})
	n := egresshost.Verdicts(t, b.audit)
	dests := egresshost.AllowedDestinations(t, b.audit)
	denied := egresshost.DeniedDestinations(t, b.audit)
	// On runsc each start asks the broker for a name no list has, from
	// inside, to see the way through the forwarder: one denied line a run,
	// but none for a run whose job ended before the check got in (git
	// without the proxy can). Nothing the jobs asked for was denied.
	checks := map[string]int{"runc": 0, "runsc": 4}[backend]
	if n["denied"] > checks || len(denied) > 1 || (len(denied) == 1 && !denied["bulkhead-check.invalid:1"]) ||
		len(dests) != 3 || !dests["git.test:443"] || !dests["pypi.test:443"] || !dests["npm.test:443"] {
		t.Errorf("audit log: %v, allowed %v, denied %v; want git.test:443, pypi.test:443 and npm.test:443 allowed, and denied only start's checks of bulkhead-check.invalid:1, one a run (%d)", n, dests, denied, checks)
	}
}

// gitRepo makes a bare repository project.git with one commit, below the
// directory it returns, and that commit's id.
func gitRepo(t *testing.T) (dir, commit string) {
	t.Helper()
	dir = t.TempDir()
	work := filepath.Join(t.TempDir(), "work")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.org",
			"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.org", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main", work)
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("cloned through the broker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("-C", work, "add", "README")
	git("-C", work, "commit", "-q", "-m", "first")
	commit = git("-C", work, "rev-parse", "HEAD")
	git("clone", "-q", "--bare", work, filepath.Join(dir, "project.git"))
	return dir, commit
}

// testWheel builds a pure-Python wheel of hello-egress 0.1: the files a
// wheel needs (PEP 427) and one module.
func testWheel(t *testing.T) (name string, data []byte) {
	t.Helper()
	name = "hello_egress-0.1-py3-none-any.whl"
	files := []struct{ path, body string }{
		{"hello_egress/__init__.py", "GREETING = \"hello through the broker\"\n"},
		{"hello_egress-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: hello-egress\nVersion: 0.1\n"},
		{"hello_egress-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: bulkhead-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("hello_egress-0.1.dist-info/RECORD,,\n")
	w, err := zw.Create("hello_egress-0.1.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return name, buf.Bytes()
}

// testTarball builds the npm package hello-egress 0.1.0 as a registry
// serves it: a gzip'd tar of package/.
func testTarball(t *testing.T) (name string, data []byte) {
	t.Helper()
	files := []struct{ path, body string }{
		{"package/package.json", `{"name": "hello-egress", "version": "0.1.0", "main": "index.js"}` + "\n"},
		{"package/index.js", "module.exports = 'hello through the broker';\n"},
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.path, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return "hello-egress-0.1.0.tgz", buf.Bytes()
}

// packument is the registry's document for hello-egress, with the
// tarball's integrity, which npm checks.
func packument(tgz []byte) []byte {
	sha1sum := sha1.Sum(tgz)
	sha512sum := sha512.Sum512(tgz)
	doc := map[string]any{
		"name":      "hello-egress",
		"dist-tags": map[string]string{"latest": "0.1.0"},
		"versions": map[string]any{"0.1.0": map[string]any{
			"name": "hello-egress", "version": "0.1.0", "main": "index.js",
			"dist": map[string]string{
				"tarball":   "https://npm.test/hello-egress/-/hello-egress-0.1.0.tgz",
				"shasum":    hex.EncodeToString(sha1sum[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:]),
			},
		}},
	}
	data, _ := json.Marshal(doc)
	return data
}
