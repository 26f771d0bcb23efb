package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job cannot read a root-owned 0600 token in a checkout of uid 1000, but
// its directory is the job's, so it may rename the token. overlayfs copies
// the file up as root with root's owner and mode, and the export read the
// upper layer as root: `mv token stolen.txt` printed the token in `diff`,
// its tar and the kept changes, as if the job had written it. Nothing of
// it leaves now, in any format, live or kept, on either backend; the
// job's own files, a private one too, still do.
func TestWorkspaceRenamedUnreadableStaysIn(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			const secret = "ROOT-ONLY-TOKEN-7d1f"
			src := filepath.Join(t.TempDir(), "src")
			if err := os.MkdirAll(src, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string]string{"readme.txt": "hello\n", "token": secret + "\n"} {
				if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []string{src, filepath.Join(src, "readme.txt")} {
				if err := os.Chown(p, 1000, 1000); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(filepath.Join(src, "token"), 0o600); err != nil {
				t.Fatal(err)
			}

			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			id := uniqueID("wsrename-" + backend)
			script := "cd /workspace; cat token; cp token copied.txt; mv token stolen.txt; " +
				"echo mine > mine.txt; chmod 600 mine.txt; cat stolen.txt; exit 0"
			runToEnd(t, g, workspaceBundle(t, src, script), id)

			leaks := func(what, out string) {
				t.Helper()
				if strings.Contains(out, secret) {
					t.Errorf("%s shows the token the job could not read:\n%s", what, out)
				}
			}
			patch := must(t, append(g, "diff", id)...)
			leaks("diff", patch)
			if !strings.Contains(patch, "+mine") {
				t.Errorf("diff does not show the job's own private file:\n%s", patch)
			}
			leaks("diff --format json", must(t, append(g, "diff", "--format", "json", id)...))
			r := bulkhead(t, "", append(g, "diff", "--format", "tar", id)...)
			leaks("diff --format tar", r.stdout)
			if !strings.Contains(r.stderr, "stolen.txt: not readable by the sandbox user") {
				t.Errorf("diff --format tar does not name stolen.txt as left out:\n%s", r.stderr)
			}

			must(t, append(g, "delete", id)...)
			leaks("changes export", bulkhead(t, "", append(g, "changes", "export", id)...).stdout)
			kept := bulkhead(t, "", append(g, "changes", "export", "--format", "tar", id)...).stdout
			leaks("changes export --format tar", kept)
			if !strings.Contains(kept, "mine\n") {
				t.Errorf("changes export --format tar does not carry the job's own private file")
			}
		})
	}
}
