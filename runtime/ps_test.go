package runtime

import "testing"

// A name the sandbox chose (at most 15 bytes in gVisor) cannot fill the
// fields before CMD: a short line is the rest of the row above.
func TestGVisorTableRows(t *testing.T) {
	head := "UID       PID       PPID      C         TTY       STIME     TIME      CMD\n"
	row := "65534     1         0         0         ?         19:59     20ms      "
	out := head + row + "sh\x1b[2J\n65534 1 0 0\n" + row + "sleep\n"
	want := head + row + `sh\x1b[2J\x0a65534 1 0 0` + "\n" + row + "sleep\n"
	if got := gVisorTable(out); got != want {
		t.Fatalf("gVisorTable:\n%q\nwant\n%q", got, want)
	}
}
