package runtime

import (
	"strings"
	"testing"
)

// TestGVisorTableRows: runsc's rows pass whatever their widths; what a
// line break in a 15-byte task name starts (its tabs made cells, its
// spaces words) is never a row.
func TestGVisorTableRows(t *testing.T) {
	table := "UID       PID       PPID      C         TTY       STIME     TIME      CMD\n" +
		"65534     1         0         0         ?         01:26     0s        sleep\n" +
		"65534     2         1         0         pts/0     Dec05     1m2s      busybox sh\n"
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	cols := psColumns(lines[0])
	if cols == nil {
		t.Fatal("runsc's heading not recognised")
	}
	for _, l := range lines[1:] {
		if !psRow(l, cols) {
			t.Errorf("a row taken for no row: %q", l)
		}
	}
	for _, l := range []string{
		// busybox\n0\t7\t1\t0
		"0         7         1         0",
		// the most words 14 bytes hold
		"1 2 3 4 5 6 78",
		// the most named cells: x\n1\t2\t3\t4\t5\t6\t7
		"1         2         3         4         5         6         7",
		// seven tab-ended cells and no name: \n0\t1\t0\t0\t?\t0\t0\t
		"0         1         0         0         ?         0         0         ",
		// a real row of a task named ""
		"65534     3         1         0         ?         01:26     0s        ",
		// unpadded
		"1\t2\t3\t4\t5\t6\t7",
		// a PID that is no number
		"65534     x         0         0         ?         01:26     0s        y",
		"",
	} {
		if psRow(l, cols) {
			t.Errorf("taken for a row: %q", l)
		}
	}
	if psColumns("PID  CMD") != nil {
		t.Error("another heading taken for runsc's")
	}
}
