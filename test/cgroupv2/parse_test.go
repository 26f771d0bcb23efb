package cgroupv2

import (
	"strings"
	"testing"
)

// TestParseConsole: the console of a guest whose test failed, whose
// second binary never ended and which never printed "done" reads as such,
// with kernel messages and QEMU's noise in between.
func TestParseConsole(t *testing.T) {
	console := strings.Join([]string{
		"SeaBIOS (version 1.16.2-debian-1.16.2-1)",
		"\x1b[2JBULKHEAD-GUEST kernel 6.1.0-57-cloud-amd64",
		"BULKHEAD-GUEST mount cgroup2 /sys/fs/cgroup",
		"BULKHEAD-GUEST begin inguest",
		"=== RUN   TestA",
		"--- PASS: TestA (0.01s)",
		"=== RUN   TestB",
		"=== RUN   TestB/x",
		"    b_test.go:9: swap read wrong",
		"[   12.3] Memory cgroup out of memory: Killed process 42",
		"=== RUN   TestB/y",
		"--- FAIL: TestB (1.00s)",
		"    --- FAIL: TestB/x (0.50s)",
		"    --- SKIP: TestB/y (0.00s)",
		"FAIL",
		"BULKHEAD-GUEST end inguest status 1 seconds 3",
		"BULKHEAD-GUEST begin failclosed",
		"=== RUN   TestC",
		"qemu-system-x86_64: terminating on signal 15",
	}, "\n")
	g := &guest{console: console}
	parse(g)
	if g.kernel != "6.1.0-57-cloud-amd64" || len(g.mounts) != 1 || g.mounts[0] != "cgroup2 /sys/fs/cgroup" {
		t.Errorf("kernel %q mounts %q", g.kernel, g.mounts)
	}
	if err := g.ended(); err == nil || !strings.Contains(err.Error(), "did not get to its end") {
		t.Errorf("ended() = %v for a guest without a done line", err)
	}
	in, fc := g.binary("inguest"), g.binary("failclosed")
	if in == nil || fc == nil {
		t.Fatalf("binaries %v", g.binaries)
	}
	if in.status != "1" || fc.status != "" {
		t.Errorf("status inguest %q failclosed %q", in.status, fc.status)
	}
	want := map[string]string{"TestA": "PASS", "TestB": "FAIL", "TestB/x": "FAIL", "TestB/y": "SKIP"}
	for name, result := range want {
		if tr := in.tests[name]; tr == nil || tr.result != result {
			t.Errorf("%s: %+v, want %s", name, tr, result)
		}
	}
	if got := strings.Join(in.tests["TestB/x"].lines, "\n"); !strings.Contains(got, "swap read wrong") {
		t.Errorf("TestB/x lines %q", got)
	}
	if tr := fc.tests["TestC"]; tr == nil || tr.result != "" {
		t.Errorf("TestC never ended, read as %+v", tr)
	}
}

// TestParseSilentGuest: a guest that printed only firmware and a kernel
// panic is reported as having printed nothing of bulkhead's.
func TestParseSilentGuest(t *testing.T) {
	g := &guest{console: "SeaBIOS\nBooting from ROM...\n[    1.0] Kernel panic - not syncing: No working init found.\n"}
	parse(g)
	if err := g.ended(); err == nil || !strings.Contains(err.Error(), "printed nothing") {
		t.Errorf("ended() = %v", err)
	}
}
