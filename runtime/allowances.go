package runtime

import (
	"fmt"
	"strings"

	"bulkhead.dev/bulkhead/specs"
)

// Allowance is one line of what a job may do under a profile and what it
// meets past that: the error it gets and the layer that gives it, so a
// job's failure at the boundary can be told from its own. `bulkhead check`
// prints it and the README's job profile tables are this, rendered.
type Allowance struct {
	What  string `json:"what"`
	May   string `json:"may"`
	Fails string `json:"fails"`
}

// Allowances derives a profile's lines from its values, for a backend.
func Allowances(p *specs.Profile, gvisor bool) []Allowance {
	size := func(v string) string {
		if v == "" || v == "0" {
			return "no cap"
		}
		return v
	}
	none := func(v string) bool { return v == "" || v == "0" }
	home := Allowance{"home and caches", "none: HOME stays the image's, under the read-only root",
		"EROFS writing below HOME"}
	if !none(p.HomeSize) {
		home = Allowance{"home and caches", fmt.Sprintf("write %s in %s (HOME, XDG_CACHE_HOME, GOCACHE, GOPATH, PIP_CACHE_DIR, npm_config_cache, CARGO_HOME where the caller set none)", p.HomeSize, specs.HomeDir),
			"ENOSPC past " + p.HomeSize + "; EACCES executing from it (noexec)"}
	}
	scratch := Allowance{"build scratch", "none: nothing written in the container can be executed",
		"EACCES executing from /tmp, a tmpfs or /workspace (noexec); ENOSYS from memfd_create"}
	if !none(p.ScratchSize) {
		scratch = Allowance{"build scratch", fmt.Sprintf("write %s in %s and execute it, as what the job writes in /workspace or a memfd (TMPDIR, GOTMPDIR where the caller set none)", p.ScratchSize, specs.ScratchDir),
			"ENOSPC past " + p.ScratchSize + "; setuid bits ignored (nosuid)"}
	}
	workspace := Allowance{"/workspace", fmt.Sprintf("write %s on a copy-on-write layer over the checkout; `bulkhead diff` shows it, the host checkout is never written", size(p.WorkspaceSize)),
		"ENOSPC past " + size(p.WorkspaceSize)}
	if !p.ExecutesWrites() {
		workspace.Fails += "; EACCES executing what the job wrote there (noexec)"
	}
	switch p.WorkspaceMode {
	case "readonly":
		workspace = Allowance{"/workspace", "read the checkout", "EROFS on any write"}
	case "direct":
		workspace = Allowance{"/workspace", "write the host checkout in place (trusted profiles only)", "file permissions (EACCES)"}
	}
	pids := Allowance{"processes", fmt.Sprintf("%d processes and threads together", p.PidsLimit),
		"EAGAIN from fork/clone (pids.events max grows)"}
	if gvisor {
		pids.Fails = "EAGAIN from fork/clone (RLIMIT_NPROC inside gVisor)"
	}
	if p.PidsLimit == 0 {
		pids = Allowance{"processes", "no limit", "—"}
	}
	memory := Allowance{"memory", fmt.Sprintf("%s including the pages of every tmpfs (/tmp, home, scratch, /dev/shm) and the workspace layer", size(p.Memory)),
		"SIGKILL from the OOM killer, exit 137 (memory oom_kill grows)"}
	cpu := Allowance{"cpu", fmt.Sprintf("%g CPUs", p.CPUs), "nothing fails: throttled (cpu.stat nr_throttled grows)"}
	if p.CPUs == 0 {
		cpu = Allowance{"cpu", "no quota", "—"}
	}
	lifetime := Allowance{"wall time", "no limit", "—"}
	if !none(p.MaxLifetime) {
		lifetime = Allowance{"wall time", p.MaxLifetime + " after start",
			"SIGKILL to every process, exit 137 (audit event deadline)"}
	}
	network := Allowance{"network", "loopback only", "ENETUNREACH connecting anywhere else"}
	if gvisor {
		network.Fails = "EHOSTUNREACH connecting anywhere else (gVisor's netstack)"
	}
	if len(p.Egress) > 0 {
		network = Allowance{"network", fmt.Sprintf("HTTP and HTTPS through the egress broker (HTTP_PROXY, %s) to %s only", specs.EgressProxyAddr, strings.Join(p.Egress, ", ")),
			"403 from the broker for any other destination; " + network.Fails}
	}
	if p.Network == specs.NetworkCaller {
		network = Allowance{"network", "the caller's network namespace", "—"}
	}
	return []Allowance{
		{"root filesystem", "read the image", "EROFS on any write outside the places below"},
		workspace,
		home,
		{"/tmp", size(p.TmpSize) + ", noexec", "ENOSPC past " + size(p.TmpSize) + "; EACCES executing from it"},
		scratch,
		memory,
		pids,
		cpu,
		lifetime,
		network,
		{"identity", fmt.Sprintf("run as %d:%d (or an allowed id), no capabilities, no_new_privs", p.UID, p.GID),
			"EACCES on other users' files; EPERM on privileged operations"},
		{"system calls", "the default-deny seccomp profile (bulkhead seccomp show)",
			"EPERM (ptrace, mount, unshare, bpf, keyrings, ...), ENOSYS for clone3"},
	}
}

// AllowancesMarkdown renders a profile's allowances as a README table.
func AllowancesMarkdown(p *specs.Profile) string {
	var b strings.Builder
	b.WriteString("| | may | fails with |\n|---|---|---|\n")
	for _, a := range Allowances(p, false) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", a.What, a.May, a.Fails)
	}
	return b.String()
}
