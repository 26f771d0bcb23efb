package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/specs"
)

// ExitError carries the status `run` returns: the container's own.
type ExitError struct{ Status int }

func (e *ExitError) Error() string { return fmt.Sprintf("container exited with status %d", e.Status) }

// Run is create, verify, start and wait. runc's own run cannot be used:
// the workload would start before bulkhead had verified the boundary.
// bulkhead becomes a child subreaper before the backend's create, so the
// container's init is re-parented to it and its exit status can be
// collected like runc run does.
func Run(g *Globals, v Values, id string) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become subreaper: %w", err)
	}
	c, stopListening, err := listenWhileCreating(g, "run", id, v.String("bundle"), v.String("pid-file"))
	if err != nil {
		return err
	}
	defer stopListening()
	var tty *consoleProxy
	if c.handed.Process != nil && c.handed.Process.Terminal && !v.IsSet("console-socket") && !v.Bool("detach") {
		if tty, err = newConsoleProxy(); err != nil {
			return c.fail(c.undo(err))
		}
		defer tty.close()
		v = withFlag{Values: v, name: "console-socket", value: tty.path()}
	}
	err = c.handOver("create", v)
	stopListening() // from here signals are the container's
	if err != nil {
		return err
	}
	if tty != nil {
		if err := tty.attach(); err != nil {
			_ = Delete(g, forceValues{}, id)
			return err
		}
	}
	// Signals from now on are the container's, as with runc run.
	sigs := make(chan os.Signal, 16)
	backend.ForwardEverySignal()
	defer backend.Listen(sigs)()
	signal.Notify(sigs, unix.SIGWINCH) // the console's size; never forwarded
	defer signal.Stop(sigs)

	b := c.sel.Backend
	handled, err := startByFifo(g, b, c.rec, id)
	if !handled {
		var status int
		status, err = backend.Run(g.backendArgv(b, "start", id), 0)
		if err == nil && status != 0 {
			err = &BackendError{Verb: "start", Status: status}
		}
	}
	if err == nil && b.IsGVisor() && c.sel.Profile.Mode == specs.Enforce {
		err = verifyGVisorStarted(g, b, id, c.rec.InitPid)
		if err == nil && c.rec.BrokerPid != 0 {
			err = startEgressForwarder(g, b, &c.sel.Profile, id)
		}
	}
	if err != nil {
		_ = Delete(g, forceValues{}, id)
		return err
	}
	if v.Bool("detach") {
		return nil
	}
	stopForwarding := forwardSignals(sigs, func(s os.Signal) {
		if s == unix.SIGWINCH {
			if tty != nil {
				tty.resize()
			}
			return
		}
		_ = signalInit(g, b, c.rec, id, strconv.Itoa(int(s.(unix.Signal))))
	})
	var exit int
	if b.IsGVisor() && c.plan.PodSandbox != nil {
		// A container of a gVisor pod runs in the pod's sandbox process,
		// which is not run's child: runsc reports its status.
		exit = waitGVisorMember(g.backendArgv(b, "wait", id), id)
	} else {
		exit = waitInit(c.rec.InitPid)
	}
	stopForwarding()
	// The backend's other processes (gVisor's gofer and sandbox) were
	// re-parented to bulkhead too. Until they are reaped they are zombies,
	// which runsc's delete takes for a live sandbox and waits 5 s on.
	reapExited()
	killedAtDeadline(c, id, exit)
	if !v.Bool("keep") {
		if err := Delete(g, forceValues{}, id); err != nil {
			logrus.Warnf("bulkhead: delete after run: %v", err)
		}
	}
	if exit != 0 {
		return &ExitError{Status: exit}
	}
	return nil
}

// forwardSignals forwards the signals run receives until stopped.
func forwardSignals(sigs chan os.Signal, forward func(os.Signal)) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s != unix.SIGCHLD && s != unix.SIGURG {
					forward(s)
				}
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// waitInit reaps children until pid exits and returns its status the way
// a shell reports it.
func waitInit(pid int) int {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// No child left: the init was not ours to reap.
			logrus.Warnf("bulkhead: wait for %d: %v", pid, err)
			return 255
		}
		if got == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// waitGVisorMember is the status runsc's wait reports for a container of
// a gVisor pod, 255 when it reports none.
func waitGVisorMember(argv []string, id string) int {
	status, err := backend.WaitStatus(argv)
	if err != nil {
		logrus.Warnf("bulkhead: wait for %s: %v", id, err)
		return 255
	}
	return status
}

// reapExited waits, for a bounded time, until every child has exited and
// been collected. After the workload ends, only the backend's own processes
// remain children of bulkhead, and they end on their own.
func reapExited() {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR), pid > 0:
			continue
		case err != nil: // ECHILD: none left
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// forceValues is the flag set of an internal `delete --force`.
type forceValues struct{ noValues }

func (forceValues) IsSet(name string) bool { return name == "force" }
func (forceValues) Bool(name string) bool  { return name == "force" }

// killedAtDeadline says, as run's last error line, that the job was killed
// at its deadline: its exit status alone (137) is also an OOM kill's. The
// record, which delete then removes, holds the deadline the watchdog set.
func killedAtDeadline(c *creation, id string, exit int) {
	if exit != 128+int(unix.SIGKILL) {
		return
	}
	rec, err := c.reg.Get(id)
	if err != nil || rec.Deadline == nil || time.Now().Before(*rec.Deadline) {
		return
	}
	LogError(fmt.Errorf("run %s: killed at its deadline, max_lifetime %s from start (%s)", id, rec.MaxLifetime, rec.Deadline.UTC().Format(time.RFC3339)))
}
