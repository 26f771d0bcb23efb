package specs

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLoadApplyStore measures the spec work of one create: decode a
// real engine's config.json, apply every rule, marshal and write it back.
func BenchmarkLoadApplyStore(b *testing.B) {
	data, err := os.ReadFile("testdata/docker-run-busybox.json")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	// The goldens' host: the engine's files for testID, its layer, its
	// sandbox; without them every rule refuses what it cannot check.
	c := testContext()
	c.Original = data
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := DecodeLenient(data)
		if err != nil {
			b.Fatal(err)
		}
		out, _, err := Apply(c, s)
		if err != nil {
			b.Fatal(err)
		}
		js, err := Marshal(out)
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteAtomic(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
