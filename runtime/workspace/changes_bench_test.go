package workspace

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// layer10k is a 10,000-file upper layer over a lower of 5,000 files: half
// of the upper's files modify a lower one, half are new.
func layer10k(b *testing.B) (string, string) {
	dir := b.TempDir()
	upper, lower := filepath.Join(dir, "upper"), filepath.Join(dir, "lower")
	for i := 0; i < 10_000; i++ {
		rel := filepath.Join(fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i))
		body := fmt.Sprintf("line one of %d\nline two\nline three\n", i)
		if i%2 == 0 {
			if err := writeBenchFile(filepath.Join(lower, rel), body); err != nil {
				b.Fatal(err)
			}
			body += "a change\n"
		}
		if err := writeBenchFile(filepath.Join(upper, rel), body); err != nil {
			b.Fatal(err)
		}
	}
	return upper, lower
}

func writeBenchFile(p, body string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(body), 0o644)
}

// BenchmarkChanges10k: diff (json, patch) and export (tar) of a
// 10,000-file upper layer; time per op, and the process's peak RSS.
func BenchmarkChanges10k(b *testing.B) {
	upper, lower := layer10k(b)
	sets := []layerSet{{Destination: "/workspace", Upper: upper, Lower: lower}}
	for _, format := range []string{"json", "patch", "tar"} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := exportChanges(io.Discard, format, sets, defaultChangeLimits); err != nil {
					b.Fatal(err)
				}
			}
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
				b.ReportMetric(float64(ru.Maxrss), "peak-RSS-KiB")
			}
		})
	}
}
