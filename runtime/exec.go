package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/verify"
	"bulkhead.dev/bulkhead/specs"
)

// processFlags define the exec'd process; bulkhead folds them into one
// process JSON, polices it, and hands only that to the backend.
var processFlags = []string{"process", "cwd", "env", "tty", "user", "additional-gids", "process-label", "apparmor", "no-new-privs", "cap"}

// Exec polices the process an exec asks for with the container's profile
// (capabilities, user, no_new_privs, environment, cwd) and then replaces
// bulkhead with the backend's exec. `docker exec --privileged -u 0` gets no
// capabilities, no root and no_new_privs, like the container's init.
func Exec(g *Globals, v Values, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("exec: container id missing")
	}
	id := args[0]
	c, err := lookupRecorded(g, "exec", id)
	if err != nil {
		return err
	}
	cfg, b, rec, profile := c.cfg, c.backend, c.rec, c.profile
	// refused writes a refusal of the exec's flags to the audit log.
	refused := func(err error) error {
		_ = audit.Write(cfg.AuditLog, &audit.Entry{Event: "exec", ID: id, Bundle: rec.Bundle, Profile: profile.Name,
			Backend: b.Name, Mode: profile.Mode, Outcome: "refused", Error: err.Error()})
		return err
	}
	// The exec'd process gets the caller's stdio and preserved fds.
	if err := backend.JudgeHanded(v.Int("preserve-fds")); err != nil {
		if profile.Mode == specs.Enforce {
			return refused(err)
		}
		logrus.Warnf("bulkhead: audit mode, handed over anyway: %v", err)
	}
	if v.Bool("ignore-paused") && profile.Mode == specs.Enforce {
		return refused(errIgnorePaused)
	}
	if err := refuseUnstarted(g, b, rec); err != nil {
		if profile.Mode == specs.Enforce {
			return refused(err)
		}
		logrus.Warnf("bulkhead: audit mode, run anyway: %v", err)
	}
	if err := checkSubCgroups(v.StringSlice("cgroup")); err != nil && profile.Mode == specs.Enforce {
		return refused(err)
	}
	// An exec without --process starts from the process as handed over.
	proc, err := execProcess(v, args[1:], c.handedBundle())
	if err != nil {
		return err
	}
	// The rootfs is the one handed over (bulkhead's own bundle), so cwd is
	// resolved in it as at create; the caller's config.json, never
	// rewritten, may name another root by now.
	ctx := &specs.Context{Profile: &profile, Bundle: c.handedBundle()}
	// On runc the cwd is resolved in the running container's own tree,
	// which holds what the job wrote (a link in /tmp, its home, its
	// workspace); the host cannot see into gVisor's, where no host
	// descriptor is there to reach.
	live := !b.IsGVisor() && rec.InitPid > 0 && state.Alive(rec.InitPid, rec.InitStart)
	if live {
		ctx.LiveRoot = fmt.Sprintf("/proc/%d/root", rec.InitPid)
	}
	policed, decisions, err := specs.ApplyProcess(ctx, proc)
	var cwdDir *os.File // the cwd judged, handed to runc open
	if err == nil && live && profile.Mode == specs.Enforce {
		var d *specs.Decision
		cwdDir, d, err = execCwd(ctx.LiveRoot, policed, v.Int("preserve-fds"))
		if cwdDir != nil {
			defer cwdDir.Close()
			decisions = append(decisions, *d)
		}
	}
	if live && !state.Alive(rec.InitPid, rec.InitStart) {
		// Whatever the cwd's judgement said: a tree that went with its
		// process answers nothing about the cwd.
		err = fmt.Errorf("exec: container %s stopped while its cwd was resolved", id)
	}
	entry := audit.Entry{Event: "exec", ID: id, Bundle: rec.Bundle, Profile: profile.Name, Backend: b.Name,
		Mode: profile.Mode, Decisions: decisions, Outcome: "exec"}
	if err != nil && profile.Mode == specs.Enforce {
		entry.Outcome, entry.Error = "refused", err.Error()
		_ = audit.Write(cfg.AuditLog, &entry)
		return err
	}
	if profile.Mode == specs.Audit {
		policed = proc
	}
	// runsc makes an exec's own stdio its terminal (runtime/exec_terminal.go):
	// bulkhead hands it a pty of its own making, never the caller's.
	ptyOfOurs := b.IsGVisor() && policed.Terminal
	ownTerminal := ptyOfOurs || b.OwnTerminal(policed.Terminal, v.String("console-socket") != "")
	if err := b.JudgeStdioOwner(policed.User.UID, ownTerminal); err != nil {
		if profile.Mode == specs.Enforce {
			entry.Outcome, entry.Error = "refused", err.Error()
			_ = audit.Write(cfg.AuditLog, &entry)
			return err
		}
		logrus.Warnf("bulkhead: audit mode, handed over anyway: %v", err)
	}
	if b.IsGVisor() && !ownTerminal {
		if err := backend.ShieldNullStdio(); err != nil {
			return err
		}
	}
	if b.IsGVisor() && profile.Mode == specs.Enforce {
		handed, _, err := specs.Load(c.handedBundle())
		if err != nil {
			return err
		}
		entry.Decisions = append(entry.Decisions, backend.ExecNprocForGVisor(handed, policed)...)
		d, err := execUnderFilter(c.handedBundle(), handed, policed)
		if err != nil {
			entry.Outcome, entry.Error = "refused", err.Error()
			_ = audit.Write(cfg.AuditLog, &entry)
			return err
		}
		entry.Decisions = append(entry.Decisions, d)
	}
	_ = audit.Write(cfg.AuditLog, &entry)
	data, err := json.Marshal(policed)
	if err != nil {
		return err
	}
	path, err := memfdPath("bulkhead-process", data)
	if err != nil {
		return err
	}
	if ptyOfOurs {
		return gvisorExecOnPty(g, b, v, path, id)
	}
	if b.IsGVisor() && v.Bool("detach") {
		return detachGVisorExec(g, b, v, path, id, nil)
	}
	var own []*os.File
	if cwdDir != nil {
		own = append(own, cwdDir)
	}
	if v.Bool("detach") && profile.Mode == specs.Enforce {
		return execDetachedVerified(g, c, v, policed, path, id, own)
	}
	if !b.IsGVisor() && profile.Mode == specs.Enforce {
		// Inside gVisor the exec'd process is no host process to read:
		// gVisor's kernel applies its identity and capabilities.
		return execAttachedVerified(g, c, v, policed, path, id, own)
	}
	flags, _ := ForwardFlags("exec", v, b.IsGVisor(), processFlags...)
	rest := append([]string{"--process", path}, flags...)
	rest = append(rest, id)
	return execBackend(g.backendArgv(b, "exec", rest...))
}

// execCwd judges an exec's cwd in the running container's tree. It
// refuses one its user may not reach by itself: runc enters it as root
// before it drops to the user, and a short process (cat of a file in
// alice's 0700 directory, inside a bind of its open parent) has done its
// work before the verification after start. A cwd the job could swap
// between this judgement and runc's chdir (a link on the way, a directory
// it may write) is handed to runc as the directory judged: open, as the
// descriptor after the caller's preserved ones, with p.Cwd its
// /proc/self/fd path, which runc enters without a lookup of the path.
func execCwd(liveRoot string, p *rspec.Process, preserved int) (*os.File, *specs.Decision, error) {
	searchesAll := p.Capabilities != nil && (slices.Contains(p.Capabilities.Effective, "CAP_DAC_OVERRIDE") || slices.Contains(p.Capabilities.Effective, "CAP_DAC_READ_SEARCH"))
	judged, err := verify.JudgeExecCwd(liveRoot, p.Cwd, p.User.UID, p.User.GID, p.User.AdditionalGids)
	if errors.Is(err, verify.ErrNoCwd) {
		return nil, nil, fmt.Errorf("rule cwd refuses process.cwd %s: there is no such directory in the container; give the exec a cwd that exists", p.Cwd)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("rule cwd: process.cwd %s cannot be checked: %w", p.Cwd, err)
	}
	refuse := func(err error) (*os.File, *specs.Decision, error) {
		if judged.Dir != nil {
			judged.Dir.Close()
		}
		return nil, nil, err
	}
	if judged.Under != "" {
		return refuse(fmt.Errorf("rule cwd refuses process.cwd %s: it led to a directory under %s when opened for the exec (a link on the way changed after the rule resolved it; beyond lie leaked host descriptors, CVE-2024-21626); give the exec a cwd the job cannot redirect", p.Cwd, judged.Under))
	}
	if judged.Blocked != "" && !searchesAll {
		return refuse(fmt.Errorf("rule cwd refuses process.cwd %s: %s, and runc enters it as root before it drops to the user; give the exec a cwd its user may reach", p.Cwd, judged.Blocked))
	}
	if judged.Dir == nil {
		return nil, nil, nil
	}
	d := &specs.Decision{Rule: "cwd", Field: "process.cwd", Action: specs.Tightened, Before: p.Cwd,
		After: "/proc/self/fd/" + strconv.Itoa(3+preserved), Layer: specs.LayerDAC,
		Why: "the job may change what the path names before runc enters it (a link or a directory it may write on the way): runc enters the directory judged, handed to it open"}
	p.Cwd = d.After
	return judged.Dir, d, nil
}

// detachGVisorExec does what `runsc exec --detach` should: runsc's own
// detach re-runs itself with --pid-file appended after the container id,
// where its flag parser no longer sees it, and fails. bulkhead starts the
// attached exec in a session of its own instead and writes that process's
// pid, which is also what runsc would have written.
// stdio, when not nil, is the process's stdin, stdout and stderr in place
// of bulkhead's own.
func detachGVisorExec(g *Globals, b *backend.Backend, v Values, process, id string, stdio *os.File) error {
	flags, _ := ForwardFlags("exec", v, true, append(processFlags, "detach", "pid-file", "console-socket")...)
	rest := append([]string{"--process", process}, flags...)
	argv := g.backendArgv(b, "exec", append(rest, id)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if stdio != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio, stdio, stdio
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", id, err)
	}
	if pf := v.String("pid-file"); pf != "" {
		if err := specs.WriteAtomic(pf, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			_ = cmd.Process.Kill()
			return fmt.Errorf("exec %s: pid file: %w", id, err)
		}
	}
	return cmd.Process.Release()
}

// execProcess builds the process runc would run for these exec flags:
// --process as given, otherwise the container's process with the flags
// applied (runc's own rules: args replace, env appends, caps add).
func execProcess(v Values, args []string, bundle string) (*rspec.Process, error) {
	if path := v.String("process"); path != "" {
		data, err := specs.ReadRegular(path, true)
		if err != nil {
			return nil, fmt.Errorf("exec --process: %w", err)
		}
		var p rspec.Process
		if err := specs.DecodeStrict(bytes.NewReader(data), &p); err != nil {
			return nil, fmt.Errorf("exec --process %s: %w", path, err)
		}
		return &p, nil
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("exec: no command given and no --process")
	}
	s, _, err := specs.Load(bundle)
	if err != nil {
		return nil, err
	}
	p := s.Process
	if p == nil {
		p = &rspec.Process{}
	}
	p.Args = args
	p.Terminal = v.Bool("tty")
	if c := v.String("cwd"); c != "" {
		p.Cwd = c
	}
	p.Env = append(p.Env, v.StringSlice("env")...)
	if a := v.String("apparmor"); a != "" {
		p.ApparmorProfile = a
	}
	if l := v.String("process-label"); l != "" {
		p.SelinuxLabel = l
	}
	if caps := v.StringSlice("cap"); len(caps) > 0 {
		if p.Capabilities == nil {
			p.Capabilities = &rspec.LinuxCapabilities{}
		}
		for _, c := range caps {
			c = strings.ToUpper(c)
			if !strings.HasPrefix(c, "CAP_") {
				c = "CAP_" + c
			}
			p.Capabilities.Bounding = append(p.Capabilities.Bounding, c)
			p.Capabilities.Effective = append(p.Capabilities.Effective, c)
			p.Capabilities.Permitted = append(p.Capabilities.Permitted, c)
		}
	}
	if v.IsSet("no-new-privs") {
		p.NoNewPrivileges = v.Bool("no-new-privs")
	}
	if u := v.String("user"); u != "" {
		uidStr, gidStr, hasGid := strings.Cut(u, ":")
		uid, err := strconv.ParseUint(uidStr, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("exec --user %q: want <uid>[:<gid>]", u)
		}
		p.User.UID = uint32(uid)
		if hasGid {
			gid, err := strconv.ParseUint(gidStr, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("exec --user %q: want <uid>[:<gid>]", u)
			}
			p.User.GID = uint32(gid)
		}
	}
	for _, g := range v.StringSlice("additional-gids") {
		gid, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("exec --additional-gids %q: not a number", g)
		}
		p.User.AdditionalGids = append(p.User.AdditionalGids, uint32(gid))
	}
	return p, nil
}

// memfdPath puts data in an anonymous file that survives exec and
// returns a path the backend can open. Nothing is left on disk.
func memfdPath(name string, data []byte) (string, error) {
	fd, err := unix.MemfdCreate(name, 0)
	if err != nil {
		return "", fmt.Errorf("memfd: %w", err)
	}
	if _, err := unix.Write(fd, data); err != nil {
		unix.Close(fd)
		return "", fmt.Errorf("memfd: %w", err)
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), nil
}
