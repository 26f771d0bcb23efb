package workspace

import (
	"bytes"
	"encoding/json"
	"testing"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// TestWriteReportEncoding: the report written a change at a time is the
// indented encoding of the whole ChangeReport, byte for byte.
func TestWriteReportEncoding(t *testing.T) {
	set := layerSet{Destination: "/workspace", Source: "/src<&>"}
	changes := []Change{
		{Path: "a.txt", Kind: "added", Type: "file", Mode: "0644", Size: 3, SHA256: "ab"},
		{Path: "odd\xff\x1b", Kind: "added", Type: "symlink", Target: "t\\x", Rejected: "fifo: never exported"},
	}
	for _, c := range []struct {
		name     string
		wcs      []workspaceChanges
		rejected []string
	}{
		{"none", nil, nil},
		{"empty", []workspaceChanges{{layerSet: set}}, nil},
		{"no changes", []workspaceChanges{{layerSet: set, Changes: []Change{}}}, nil},
		{"two", []workspaceChanges{{layerSet: set, Changes: changes}, {layerSet: set, Changes: changes[:1]}}, []string{"odd\\xff: fifo", "b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := writeReport(&got, c.wcs, c.rejected); err != nil {
				t.Fatal(err)
			}
			rep := ChangeReport{Workspaces: []workspaceChanges{}, Rejected: c.rejected}
			for _, wc := range c.wcs {
				out := workspaceChanges{layerSet: wc.layerSet, Changes: wc.Changes}
				if wc.Changes != nil {
					out.Changes = make([]Change, len(wc.Changes))
					for i, ch := range wc.Changes {
						e := ch
						e.Path, e.Target, e.LinkTo = escape.Text(ch.Path), escape.Text(ch.Target), escape.Text(ch.LinkTo)
						e.Escaped = e.Path != ch.Path || e.Target != ch.Target || e.LinkTo != ch.LinkTo
						e.Rejected = escape.Text(ch.Rejected)
						out.Changes[i] = e
					}
				}
				rep.Workspaces = append(rep.Workspaces, out)
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("got:\n%s\nwant:\n%s", got.String(), want.String())
			}
		})
	}
}
