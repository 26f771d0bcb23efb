package docker

import (
	"strings"
	"testing"
)

// TestInitRefusedWithItsFix: docker run --init binds dockerd's init from
// the host's binaries; it is refused, and Docker shows the fix, which is
// in the image, not in bind_roots.
func TestInitRefusedWithItsFix(t *testing.T) {
	d := daemon(t)
	r := d.Run(t, "run", "--rm", "--runtime=bulkhead", "--init", image, "true")
	if r.Code == 0 || !strings.Contains(r.Stderr, "drop --init and put an init in the image") || strings.Contains(r.Stderr, "adding it to bind_roots") {
		t.Fatalf("docker run --init: want it refused with the image's fix:\n%s", r)
	}
}
