package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"bulkhead.dev/bulkhead/specs"
)

// TestRunSameBundleTwice: runc users run a bundle again and again. The
// caller's config.json is never rewritten, so the second run starts from
// what the caller wrote, not from the first run's policy values or its
// workspace overlay (whose merged directory is gone with the first
// container): both runs succeed with the same decisions, and config.json
// is byte for byte the caller's afterwards. `state` names the caller's
// bundle, not the copy the backend was given.
func TestRunSameBundleTwice(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			audit := filepath.Join(filepath.Dir(cfg), "audit.jsonl")
			src := workspaceSource(t)
			b := workspaceBundle(t, src, "echo ran > /workspace/out.txt && cat /workspace/keep.txt >/dev/null")
			orig, err := os.ReadFile(filepath.Join(b, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			g := []string{"--root", root, "--config", cfg, "--backend", backend}

			// A created container reports the caller's bundle.
			id := uniqueID("rerun-state-" + backend)
			must(t, append(g, "create", "--bundle", b, id)...)
			var st struct {
				Bundle string `json:"bundle"`
			}
			out := must(t, append(g, "state", id)...)
			if err := json.Unmarshal([]byte(out), &st); err != nil || st.Bundle != b {
				t.Errorf("state names bundle %q (err %v), want the caller's %q:\n%s", st.Bundle, err, b, out)
			}
			var listed []struct {
				ID     string `json:"id"`
				Bundle string `json:"bundle"`
			}
			out = must(t, append(g, "list", "--format", "json")...)
			if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 || listed[0].Bundle != b {
				t.Errorf("list: %s (err %v), want %s with the caller's bundle %q", out, err, id, b)
			}
			if now, _ := os.ReadFile(filepath.Join(b, "config.json")); !bytes.Equal(now, orig) {
				t.Errorf("config.json changed by create:\n%s", now)
			}
			must(t, append(g, "delete", "--force", id)...)

			var ids []string
			for _, name := range []string{"rerun-a-", "rerun-b-"} {
				id := uniqueID(name + backend)
				ids = append(ids, id)
				if r := bulkhead(t, "", append(g, "run", "--bundle", b, id)...); r.code != 0 {
					t.Fatalf("run %s of the same bundle: exit %d\nstderr: %s", id, r.code, r.stderr)
				}
				assertGone(t, root, backend, id)
				now, err := os.ReadFile(filepath.Join(b, "config.json"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(now, orig) {
					t.Fatalf("after run %s config.json is not the caller's (%d bytes, was %d):\n%s", id, len(now), len(orig), now)
				}
			}
			first, second := runDecisions(t, audit, ids[0]), runDecisions(t, audit, ids[1])
			if len(first) == 0 {
				t.Fatalf("no decisions recorded for %s in %s", ids[0], audit)
			}
			// Decisions name the container's own cgroup, state directory
			// and pins, which differ by id alone.
			a, _ := json.Marshal(first)
			c, _ := json.Marshal(second)
			a, c = bytes.ReplaceAll(a, []byte(ids[0]), []byte("ID")), bytes.ReplaceAll(c, []byte(ids[1]), []byte("ID"))
			if !bytes.Equal(a, c) {
				t.Errorf("the second run decided differently:\nfirst:  %s\nsecond: %s", a, c)
			}
		})
	}
}

// runDecisions returns the decisions of the audit line of the run of id.
func runDecisions(t *testing.T, audit, id string) []specs.Decision {
	t.Helper()
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Event     string           `json:"event"`
			ID        string           `json:"id"`
			Decisions []specs.Decision `json:"decisions"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "run" && e.ID == id {
			return e.Decisions
		}
	}
	t.Fatalf("no run line for %s in %s", id, audit)
	return nil
}
