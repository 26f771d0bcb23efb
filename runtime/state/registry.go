package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

// Record is what bulkhead remembers of a container it created and every
// verb reads: which backend owns it and what polices it. What the policy
// decided and verification found are its Findings, kept beside it.
type Record struct {
	ID          string     `json:"id"`
	Backend     string     `json:"backend"`
	BackendPath string     `json:"backend_path"`
	Bundle      string     `json:"bundle"`
	Profile     string     `json:"profile"`
	Mode        specs.Mode `json:"mode"`
	Created     time.Time  `json:"created"`
	InitPid     int        `json:"init_pid,omitempty"`
	// InitStart is the init's start time, so that a reused pid is not
	// taken for the container's (see StillRunning).
	InitStart uint64 `json:"init_start,omitempty"`
	// InitExe is the program the init ran when create verified it
	// (ExeID), runc's own init on runc: once it differs, start released
	// the init, whatever runc's exec.fifo says (InitReleased).
	InitExe     string `json:"init_exe,omitempty"`
	CgroupsPath string `json:"cgroups_path,omitempty"`
	// CgroupParents are the groups above CgroupsPath, deepest first, that
	// a create made for a caller's path (see runtime's markMadeParents):
	// the delete of the last container below one removes it.
	CgroupParents []string `json:"cgroup_parents,omitempty"`
	// Pod is set on a CRI pod sandbox: the containers of this pod, and
	// only they, may join its namespaces (see PodSandbox).
	Pod *Pod `json:"pod,omitempty"`
	// Seccomp is the filter handed over when it is not the profile's own
	// (the profile's narrowed by the caller's), which exec'd processes
	// run under too.
	Seccomp *rspec.LinuxSeccomp `json:"seccomp,omitempty"`
	// MaxLifetime is the effective wall-clock lifetime, enforced by the
	// watchdog WatchdogPid; Deadline is set when the watchdog sees the
	// container start.
	MaxLifetime string     `json:"max_lifetime,omitempty"`
	WatchdogPid int        `json:"watchdog_pid,omitempty"`
	Deadline    *time.Time `json:"deadline,omitempty"`
	// BrokerPid is the egress broker of a profile with egress.
	BrokerPid int `json:"broker_pid,omitempty"`
	// StartsByFifo says that runc's start has nothing to do for this
	// container but release its init through exec.fifo, which bulkhead
	// then does itself (runtime/start_fifo.go): runc, enforce mode, no
	// poststart hook. A record without it is started by runc.
	StartsByFifo bool `json:"starts_by_fifo,omitempty"`
}

// Verified tells whether the create that wrote r finished: the init's pid
// is written only by a create's last step, after the kernel's controls
// were verified and the watchdog and broker started. A create that was
// killed before (SIGKILL, or a caller's timeout) leaves a record without
// it, and a backend container nothing checked.
func (r *Record) Verified() bool { return r.InitPid != 0 }

// Registry maps (root, id) to the backend that owns the container. Every
// change happens under an exclusive flock on one file, so parallel creates
// and deletes cannot lose or corrupt records.
type Registry struct {
	dir string
}

// OpenRegistry returns the registry under the caller's root, creating its
// directory. The directory is kept with its symlinks resolved: dockerd
// hands over /var/run/docker/..., /var/run is a symlink to /run, and the
// kernel names every mount made below it (the workspace overlays) by the
// resolved path only, so that is the spelling bulkhead mounts, finds and
// unmounts them by.
func OpenRegistry(root string) (*Registry, error) {
	dir := Dir(root)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := JudgeRoot(root); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("state directory %s: %w", dir, err)
		}
	}
	// Again once made: below a sticky directory another user may have
	// made the root between the judging and the making. Once it is all
	// there and root's alone, no one else can move a part of it.
	if err := judgeRootMade(root); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	return &Registry{dir: real}, nil
}

// Dir is the directory of one container's state: its record, the original
// spec and anything else bulkhead keeps for it.
func (r *Registry) Dir(id string) string {
	return filepath.Join(r.dir, id)
}

// View is the registry under root for reading only: nothing is created,
// so a dry run leaves no state behind. The directory is resolved as
// OpenRegistry resolves it when it exists.
func View(root string) *Registry {
	dir := Dir(root)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &Registry{dir: dir}
}

// LockName is the registry's lock file beside the containers' directories:
// '@' is no character of a container id (CheckID), so no id is its name.
const LockName = "@lock"

func (r *Registry) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(r.dir, LockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// ErrExists is returned by Add when the id is already taken.
var ErrExists = errors.New("container id already exists")

// Add records a new container. It fails if a record for the id exists.
func (r *Registry) Add(rec *Record) error {
	unlock, err := r.lock()
	if err != nil {
		return err
	}
	defer unlock()
	dir := r.Dir(rec.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("container %s: %w", rec.ID, ErrExists)
		}
		return err
	}
	return r.write(rec)
}

// ErrReplaced is returned by Update and WriteFindings when the id's
// record is not the caller's any more: deleted, or another create's since.
var ErrReplaced = errors.New("its record was deleted or replaced meanwhile")

// Update rewrites the record of the create that added rec. A create
// stopped for a while can find its container deleted (delete --force)
// and the id taken by another create: its record written then would
// name its own init, verified and gone, for the other create's container,
// which nothing verified. So the record on disk must still be rec's, the
// same create's (its Created time), or nothing is written.
func (r *Registry) Update(rec *Record) error {
	return r.whileOwned(rec, func() error { return r.write(rec) })
}

// Owned tells whether the record of rec.ID is still the one rec was
// added as (ErrReplaced when not).
func (r *Registry) Owned(rec *Record) error {
	return r.whileOwned(rec, func() error { return nil })
}

// whileOwned runs write under the lock if the record of rec.ID is still
// the one rec was added as.
func (r *Registry) whileOwned(rec *Record, write func() error) error {
	unlock, err := r.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := r.Holds(rec); err != nil {
		return err
	}
	return write()
}

func (r *Registry) write(rec *Record) error {
	// Compact: the record is read by bulkhead (and `inspect` for a
	// person), and it is written twice per create.
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return specs.WriteVolatile(r.recordPath(rec.ID), data, 0o600)
}

// Modify changes, under the lock, the record of own.ID while it is still
// the one own was added as (ErrReplaced when not).
func (r *Registry) Modify(own *Record, change func(*Record)) error {
	return r.whileOwned(own, func() error {
		rec, err := r.Get(own.ID)
		if err != nil {
			return err
		}
		change(rec)
		return r.write(rec)
	})
}

// Holds tells, without the lock, whether the record of rec.ID is still
// the one rec was added as: ErrReplaced when it is gone or another
// create's, another error when it cannot be read. For a process that
// polls (the watchdog); a decision that writes takes the lock.
func (r *Registry) Holds(rec *Record) error {
	cur, err := r.Get(rec.ID)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case cur.Created.Equal(rec.Created):
		return nil
	}
	return fmt.Errorf("container %s: %w", rec.ID, ErrReplaced)
}

// Get returns the record of id, or an error wrapping os.ErrNotExist.
func (r *Registry) Get(id string) (*Record, error) {
	data, err := os.ReadFile(r.recordPath(id))
	if err != nil {
		return nil, err
	}
	return decodeRecord(id, data)
}

// recordFile is the record's name in a container's state directory.
const recordFile = "record.json"

func decodeRecord(id string, data []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("record of %s: %w", id, err)
	}
	return &rec, nil
}

// Remove deletes the record and all state of id. Removing a missing record
// is not an error: delete must be idempotent.
func (r *Registry) Remove(id string) error {
	unlock, err := r.lock()
	if err != nil {
		return err
	}
	defer unlock()
	// Workspace overlays and their tmpfs live here.
	return RemoveTree(r.Dir(id))
}

// RemoveOwned is Remove of rec's own record and state only: nothing is
// removed while the id holds another create's record (ErrReplaced). A
// directory without a record is a leftover (Add makes both under the
// lock), and goes.
func (r *Registry) RemoveOwned(rec *Record) error {
	unlock, err := r.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if cur, err := r.Get(rec.ID); err == nil && !cur.Created.Equal(rec.Created) {
		return fmt.Errorf("container %s: %w", rec.ID, ErrReplaced)
	}
	return RemoveTree(r.Dir(rec.ID))
}

// IDs lists the ids that have a record.
func (r *Registry) IDs() ([]string, error) {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}
