package runtime

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/detach"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/watchdog"
	"bulkhead.dev/bulkhead/specs"
)

// WatchdogVerb is the hidden verb of the watchdog process: a re-exec of
// bulkhead itself that enforces max_lifetime from outside the sandbox.
const WatchdogVerb = "watchdog"

// startWatchdog starts the watchdog of a created and verified container
// when it has a lifetime. The lifetime is a boundary: if no watchdog runs,
// the creation fails. Audit mode arms none (it promises the backend's own
// behaviour) but records the lifetime it would enforce.
func (c *creation) startWatchdog() error {
	if c.lifetime <= 0 {
		return nil
	}
	c.rec.MaxLifetime = c.lifetime.String()
	if c.sel.Profile.Mode != specs.Enforce {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	pid, err := detach.Spawn("watchdog", watchdogArgv(self, c.g, true, c.rec.ID, c.rec.InitPid, c.lifetime, c.rec.Created.Format(time.RFC3339Nano)))
	if err != nil {
		return fmt.Errorf("max_lifetime %s: start watchdog: %w", c.lifetime, err)
	}
	logrus.Debugf("bulkhead: watchdog %d enforces max_lifetime %s on %s", pid, c.lifetime, c.rec.ID)
	c.rec.WatchdogPid = pid
	return nil
}

// watchdogArgv is the command line of a watchdog (spawn is the
// intermediate that detaches it). It carries the globals that decide the
// backend's state and configuration, so the watchdog talks to the same
// backend instance as the engine; it runs in /, so they are absolute.
// created is the record's creation time (RFC 3339): the watchdog acts
// only while the record under id is still that create's.
func watchdogArgv(self string, g *Globals, spawn bool, id string, pid int, lifetime time.Duration, created string) []string {
	var args []string
	if spawn {
		args = append(args, "--spawn")
	} else {
		args = append(args, "--ready-fd", "3")
	}
	args = append(args, "--pid", strconv.Itoa(pid), "--lifetime", lifetime.String(), "--created", created, id)
	return g.selfArgv(self, WatchdogVerb, args...)
}

// SpawnWatchdog is the intermediate process between create and the
// watchdog (detach.Detach).
func SpawnWatchdog(g *Globals, id string, initPid int, lifetime time.Duration, created string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return detach.Detach("watchdog", watchdogArgv(self, g, false, id, initPid, lifetime, created))
}

// Watchdog is the watchdog verb: it finds the container's backend in its
// record and enforces the deadline (watchdog.Watch). ready (fd 3 from the
// intermediate) gets "ok" once the init is watched, or the error.
func Watchdog(g *Globals, id string, initPid int, lifetime time.Duration, created string, ready *os.File) error {
	wd, err := newWatch(g, id, initPid, lifetime, created)
	if err != nil {
		if ready != nil {
			fmt.Fprintln(ready, err)
			ready.Close()
		}
		return err
	}
	return wd.Run(ready)
}

func newWatch(g *Globals, id string, initPid int, lifetime time.Duration, created string) (*watchdog.Watch, error) {
	if err := state.CheckID(id); err != nil {
		return nil, err
	}
	if initPid <= 0 || lifetime <= 0 {
		return nil, fmt.Errorf("watchdog %s: want --pid and --lifetime", id)
	}
	own := &state.Record{ID: id}
	var err error
	if own.Created, err = time.Parse(time.RFC3339Nano, created); err != nil {
		return nil, fmt.Errorf("watchdog %s: want --created, the creation time of its record: %w", id, err)
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, err
	}
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return nil, err
	}
	rec, err := reg.Get(id)
	if err == nil {
		err = reg.Holds(own)
	}
	if err != nil {
		return nil, fmt.Errorf("watchdog %s: %w", id, err)
	}
	b, err := cfg.ResolveBackend(rec.Backend)
	if err != nil {
		return nil, err
	}
	// The init as create verified it: the watchdog starts before create
	// returns, so before any start, and before create records the init.
	initRec := &state.Record{ID: id, InitPid: initPid, InitStart: state.InitStart(initPid), InitExe: state.ExeID(initPid)}
	return &watchdog.Watch{Reg: reg, Backend: b, ID: id, Created: own.Created, Pid: initPid, Lifetime: lifetime, AuditLog: cfg.AuditLog,
		Argv: func(verb string, args ...string) []string { return g.backendArgv(b, verb, args...) },
		Unstarted: func(status string) bool {
			if b.Kind() != "runc" {
				return status == "created" // runsc pauses no created container
			}
			return (status == "created" || status == "paused") && notStarted(g, b, initRec)
		}}, nil
}
