package workspace

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// A job that swaps a HEAD directory for a HEAD file while its changes are
// exported never gets a HEAD file into an export beside a commondir
// naming the checkout's y (config, objects, refs): each directory is
// judged and written from one look at it. The 1,500 names that sort
// before HEAD are what a walk does between two looks at it.
func TestExportJudgesWhatItWritesFromOneLook(t *testing.T) {
	h := newHostileWorkspace(t)
	for _, p := range []string{"y/config", "y/objects/README", "y/refs/README"} {
		full := filepath.Join(h.ws.Source, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("[core]\n\tpager = touch /tmp/ran\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.file("x/commondir", []byte("../y\n"))
	h.file("x/HEADf", []byte("ref: refs/heads/main\n"))
	h.file("x/HEAD/keep", []byte("a directory named HEAD\n"))
	for i := 0; i < 1500; i++ {
		h.file(fmt.Sprintf("x/A%04d", i), []byte("x\n"))
	}
	head, headf := filepath.Join(h.upperDir, "x", "HEAD"), filepath.Join(h.upperDir, "x", "HEADf")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = unix.Renameat2(unix.AT_FDCWD, head, unix.AT_FDCWD, headf, unix.RENAME_EXCHANGE)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	exported := 0
	for i := 0; i < 30; i++ {
		for _, format := range []string{"tar", "patch"} {
			out, _, err := h.export(format, defaultChangeLimits)
			if err != nil {
				continue // a directory changed under the export, which fails
			}
			exported++
			if format == "patch" {
				if strings.Contains(out, "b/x/HEAD\n") {
					t.Fatalf("round %d: the patch holds a HEAD file beside x/commondir:\n%.2000s", i, out)
				}
				continue
			}
			tr := tar.NewReader(bytes.NewReader([]byte(out)))
			for {
				hdr, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if hdr.Name == "x/HEAD" && hdr.Typeflag == tar.TypeReg {
					t.Fatalf("round %d: the tar holds a HEAD file beside x/commondir", i)
				}
			}
		}
	}
	if exported == 0 {
		t.Fatal("no export ended: the test proves nothing")
	}
}
