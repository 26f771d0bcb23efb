package specs

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	units "github.com/docker/go-units"
)

// Mode says whether a profile changes the spec or only records what it
// would change.
type Mode string

const (
	Enforce Mode = "enforce"
	Audit   Mode = "audit"
)

// Network values of a profile.
const (
	NetworkNone   = "none"   // a new network namespace with loopback only
	NetworkCaller = "caller" // whatever the caller configured (test and trusted profiles)
)

// Profile is one named policy: the value of every control. Its TOML form is
// the [profiles.<name>] table of /etc/bulkhead/config.toml; unset keys take
// the default profile's values (see runtime.LoadConfig).
type Profile struct {
	Name string `toml:"-" json:"name"`
	// Mode enforce rewrites the spec; audit records the decisions and hands
	// the caller's spec over unchanged.
	Mode Mode `toml:"mode" json:"mode"`
	// Backend is the OCI runtime that runs the containers of this profile.
	Backend string `toml:"backend" json:"backend"`
	// Selectable lets a job pick this profile through an annotation.
	Selectable bool `toml:"selectable" json:"selectable"`
	// Trusted profiles may use workspace mode "direct".
	Trusted bool `toml:"trusted" json:"trusted"`

	UID            uint32 `toml:"uid" json:"uid"`
	GID            uint32 `toml:"gid" json:"gid"`
	ReadonlyRootfs bool   `toml:"readonly_rootfs" json:"readonly_rootfs"`
	TmpSize        string `toml:"tmp_size" json:"tmp_size"`
	// TmpfsTotal bounds the sizes of all tmpfs mounts together (/tmp,
	// /dev, /dev/shm, /run, ...): their pages are memory.
	TmpfsTotal string `toml:"tmpfs_total" json:"tmpfs_total"`
	// HomeSize is the size of the sandbox user's home tmpfs at HomeDir
	// (with its caches); "0" gives no home (rule home).
	HomeSize string `toml:"home_size" json:"home_size"`
	// ScratchSize is the size of the build scratch tmpfs at ScratchDir,
	// the one place where what the job builds may be executed; "0" gives
	// none (rule scratch).
	ScratchSize string  `toml:"scratch_size" json:"scratch_size"`
	Network     string  `toml:"network" json:"network"`
	PidsLimit   int64   `toml:"pids_limit" json:"pids_limit"`
	Memory      string  `toml:"memory" json:"memory"`
	CPUs        float64 `toml:"cpus" json:"cpus"`
	// Seccomp is empty for the built-in default profile, or the path of a
	// profile in the moby JSON format.
	Seccomp       string `toml:"seccomp" json:"seccomp,omitempty"`
	DropSecretEnv bool   `toml:"drop_secret_env" json:"drop_secret_env"`
	// MaxLifetime is a Go duration; "0" or empty means none.
	MaxLifetime string `toml:"max_lifetime" json:"max_lifetime"`

	// AllowedUIDs and AllowedGIDs are ids ("N" or "N-M") the job may run
	// as besides UID and GID; any other id is replaced (uid, gid) or
	// dropped (supplementary groups). An id can own host files the job
	// can reach: a socket, a bound directory.
	AllowedUIDs []string `toml:"allowed_uids" json:"allowed_uids,omitempty"`
	AllowedGIDs []string `toml:"allowed_gids" json:"allowed_gids,omitempty"`
	// BindRoots are the host directories below which a bind source may
	// lie; the engines' own per-container files are matched apart.
	BindRoots []string `toml:"bind_roots" json:"bind_roots,omitempty"`
	// HooksAllowed are the hook executables (absolute paths) that may run
	// on the host as root for a container.
	HooksAllowed []string `toml:"hooks_allowed" json:"hooks_allowed,omitempty"`
	// AnnotationsAllowed are further annotation keys that may reach the
	// backend ("key", or "prefix*").
	AnnotationsAllowed []string `toml:"annotations_allowed" json:"annotations_allowed,omitempty"`
	// AppArmorProfiles are the AppArmor profiles a container may name.
	AppArmorProfiles []string `toml:"apparmor_profiles" json:"apparmor_profiles,omitempty"`
	// CompatSyscalls keeps the x32 and arm32 system call ABIs in the
	// seccomp filter (seccomp.compatABIs); without it they are refused
	// whole. i386 never is: its socketcall and ipc hide their arguments
	// from the filter.
	CompatSyscalls bool `toml:"compat_syscalls" json:"compat_syscalls"`

	Workspaces    []string `toml:"workspaces" json:"workspaces,omitempty"`
	WorkspaceMode string   `toml:"workspace_mode" json:"workspace_mode,omitempty"`
	WorkspaceSize string   `toml:"workspace_size" json:"workspace_size,omitempty"`
	// WorkspaceOwners are the uids and gids ("N" or "N-M") whose workspace
	// source may be id-mapped: the sandbox then reads and writes the tree
	// with its owner's rights, 0600 files and 0700 directories included.
	// The caller names the source, anywhere below bind_roots, so this is
	// the identity the sandbox may take on there; root and the system
	// accounts are left out by default.
	WorkspaceOwners []string `toml:"workspace_owners" json:"workspace_owners,omitempty"`
	// CgroupParents are the groups (cgroupfs paths) where many tenants'
	// containers live side by side, so that a caller's new cgroup may lie
	// below one that holds other containers' processes: the engines'
	// grouping parents. Any other existing group above a caller's
	// cgroupsPath that holds processes is someone's, and a container below
	// it would share that one's limits (rule cgroups_path).
	CgroupParents []string `toml:"cgroup_parents" json:"cgroup_parents,omitempty"`

	// Egress are the destinations ("host:port", "*.domain:port" or
	// "address:port") the job may reach through the egress broker, an
	// HTTP proxy bulkhead runs outside the sandbox; none by default. The
	// network namespace stays loopback-only either way.
	Egress []string `toml:"egress" json:"egress,omitempty"`
	// EgressConnections bounds the broker's open connections of one
	// container; EgressBytes the bytes it carries for it, both ways
	// together, over the container's life ("0": no bound).
	EgressConnections int    `toml:"egress_connections" json:"egress_connections"`
	EgressBytes       string `toml:"egress_bytes" json:"egress_bytes"`
	// EgressBrokerUser is the "uid:gid" the broker runs as once it
	// listens: never root and never an id a job may run as, of this
	// profile or (checked with the whole configuration) any other, so
	// neither can signal, trace or read the other.
	EgressBrokerUser string `toml:"egress_broker_user" json:"egress_broker_user"`
}

// DefaultCgroupParents are the grouping parents of the engines bulkhead
// runs under. With the cgroupfs driver: Docker's /docker, the kubelet's QoS
// parents (a pod's own pod<uid> below them is not one: it is that pod's),
// and the containerd namespaces of the CRI plugin (k8s.io, where no kubelet
// names a parent) and of ctr (default), which put a container at
// /<namespace>/<id>. With the systemd driver (--systemd-cgroup), the same
// parents as the slices' groups: Docker's system.slice (it names
// system.slice:docker:<id>, so its containers share system.slice's limits
// with the host's services, as Docker itself makes them) and the kubelet's
// kubepods.slice with its QoS slices. A slice group is written as systemd
// nests it, which SystemdScopePath's paths are compared with.
var DefaultCgroupParents = []string{"/docker", "/kubepods", "/kubepods/burstable", "/kubepods/besteffort", "/k8s.io", "/default",
	"/system.slice", "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice", "/kubepods.slice/kubepods-besteffort.slice"}

// DefaultProfile is the boundary every container gets unless the
// administrator configures another: the hardened `docker run` of the README.
func DefaultProfile() Profile {
	return Profile{
		Name:           "default",
		Mode:           Enforce,
		Backend:        "runc",
		UID:            65534,
		GID:            65534,
		ReadonlyRootfs: true,
		TmpSize:        "16m",
		TmpfsTotal:     "256m",
		HomeSize:       "0",
		ScratchSize:    "0",
		Network:        NetworkNone,
		PidsLimit:      64,
		Memory:         "256m",
		CPUs:           1,
		DropSecretEnv:  true,
		MaxLifetime:    "0",
		BindRoots: []string{"/home", "/srv", "/opt", "/mnt", "/media", "/tmp", "/var/tmp",
			"/workspace", "/builds", "/data"},
		AppArmorProfiles:   []string{"docker-default", "cri-containerd.apparmor.d"},
		AllowedUIDs:        []string{},
		AllowedGIDs:        []string{},
		HooksAllowed:       []string{},
		AnnotationsAllowed: []string{},
		Workspaces:         []string{"/workspace"},
		WorkspaceMode:      "overlay",
		WorkspaceSize:      "128m",
		WorkspaceOwners:    []string{"1000-60000"},
		CgroupParents:      slices.Clone(DefaultCgroupParents),
		Egress:             []string{},
		EgressConnections:  32,
		EgressBytes:        "1g",
		EgressBrokerUser:   "65532:65532",
	}
}

// EgressBytesLimit is egress_bytes in bytes, 0 for none.
func (p *Profile) EgressBytesLimit() (int64, error) {
	return parseSize("egress_bytes", p.EgressBytes)
}

// MemoryBytes is the memory ceiling in bytes, 0 for none.
func (p *Profile) MemoryBytes() (int64, error) {
	return parseSize("memory", p.Memory)
}

// TmpBytes is the size of the /tmp tmpfs in bytes.
func (p *Profile) TmpBytes() (int64, error) {
	return parseSize("tmp_size", p.TmpSize)
}

// HomeBytes is the size of the home tmpfs, 0 for no home.
func (p *Profile) HomeBytes() (int64, error) {
	return parseSize("home_size", p.HomeSize)
}

// ScratchBytes is the size of the build scratch tmpfs, 0 for none.
func (p *Profile) ScratchBytes() (int64, error) {
	return parseSize("scratch_size", p.ScratchSize)
}

// ExecutesWrites says whether the job may run what it writes: a job
// profile, which has a build scratch, lets a build run its outputs from
// the scratch and from its workspaces (cargo's target/, a checkout's
// node_modules/.bin). Without a scratch every place the sandbox can write
// is noexec, the workspace's copy-on-write layer included.
func (p *Profile) ExecutesWrites() bool {
	n, err := p.ScratchBytes()
	return err == nil && n > 0
}

// TmpfsTotalBytes is the ceiling of all tmpfs sizes together, 0 for none.
func (p *Profile) TmpfsTotalBytes() (int64, error) {
	return parseSize("tmpfs_total", p.TmpfsTotal)
}

// CPUQuota returns the CFS quota and period for the profile's cpus, or
// 0, 0 when the profile sets no CPU ceiling.
func (p *Profile) CPUQuota() (quota int64, period uint64) {
	if p.CPUs <= 0 {
		return 0, 0
	}
	const defaultPeriod = 100000
	return int64(p.CPUs * defaultPeriod), defaultPeriod
}

// Lifetime is the parsed max_lifetime, 0 for none.
func (p *Profile) Lifetime() (time.Duration, error) {
	if p.MaxLifetime == "" || p.MaxLifetime == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(p.MaxLifetime)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("profile %s: max_lifetime %q: want a duration such as 30m", p.Name, p.MaxLifetime)
	}
	return d, nil
}

// Validate reports the first value of the profile that cannot be used.
func (p *Profile) Validate() error {
	switch p.Mode {
	case Enforce, Audit:
	default:
		return fmt.Errorf("profile %s: mode %q: want \"enforce\" or \"audit\"", p.Name, p.Mode)
	}
	switch p.Network {
	case NetworkNone, NetworkCaller:
	default:
		return fmt.Errorf("profile %s: network %q: want %q or %q", p.Name, p.Network, NetworkNone, NetworkCaller)
	}
	if p.PidsLimit < 0 {
		return fmt.Errorf("profile %s: pids_limit %d: want 0 (none) or more", p.Name, p.PidsLimit)
	}
	if p.CPUs < 0 {
		return fmt.Errorf("profile %s: cpus %v: want 0 (none) or more", p.Name, p.CPUs)
	}
	if _, err := p.MemoryBytes(); err != nil {
		return fmt.Errorf("profile %s: %w", p.Name, err)
	}
	if _, err := p.TmpBytes(); err != nil {
		return fmt.Errorf("profile %s: %w", p.Name, err)
	}
	if err := p.validateTmpfsSizes(); err != nil {
		return fmt.Errorf("profile %s: %w", p.Name, err)
	}
	if _, err := p.Lifetime(); err != nil {
		return err
	}
	for _, ids := range [][]string{p.AllowedUIDs, p.AllowedGIDs} {
		if _, err := parseIDRanges(ids); err != nil {
			return fmt.Errorf("profile %s: %w", p.Name, err)
		}
	}
	if _, err := parseOwnerRanges(p.WorkspaceOwners); err != nil {
		return fmt.Errorf("profile %s: %w", p.Name, err)
	}
	for _, list := range [][]string{p.BindRoots, p.HooksAllowed} {
		for _, d := range list {
			if !filepath.IsAbs(d) || filepath.Clean(d) == "/" {
				return fmt.Errorf("profile %s: %q: want an absolute path other than /", p.Name, d)
			}
		}
	}
	for _, d := range p.CgroupParents {
		if !strings.HasPrefix(d, "/") || path.Clean(d) != d || d == "/" || strings.Contains(d, ":") {
			return fmt.Errorf("profile %s: cgroup_parents %q: want a clean absolute cgroupfs path other than /", p.Name, d)
		}
		for _, own := range []string{BulkheadCgroupParent, bulkheadSystemdParent} {
			if under(d, own) {
				return fmt.Errorf("profile %s: cgroup_parents %q: %s holds the cgroups bulkhead chooses itself", p.Name, d, own)
			}
		}
		if err := checkSliceParent(d); err != nil {
			return fmt.Errorf("profile %s: cgroup_parents %q: %w", p.Name, d, err)
		}
	}
	if err := p.validateEgress(); err != nil {
		return fmt.Errorf("profile %s: %w", p.Name, err)
	}
	switch p.WorkspaceMode {
	case "", "overlay", "readonly", "direct":
	default:
		return fmt.Errorf("profile %s: workspace_mode %q: want overlay, readonly or direct", p.Name, p.WorkspaceMode)
	}
	return nil
}

// validateEgress refuses an egress list the broker could not hold: a bad
// entry, or egress beside the caller's network, where the job would not
// need the broker and nothing would hold it to the list.
func (p *Profile) validateEgress() error {
	if _, err := ParseEgress(p.Egress); err != nil {
		return err
	}
	if len(p.Egress) > 0 && p.Network != NetworkNone {
		return fmt.Errorf("egress needs network %q: with network %q the job bypasses the broker", NetworkNone, p.Network)
	}
	if p.EgressConnections < 1 {
		return fmt.Errorf("egress_connections %d: want 1 or more", p.EgressConnections)
	}
	if _, err := p.EgressBytesLimit(); err != nil {
		return err
	}
	if _, _, err := p.EgressBrokerIDs(); err != nil {
		return err
	}
	return nil
}

// EgressBrokerIDs are egress_broker_user's uid and gid, refused when one
// is root or an id the profile lets the job run as.
func (p *Profile) EgressBrokerIDs() (uid, gid uint32, err error) {
	u, g, ok := strings.Cut(p.EgressBrokerUser, ":")
	uids, uok := parseIDRange(u)
	gids, gok := parseIDRange(g)
	if !ok || !uok || !gok || uids.lo != uids.hi || gids.lo != gids.hi || uids.lo == 0 || gids.lo == 0 {
		return 0, 0, fmt.Errorf("egress_broker_user %q: want uid:gid, neither 0", p.EgressBrokerUser)
	}
	if p.JobMayUseUID(uids.lo) {
		return 0, 0, fmt.Errorf("egress_broker_user %q: uid %d is one the job may run as", p.EgressBrokerUser, uids.lo)
	}
	if p.JobMayUseGID(gids.lo) {
		return 0, 0, fmt.Errorf("egress_broker_user %q: gid %d is one the job may run as", p.EgressBrokerUser, gids.lo)
	}
	return uids.lo, gids.lo, nil
}

// JobMayUseUID tells whether the profile's jobs may run as uid id.
func (p *Profile) JobMayUseUID(id uint32) bool { return allowedID(p.UID, p.AllowedUIDs, id) }

// JobMayUseGID tells whether the profile's jobs may run with gid id, as
// their group or a supplementary one.
func (p *Profile) JobMayUseGID(id uint32) bool { return allowedID(p.GID, p.AllowedGIDs, id) }

// validateTmpfsSizes checks that the tmpfs mounts the profile itself adds
// fit in tmpfs_total with the /dev tmpfs runc lays the device nodes out in
// and the /dev/shm every engine mounts (64m): /tmp, the home and the build
// scratch. All of them are memory, charged to the container's own memory
// cgroup. A profile that fits only without /dev/shm loads, and then every
// container an engine makes is refused, the caller blamed.
func (p *Profile) validateTmpfsSizes() error {
	total, err := p.TmpfsTotalBytes()
	if err != nil {
		return err
	}
	sum := int64(DevTmpfsBytes + EngineShmBytes)
	for _, size := range []func() (int64, error){p.TmpBytes, p.HomeBytes, p.ScratchBytes} {
		n, err := size()
		if err != nil {
			return err
		}
		sum += n
	}
	if total > 0 && sum > total {
		return fmt.Errorf("tmp_size %s + home_size %s + scratch_size %s + /dev 64m + an engine's /dev/shm 64m exceed tmpfs_total %s: raise tmpfs_total or lower the sizes",
			p.TmpSize, p.HomeSize, p.ScratchSize, p.TmpfsTotal)
	}
	return nil
}

func parseSize(key, v string) (int64, error) {
	if v == "" || v == "0" {
		return 0, nil
	}
	n, err := units.RAMInBytes(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want a size such as 256m", key, v)
	}
	return n, nil
}
