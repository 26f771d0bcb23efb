package backend

import (
	"errors"
	"testing"
	"time"
)

// A backend that never answers is killed at its timeout, and the error
// says so rather than the status of the kill.
func TestSuperviseSaysTheTimeout(t *testing.T) {
	status, err := Supervise([]string{"sleep", "600"}, 0, 200*time.Millisecond, nil)
	var timedOut *TimedOutError
	if !errors.As(err, &timedOut) || timedOut.Program != "sleep" {
		t.Fatalf("status %d, error %v: want sleep's timeout", status, err)
	}
	if status, err := Supervise([]string{"sh", "-c", "exit 3"}, 0, time.Minute, nil); status != 3 || err != nil {
		t.Fatalf("status %d, error %v: want status 3 and no error", status, err)
	}
}

// A timeout that runs out before the backend could even be started (a
// loaded host) is the same timeout, said the same way.
func TestSuperviseTimeoutBeforeStart(t *testing.T) {
	status, err := Supervise([]string{"sleep", "600"}, 0, time.Nanosecond, nil)
	var timedOut *TimedOutError
	if !errors.As(err, &timedOut) || timedOut.Program != "sleep" {
		t.Fatalf("status %d, error %v: want sleep's timeout", status, err)
	}
}
