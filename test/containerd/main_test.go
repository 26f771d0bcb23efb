package containerd

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"bulkhead.dev/bulkhead/test/ctrtest"
	"bulkhead.dev/bulkhead/test/engine"
)

// shared is the private containerd 1.6 of this test binary, with the probe
// image imported: tests share it, TestMain stops it.
var shared struct {
	once sync.Once
	d    *ctrtest.Daemon
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.d != nil {
		if err := shared.d.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// containerd16 returns the shared containerd (Debian's 1.6, on PATH).
func containerd16(t *testing.T) *ctrtest.Daemon {
	t.Helper()
	ctrtest.NeedRoot(t)
	ctrtest.WithShimOnPath(t)
	shared.once.Do(func() {
		c, err := engine.StartContainerd(engine.ContainerdOptions{BulkheadConfig: ctrtest.BulkheadConfig()})
		if err != nil {
			shared.err = err
			return
		}
		shared.d = &ctrtest.Daemon{Containerd: c, Ctr: "ctr"}
		ctrtest.Serves(ctrtest.Namespace, shared.d)
		shared.err = shared.d.ImportProbeImage(t)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.d
}
