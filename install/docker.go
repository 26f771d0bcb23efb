// Package install registers bulkhead with container engines by editing
// their configuration files: Docker's daemon.json today. Every edit keeps
// the keys bulkhead does not own, in their order, keeps a backup of the
// file as it was, is idempotent, and can be undone exactly.
package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultDockerConfig is rootful dockerd's configuration file.
const DefaultDockerConfig = "/etc/docker/daemon.json"

// BackupSuffix names the copy of daemon.json taken before bulkhead's most
// recent change to it.
const BackupSuffix = ".bulkhead-backup"

// DockerConfigPath finds the daemon.json the local dockerd reads: rootless
// Docker (a non-root user, or a shell inside rootlesskit) reads
// $XDG_CONFIG_HOME/docker/daemon.json (~/.config/docker/daemon.json when
// XDG_CONFIG_HOME is unset); rootful dockerd reads /etc/docker/daemon.json.
func DockerConfigPath() string {
	if os.Geteuid() == 0 && os.Getenv("ROOTLESSKIT_STATE_DIR") == "" {
		return DefaultDockerConfig
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "docker", "daemon.json")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "docker", "daemon.json")
	}
	return DefaultDockerConfig
}

// Docker describes one registration of bulkhead with dockerd.
type Docker struct {
	// Config is the daemon.json to edit.
	Config string
	// Name is the runtime name (`docker run --runtime=NAME`); the gVisor
	// entry is NAME-runsc.
	Name string
	// Binary is the absolute path of the bulkhead binary.
	Binary string
	// Runsc is the absolute path of the bulkhead-runsc symlink, or "" when
	// runsc is not installed (no gVisor entry is added then).
	Runsc string
	// Default also makes NAME dockerd's default-runtime.
	Default bool
	// DryRun computes and reports the change without writing anything.
	DryRun bool
}

// Change is one key bulkhead added, changed or removed.
type Change struct {
	Action string // "added", "changed", "removed", "restored"
	Key    string // e.g. runtimes.bulkhead
	Before string // compact JSON, "" when absent
	After  string // compact JSON, "" when removed
}

func (c Change) String() string {
	switch c.Action {
	case "added":
		return fmt.Sprintf("added   %s = %s", c.Key, c.After)
	case "removed":
		return fmt.Sprintf("removed %s (was %s)", c.Key, c.Before)
	default:
		return fmt.Sprintf("%-7s %s: %s -> %s", c.Action, c.Key, c.Before, c.After)
	}
}

// Result is what an install or uninstall did (or, with DryRun, would do).
type Result struct {
	Path    string
	Backup  string // the backup written, "" when none was
	Changes []Change
	Before  []byte // the file before; nil when it did not exist
	After   []byte // the file after; nil when it is removed
	Written bool   // the file on disk was changed
	Removed bool   // the file was removed (it did not exist before install)
}

// runtimeNames are the runtime entries of one registration.
func (d *Docker) runtimeNames() (runc, runsc string) {
	return d.Name, d.Name + "-runsc"
}

func (d *Docker) check() error {
	if d.Config == "" {
		return errors.New("no daemon.json path")
	}
	if d.Name == "" || strings.ContainsAny(d.Name, " \t\n\"/") {
		return fmt.Errorf("runtime name %q: want a plain name such as bulkhead", d.Name)
	}
	for _, p := range []string{d.Binary, d.Runsc} {
		if p != "" && !filepath.IsAbs(p) {
			return fmt.Errorf("runtime path %q is not absolute: dockerd resolves relative paths against its own PATH", p)
		}
	}
	return nil
}

// readConfig returns the file's bytes, or nil when it does not exist.
func readConfig(path string) ([]byte, fs.FileMode, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o644, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := os.ReadFile(path)
	return data, st.Mode().Perm(), err
}

// Install adds bulkhead's runtimes (and default-runtime with Default) to
// daemon.json. Running it again changes nothing.
func (d *Docker) Install() (*Result, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	before, mode, err := readConfig(d.Config)
	if err != nil {
		return nil, err
	}
	doc, err := parseObject(before)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; fix the file first, bulkhead edits only valid JSON", d.Config, err)
	}
	res := &Result{Path: d.Config, Before: before}
	runtimes, err := parseObject(doc.get("runtimes"))
	if err != nil {
		return nil, fmt.Errorf("%s: runtimes: %w", d.Config, err)
	}
	runcName, runscName := d.runtimeNames()
	entries := []struct{ name, path string }{{runcName, d.Binary}}
	if d.Runsc != "" {
		entries = append(entries, struct{ name, path string }{runscName, d.Runsc})
	}
	for _, e := range entries {
		change, err := setRuntime(runtimes, e.name, e.path)
		if err != nil {
			return nil, fmt.Errorf("%s: runtimes.%s: %w", d.Config, e.name, err)
		}
		if change != nil {
			res.Changes = append(res.Changes, *change)
		}
	}
	if len(res.Changes) > 0 {
		raw, err := runtimes.marshal()
		if err != nil {
			return nil, err
		}
		doc.set("runtimes", raw)
	}
	if d.Default {
		want, _ := marshalString(runcName)
		old := doc.get("default-runtime")
		if !sameJSON(old, want) {
			res.Changes = append(res.Changes, change("default-runtime", old, want))
			doc.set("default-runtime", want)
		}
	}
	if len(res.Changes) == 0 {
		res.After = before
		return res, nil
	}
	return res, d.write(res, doc, before, mode)
}

// setRuntime points runtimes[name].path at path, keeping any other field
// of an existing entry (runtimeArgs an administrator added).
func setRuntime(runtimes *object, name, path string) (*Change, error) {
	old := runtimes.get(name)
	entry, err := parseObject(old)
	if err != nil {
		return nil, err
	}
	p, _ := marshalString(path)
	if sameJSON(entry.get("path"), p) {
		return nil, nil
	}
	entry.set("path", p)
	raw, err := entry.marshal()
	if err != nil {
		return nil, err
	}
	runtimes.set(name, raw)
	c := change("runtimes."+name, old, raw)
	return &c, nil
}

func change(key string, before, after json.RawMessage) Change {
	c := Change{Key: key, Before: compact(before), After: compact(after)}
	switch {
	case before == nil:
		c.Action = "added"
	case after == nil:
		c.Action = "removed"
	default:
		c.Action = "changed"
	}
	return c
}

func compact(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// Uninstall removes what Install added: the two runtime entries, and
// default-runtime when it names one of them. The runtimes key goes too when
// bulkhead's entries were all it held and the backup shows the file had
// none. When the result equals the backup, the backup's exact bytes are
// restored; when the file did not exist before install, it is removed.
func (d *Docker) Uninstall() (*Result, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	before, mode, err := readConfig(d.Config)
	if err != nil {
		return nil, err
	}
	res := &Result{Path: d.Config, Before: before, After: before}
	if before == nil {
		return res, nil
	}
	doc, err := parseObject(before)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Config, err)
	}
	backupPath := d.Config + BackupSuffix
	backup, backupErr := os.ReadFile(backupPath)
	if backupErr != nil && !errors.Is(backupErr, fs.ErrNotExist) {
		return nil, backupErr
	}
	var backupDoc *object
	if backupErr == nil {
		if backupDoc, err = parseObject(backup); err != nil {
			backupDoc = nil // a damaged backup is not restored
		}
	}

	runcName, runscName := d.runtimeNames()
	if doc.has("runtimes") {
		runtimes, err := parseObject(doc.get("runtimes"))
		if err != nil {
			return nil, fmt.Errorf("%s: runtimes: %w", d.Config, err)
		}
		removed := false
		for _, name := range []string{runcName, runscName} {
			if old := runtimes.get(name); old != nil {
				res.Changes = append(res.Changes, change("runtimes."+name, old, nil))
				runtimes.remove(name)
				removed = true
			}
		}
		if removed {
			if runtimes.empty() && !hadOwnRuntimes(backupDoc, runcName, runscName) {
				doc.remove("runtimes")
			} else {
				raw, err := runtimes.marshal()
				if err != nil {
					return nil, err
				}
				doc.set("runtimes", raw)
			}
		}
	}
	if old := doc.get("default-runtime"); old != nil {
		var name string
		if json.Unmarshal(old, &name) == nil && (name == runcName || name == runscName) {
			// Put back the administrator's own default, where it stood,
			// if the backup has one that is not ours.
			var prev json.RawMessage
			if backupDoc != nil {
				var prevName string
				if p := backupDoc.get("default-runtime"); json.Unmarshal(p, &prevName) == nil && prevName != runcName && prevName != runscName {
					prev = p
				}
			}
			if prev != nil {
				doc.set("default-runtime", prev)
				res.Changes = append(res.Changes, Change{Action: "restored", Key: "default-runtime", Before: compact(old), After: compact(prev)})
			} else {
				doc.remove("default-runtime")
				res.Changes = append(res.Changes, change("default-runtime", old, nil))
			}
		}
	}
	if len(res.Changes) == 0 {
		return res, nil
	}
	if doc.empty() && backupErr != nil {
		// install created the file; uninstall takes it away again.
		res.After, res.Removed = nil, true
		if d.DryRun {
			return res, nil
		}
		if err := os.Remove(d.Config); err != nil {
			return nil, err
		}
		res.Written = true
		return res, nil
	}
	if backupDoc != nil {
		if after, err := doc.marshal(); err == nil && sameJSON(after, backup) {
			// Byte for byte what the administrator had.
			res.After = backup
			return res, d.writeBytes(res, backup, mode)
		}
	}
	return res, d.write(res, doc, before, mode)
}

// hadOwnRuntimes tells whether the backup shows an administrator's own
// runtimes key (present without bulkhead's entries), which uninstall then
// keeps even when it is left empty.
func hadOwnRuntimes(backup *object, names ...string) bool {
	if backup == nil || !backup.has("runtimes") {
		return false
	}
	runtimes, err := parseObject(backup.get("runtimes"))
	if err != nil {
		return false
	}
	for _, n := range names {
		if runtimes.has(n) {
			return false
		}
	}
	return true
}

// write renders doc in the original file's indentation, checks that the
// result is JSON dockerd can read, keeps a backup and replaces the file.
func (d *Docker) write(res *Result, doc *object, before []byte, mode fs.FileMode) error {
	after, err := doc.render(indentOf(before))
	if err != nil {
		return err
	}
	res.After = after
	return d.writeBytes(res, after, mode)
}

func (d *Docker) writeBytes(res *Result, after []byte, mode fs.FileMode) error {
	var check map[string]any
	if err := json.Unmarshal(after, &check); err != nil {
		return fmt.Errorf("the edited %s would not be valid JSON (nothing written): %w", d.Config, err)
	}
	return writeWithBackup(d.Config, d.DryRun, res, after, mode)
}

// writeWithBackup keeps the file as it was next to it, then replaces it
// with after; a dry run only reports.
func writeWithBackup(path string, dryRun bool, res *Result, after []byte, mode fs.FileMode) error {
	if dryRun {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if res.Before != nil {
		res.Backup = path + BackupSuffix
		if err := writeAtomic(res.Backup, res.Before, mode); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	}
	if err := writeAtomic(path, after, mode); err != nil {
		return err
	}
	res.Written = true
	return nil
}

// writeAtomic replaces path with data through a temporary file in the same
// directory, so dockerd never reads half a file.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
