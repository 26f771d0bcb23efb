package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// longNames fills the upper layer with n empty files whose paths are
// nearly as long as bulkhead opens (maxEntryPath) and made of bytes that
// escape as \xNN: 11 directories of 240 such bytes, and below them files
// named .wh.<240 such bytes><i>, which every format leaves out and names,
// escaped.
func longNames(h *hostileWorkspace, n int) {
	h.t.Helper()
	x := strings.Repeat("\xff", 240)
	dir := h.upperDir
	for i := 0; i < 11; i++ {
		dir = filepath.Join(dir, x+strconv.Itoa(i))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, whiteoutPrefix+x+strconv.Itoa(i)), nil, 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
}

// TestExportLongNamesBounded: the sandbox chooses names, and each path a
// diff walks is held, escaped, in the lines naming what was left out and
// in the json. 3,000 paths of 3 KiB that escape to 12 KiB each, well
// within changes_max_files, once made a diff allocate about a GiB (and
// 100,000 of them tens of GiB, with a quadratic merge of the left-out
// lines); now every format stops at the names' bound with an error, in
// bounded memory. Many short names still export, and the bound counts a
// name as long as it is escaped.
func TestExportLongNamesBounded(t *testing.T) {
	h := newHostileWorkspace(t)
	longNames(h, 3000)
	for _, format := range []string{"patch", "json", "tar"} {
		var err error
		alloc := heapGrowth(func() { _, _, err = h.export(format, defaultChangeLimits) })
		t.Logf("%s: %d bytes allocated: %v", format, alloc, err)
		if err == nil || !strings.Contains(err.Error(), "the paths pass") {
			t.Errorf("%s of 3,000 escaped 3 KiB paths: %v, want the names' bound", format, err)
		}
		if alloc > 128<<20 {
			t.Errorf("%s of 3,000 escaped 3 KiB paths allocated %d bytes", format, alloc)
		}
	}

	ok := newHostileWorkspace(t)
	for i := 0; i < 20000; i++ {
		ok.file("node_modules/pkg"+strconv.Itoa(i%200)+"/lib/file"+strconv.Itoa(i)+".js", nil)
	}
	out, _, err := ok.export("json", defaultChangeLimits)
	if err != nil || !strings.Contains(out, "file19999.js") {
		t.Fatalf("20,000 ordinary paths: %v", err)
	}
}
