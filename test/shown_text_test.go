package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A caller's bundle path (and what a job chose) reaches an operator's
// terminal through list, state and inspect: there a bidi override or an
// escape sequence shows escaped, and a JSON document still parses to the
// very path.
func TestCallersTextShownEscaped(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"sleep", "60"})
	odd := filepath.Join(filepath.Dir(b), "b\x1b[2Jx\u202ey")
	if err := os.Rename(b, odd); err != nil {
		t.Fatal(err)
	}
	id := uniqueID("shown")
	must(t, "--root", root, "create", "--bundle", odd, id)
	t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
	raw := func(what, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\u202e") {
			t.Errorf("%s shows the bundle path raw: %q", what, out)
		}
	}
	raw("list", must(t, "--root", root, "list"))
	raw("inspect", must(t, "--root", root, "inspect", id))
	for _, args := range [][]string{{"list", "--format", "json"}, {"state", id}} {
		out := must(t, append([]string{"--root", root}, args...)...)
		raw(args[0]+" json", out)
		if !strings.Contains(out, `\u001b[2Jx\u202ey`) {
			t.Errorf("%s does not carry the path as JSON escapes: %s", args[0], out)
		}
		var doc any
		if err := json.Unmarshal([]byte(out), &doc); err != nil || !strings.Contains(toJSONText(doc), odd) {
			t.Errorf("%s does not parse to the very path %q (%v)", args[0], odd, err)
		}
	}
}

// toJSONText is every string of a parsed JSON document, joined.
func toJSONText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, toJSONText(e))
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		var parts []string
		for _, e := range x {
			parts = append(parts, toJSONText(e))
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
