package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"bulkhead.dev/bulkhead/runtime/backend"
)

// Backend checks one configured backend: found, runs, its version,
// what it supports and, for runc, the escapes the table knows. The backend
// is returned only when it runs, for the live check.
//
// path is the configured path, used the profiles that name the backend,
// and resolve finds its binary.
func Backend(name, path string, used []string, resolve func() (*backend.Backend, error), changelog func(string) (*Changelog, error)) (*backend.Backend, []Check) {
	title := "backend " + name
	// A backend no profile uses only matters to an entry that selects it
	// by --backend, whose creates then fail saying so; its absence weakens
	// nothing and is no warning on every host without it (the built-in
	// configuration names crun, which Debian does not install).
	usedBy := "used by profile " + strings.Join(used, ", ")
	b, err := resolve()
	if errors.Is(err, backend.ErrGVisorFlags) {
		return nil, []Check{{Name: title, Status: StatusFail, Looked: "[backends." + name + "] args", Found: err.Error(),
			Fix: fmt.Sprintf("remove the flag from [backends.%s] args: every create on it is refused", name)}}
	}
	if err != nil && len(used) == 0 {
		return nil, []Check{{Name: title, Status: StatusOK, Looked: "path = " + path,
			Found: fmt.Sprintf("not installed (%v); no profile uses it", errors.Unwrap(err))}}
	}
	if err != nil {
		return nil, []Check{{Name: title, Status: StatusFail, Looked: "path = " + path,
			Found: fmt.Sprintf("not found (%v); %s", errors.Unwrap(err), usedBy),
			Fix:   fmt.Sprintf("install %s, or set [backends.%s] path to its absolute path", b0(path), name)}}
	}
	if len(used) == 0 {
		usedBy = "no profile uses it"
	}
	looked := b.Path + " --version"
	out, err := runDoctorCmd(b.Path, "--version")
	if err != nil {
		return nil, []Check{{Name: title, Status: StatusFail, Looked: looked, Found: err.Error(),
			Fix: fmt.Sprintf("a %s that cannot tell its version cannot run containers either: reinstall it or point [backends.%s] path at a working binary", b.Kind(), name)}}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	checks := []Check{{Name: title, Status: StatusOK, Looked: looked, Found: first + "; " + usedBy}}
	switch b.Kind() {
	case "runc":
		checks = append(checks, runcFeatures(b))
		checks = append(checks, runcEscapes(b, first, changelog)...)
	case "runsc":
		checks = append(checks, runscFlags(b))
	}
	return b, checks
}

func b0(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// runDoctorCmd runs a short command and returns its stdout; a non-zero
// exit is an error that carries the status and the last stderr line.
func runDoctorCmd(path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child the command leaves running (runsc starts helpers of its
	// own) would hold the output pipes open and Wait with them.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s %s: no answer within %s", path, strings.Join(args, " "), Timeout)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		msg := lastLine(stderr.String())
		if msg == "" {
			msg = lastLine(stdout.String())
		}
		return "", fmt.Errorf("%s %s exited with status %d: %s", path, strings.Join(args, " "), exit.ExitCode(), msg)
	}
	if err != nil {
		return "", err
	}
	return stdout.String(), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// runcFeatures reads `runc features` (runc 1.1 and later): the seccomp
// support and the mount options bulkhead hands over.
func runcFeatures(b *backend.Backend) Check {
	c := Check{Name: "backend " + b.Name + " features", Looked: b.Path + " features"}
	out, err := runDoctorCmd(b.Path, "features")
	if err != nil {
		c.Status, c.Found = StatusWarn, err.Error()
		c.Fix = "runc before 1.1 has no features verb; upgrade runc (a runc that old lacks the escape fixes below too)"
		return c
	}
	var f struct {
		Linux struct {
			Seccomp struct {
				Enabled bool `json:"enabled"`
			} `json:"seccomp"`
		} `json:"linux"`
		MountOptions []string `json:"mountOptions"`
	}
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		c.Status, c.Found = StatusWarn, "unreadable: "+err.Error()
		return c
	}
	var lacks []string
	for _, o := range []string{"ro", "nosuid", "nodev", "noexec", "rbind"} {
		if !slices.Contains(f.MountOptions, o) {
			lacks = append(lacks, o)
		}
	}
	switch {
	case !f.Linux.Seccomp.Enabled:
		c.Status, c.Found = StatusFail, "built without seccomp: every container would run without its filter"
		c.Fix = "install a runc built with libseccomp (Debian's runc is), or use the runsc backend"
	case len(lacks) > 0:
		c.Status, c.Found = StatusFail, "does not know the mount options "+strings.Join(lacks, ", ")
		c.Fix = "upgrade runc"
	default:
		c.Status, c.Found = StatusOK, "seccomp enabled; mount options ro, nosuid, nodev, noexec, rbind known"
	}
	return c
}

// runcEscapes judges the runc's version against runc_cves.toml, one line
// per CVE, each saying which source decided.
func runcEscapes(b *backend.Backend, versionLine string, changelog func(string) (*Changelog, error)) []Check {
	table, err := RuncCVEs()
	if err != nil {
		panic(err) // embedded; TestRuncCVETable keeps it loadable
	}
	version := strings.TrimSpace(strings.TrimPrefix(versionLine, "runc version"))
	cl, clErr := changelog(b.Path)
	verdicts, err := judgeRunc(version, cl, table)
	if err != nil {
		return []Check{{Name: "backend " + b.Name + " escapes", Status: StatusFail, Looked: b.Path + " --version",
			Found: err.Error(), Fix: "cannot judge this runc against known escapes: install a released runc"}}
	}
	var out []Check
	for _, v := range verdicts {
		c := Check{Name: "backend " + b.Name + " " + v.CVE.ID, Looked: b.Path + " " + version, Found: v.CVE.Summary + ": "}
		if v.Fixed {
			c.Status, c.Found = StatusOK, c.Found+"fixed, decided by "+v.Decided
		} else {
			c.Status, c.Found = StatusFail, c.Found+"NOT fixed, decided by "+v.Decided
			if clErr != nil {
				c.Found += fmt.Sprintf(" (distribution changelog unreadable: %v)", clErr)
			}
			c.Fix = fmt.Sprintf("install runc %s or later on its branch (or a distribution build whose changelog names %s), "+
				"or send untrusted jobs to the runsc backend (profile gvisor, bulkhead-runsc); see %s",
				strings.Join(v.CVE.Fixed, " / "), v.CVE.ID, v.CVE.Source)
		}
		out = append(out, c)
	}
	return out
}

// runscFlags runs runsc with the flags bulkhead passes it on every call
// (its configured args, --network=none, --oci-seccomp): a build too old
// to know one of them would refuse every container.
func runscFlags(b *backend.Backend) Check {
	args := append(slices.Clone(b.Args), "--network=none", "--oci-seccomp", "--version")
	c := Check{Name: "backend " + b.Name + " flags", Looked: b.Path + " " + strings.Join(args, " ")}
	if _, err := runDoctorCmd(b.Path, args...); err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		c.Fix = "upgrade gVisor to a release that knows these flags, or change [backends." + b.Name + "] args"
		return c
	}
	c.Status, c.Found = StatusOK, "accepted"
	return c
}
