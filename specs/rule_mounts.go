package specs

import (
	"fmt"
	"slices"
	"strings"

	units "github.com/docker/go-units"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// mountTypes are the filesystems a container may mount, with where each
// may go ("" for anywhere): the kernel builds them for the container's
// own namespaces, so none exposes a host file. proc and sysfs elsewhere
// would be second, unmasked copies.
var mountTypes = map[string]string{
	"bind": "", "tmpfs": "", "mqueue": "", "devpts": "",
	"proc": "/proc", "sysfs": "/sys", "cgroup": "/sys/fs/cgroup", "cgroup2": "/sys/fs/cgroup",
}

// commonOptions only narrow a mount or choose how atime is kept.
var commonOptions = []string{
	"ro", "nosuid", "nodev", "noexec", "rro", "rnosuid", "rnodev", "rnoexec", "nosymfollow",
	"relatime", "norelatime", "strictatime", "nostrictatime", "noatime", "atime", "nodiratime", "diratime",
	"private", "rprivate", "slave", "rslave", "sync", "async", "dirsync",
}

// typeOptions are the options each type adds to commonOptions; a name
// ending in "=" takes a value.
var typeOptions = map[string][]string{
	"bind":    {"bind", "rbind", "rw", "suid", "dev", "exec", "rrw", "rsuid", "rdev", "rexec"}, // made ro,nosuid,nodev by host_mounts
	"tmpfs":   {"rw", "size=", "mode=", "uid=", "gid=", "nr_inodes="},
	"devpts":  {"rw", "newinstance", "ptmxmode=", "mode=", "gid="},
	"mqueue":  {"rw"},
	"proc":    {"rw"},
	"sysfs":   {"rw"}, // made ro by masked_paths
	"cgroup":  {"rw"},
	"cgroup2": {"rw"},
}

// execOptions would give a tmpfs back what the policy takes: runc applies
// options in order, so they are removed rather than overridden.
var execOptions = []string{"exec", "suid", "dev", "rexec", "rsuid", "rdev"}

// defaultDevTmpfs is the /dev every engine lays out, and what a container
// without one gets: otherwise the image's own /dev, with whatever device
// nodes its tarball holds, would be the container's.
var defaultDevTmpfs = rspec.Mount{Destination: "/dev", Type: "tmpfs", Source: "tmpfs",
	Options: []string{"nosuid", "noexec", "strictatime", "mode=755", "size=65536k"}}

// ruleMounts decides each mount's type, place and options from
// allowlists; host_mounts then decides each bind's source. Every tmpfs is
// noexec and nosuid (and nodev, except /dev, where runc creates the
// allowed nodes) with a size, and the sizes add up to at most the
// profile's tmpfs_total.
func ruleMounts(c *Context, s *rspec.Spec) []Decision {
	var ds []Decision
	if p := s.Linux; p != nil {
		switch p.RootfsPropagation {
		case "", "private", "rprivate", "slave", "rslave":
		default:
			ds = append(ds, Decision{Rule: "mounts", Field: "linux.rootfsPropagation", Action: Refused,
				Before: p.RootfsPropagation, Layer: LayerNone,
				Why: "shared propagation lets mounts cross between the container and the host; use rprivate or rslave"})
		}
	}
	dev := false
	var total int64
	var sizes []string // each tmpfs and its size, for a refusal of the sum
	moved := placements(newContainerView(c, s), s.Mounts)
	if why, ok := moved[-1]; ok {
		ds = append(ds, refuseMount("mounts[/dev]", "the image's /dev", why))
	}
	for i := range s.Mounts {
		m := &s.Mounts[i]
		dst := cleanAbs(m.Destination)
		field := "mounts[" + m.Destination + "]"
		typ := m.Type
		if isBind(*m) {
			typ = "bind"
		}
		if _, known := mountTypes[typ]; !known {
			ds = append(ds, refuseMount(field, m.Type+" "+m.Source, "filesystem type "+m.Type+" is not on the allowlist (bind, tmpfs, proc, sysfs, mqueue, devpts, cgroup); a block device, network or FUSE filesystem reaches past the sandbox"))
			continue
		}
		if why := mountPlaceProblem(typ, dst); why != "" {
			ds = append(ds, refuseMount(field, m.Type+" "+m.Source, why))
			continue
		}
		if why := moved[i]; why != "" {
			ds = append(ds, refuseMount(field, m.Type+" "+m.Source, why))
			continue
		}
		if bad := unknownOptions(typ, m.Options); len(bad) > 0 {
			ds = append(ds, refuseMount(field, fmtList(m.Options), "mount options "+fmtList(bad)+" are not on the allowlist for "+typ+"; remove them"))
			continue
		}
		switch typ {
		case "bind":
			// A mount with the bind option is a bind whatever its type
			// says (the kernel ignores the type with MS_BIND); the spec
			// handed over says so too.
			m.Type = "bind"
			if hasOpt(m.Options, "rbind") {
				before := fmtList(m.Options)
				m.Options = append(withoutOpts(m.Options, "rbind"), "bind")
				ds = append(ds, Decision{Rule: "mounts", Field: field, Action: Tightened, Before: before,
					After: fmtList(m.Options), Layer: LayerMountFlags,
					Why: "a recursive bind would carry the source's submounts with their own, writable flags; only the top mount is bound"})
			}
		case "tmpfs":
			if dst == "/dev" {
				dev = true
			}
			if n, ok := profileTmpfs(c.Profile, dst); ok { // the tmp, home or scratch rule's, already sized
				total += n
				sizes = append(sizes, dst+" "+units.BytesSize(float64(n)))
				continue
			}
			n, d := tmpfsFlags(c.Profile, m, field, dst)
			ds = append(ds, d)
			total += n
			sizes = append(sizes, dst+" "+units.BytesSize(float64(n)))
		default:
			if d, changed := kernelFSFlags(m, field, typ != "devpts"); changed {
				ds = append(ds, d)
			}
		}
	}
	if !dev {
		s.Mounts = append([]rspec.Mount{defaultDevTmpfs}, s.Mounts...)
		total += DevTmpfsBytes
		sizes = append(sizes, "/dev "+units.BytesSize(DevTmpfsBytes))
		ds = append(ds, Decision{Rule: "mounts", Field: "mounts[/dev]", Action: Added, Before: "the image's /dev",
			After: "tmpfs " + fmtList(defaultDevTmpfs.Options), Layer: LayerTmpfs,
			Why: "the image's own /dev could hold any device node; runc lays out the allowed ones in a fresh tmpfs"})
	}
	if limit, err := c.Profile.TmpfsTotalBytes(); err == nil && limit > 0 && total > limit {
		ds = append(ds, Decision{Rule: "mounts", Field: "mounts[tmpfs]", Action: Refused,
			Before: units.BytesSize(float64(total)), Layer: LayerNone,
			Why: fmt.Sprintf("the tmpfs mounts (%s) add up to more than the profile's tmpfs_total (%s); make them smaller", strings.Join(sizes, ", "), c.Profile.TmpfsTotal)})
	}
	return ds
}

// DevTmpfsBytes is the size of the /dev tmpfs bulkhead adds.
const DevTmpfsBytes = 64 << 20

// EngineShmBytes is the /dev/shm Docker, containerd and the kubelet mount
// by default, which a profile's tmpfs_total must leave room for.
const EngineShmBytes = 64 << 20

// profileTmpfs returns the size of a tmpfs the profile's own rules placed
// at dst (/tmp, the home, the build scratch), which they sized and flagged.
func profileTmpfs(p *Profile, dst string) (int64, bool) {
	switch dst {
	case "/tmp":
		n, _ := p.TmpBytes()
		return n, true
	case HomeDir:
		if n, _ := p.HomeBytes(); n > 0 {
			return n, true
		}
	case ScratchDir:
		if n, _ := p.ScratchBytes(); n > 0 {
			return n, true
		}
	}
	return 0, false
}

func refuseMount(field, before, why string) Decision {
	return Decision{Rule: "mounts", Field: field, Action: Refused, Before: before, Layer: LayerNone, Why: why}
}

func unknownOptions(typ string, opts []string) []string {
	var bad []string
	for _, o := range opts {
		if strings.ContainsRune(o, ',') {
			// runc joins the options with commas and the kernel splits
			// them again: "mode=1777,size=0" is two options, the second
			// one on no allowlist.
			bad = append(bad, o)
			continue
		}
		if typ == "tmpfs" && hasOpt(execOptions, o) {
			continue // removed below: a tmpfs is always noexec,nosuid
		}
		if hasOpt(commonOptions, o) {
			continue
		}
		name, _, valued := strings.Cut(o, "=")
		if valued {
			name += "="
		}
		if !hasOpt(typeOptions[typ], name) {
			bad = append(bad, o)
		}
	}
	return bad
}

// tmpfsFlags makes a tmpfs noexec,nosuid (and nodev but at /dev) with a
// size, and returns that size. /tmp's own size is the tmp rule's.
func tmpfsFlags(p *Profile, m *rspec.Mount, field, dst string) (int64, Decision) {
	before := fmtList(m.Options)
	opts := withoutOpts(m.Options, execOptions...)
	opts = withoutOpts(opts, "noexec", "nosuid", "nodev")
	opts = append(opts, "noexec", "nosuid")
	if dst != "/dev" {
		opts = append(opts, "nodev")
	}
	// The kernel takes the last size= and reads 0 as no limit at all, so
	// the last one decides here too, and where there are several only it
	// is kept.
	size, sizes, last := int64(-1), 0, ""
	for _, o := range opts {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			sizes, last, size = sizes+1, o, -1
			if n, err := units.RAMInBytes(v); err == nil && n > 0 {
				size = n
			}
		}
	}
	switch {
	case size < 0:
		// No size, 0, a percentage of RAM or a malformed one: the
		// profile's /tmp size is the ceiling of a tmpfs nobody sized.
		opts = withoutPrefix(opts, "size=")
		opts = append(opts, "size="+p.TmpSize)
		size, _ = p.TmpBytes()
	case sizes > 1:
		opts = append(withoutPrefix(opts, "size="), last)
	}
	m.Options = opts
	d := Decision{Rule: "mounts", Field: field, Action: Kept, Before: before, After: fmtList(opts),
		Layer: LayerTmpfs, Why: "a tmpfs is scratch space: noexec, nosuid, nodev and size-capped (ENOSPC)"}
	if fmtList(opts) != before {
		d.Action = Tightened
	}
	return size, d
}

// kernelFSFlags makes a kernel filesystem (proc, sysfs, cgroup, mqueue,
// devpts) noexec and nosuid, and nodev where it holds no device nodes.
func kernelFSFlags(m *rspec.Mount, field string, nodev bool) (Decision, bool) {
	before := fmtList(m.Options)
	want := []string{"noexec", "nosuid"}
	if nodev {
		want = append(want, "nodev")
	}
	opts := withoutOpts(m.Options, execOptions...)
	for _, o := range want {
		if !hasOpt(opts, o) {
			opts = append(opts, o)
		}
	}
	m.Options = opts
	return Decision{Rule: "mounts", Field: field, Action: Tightened, Before: before, After: fmtList(opts),
		Layer: LayerMountFlags, Why: "no program, setuid file or device node runs from a kernel filesystem"}, fmtList(opts) != before
}

func withoutPrefix(opts []string, prefix string) []string {
	out := []string{}
	for _, o := range opts {
		if !strings.HasPrefix(o, prefix) {
			out = append(out, o)
		}
	}
	return out
}

// mountPlaceProblem says why a mount of type typ may not go at dst, or
// "" when it may.
func mountPlaceProblem(typ, dst string) string {
	place := mountTypes[typ]
	switch {
	case dst == "/":
		return "/ is the root filesystem, which root.path names and the policy makes read-only; no mount goes there (a relative destination such as x/../.. names / too)"
	case under(dst, OwnDir):
		return OwnDir + " is bulkhead's own directory, where it binds the programs a gVisor sandbox runs every exec and its egress through; no other mount goes at or below it"
	case place != "" && dst != place:
		return typ + " may be mounted only at " + place + ": elsewhere it is a second copy without the masks"
	case place == "" && (dst == "/proc" || dst == "/sys") && typ != "bind":
		return dst + " takes only its own kernel filesystem (proc, sysfs), which the masked and read-only paths are laid over; a " + typ + " in its place is no " + dst
	case place == "" && (under(dst, "/proc") || under(dst, "/sys")) && typ != "bind":
		return "nothing is mounted inside /proc or /sys except their own filesystems"
	case dst == "/dev" && typ != "tmpfs":
		return "/dev is a tmpfs in which runc lays out the allowed device nodes; remove this mount"
	case under(dst, "/dev") && dst != "/dev" && !devPlaces[dst][typ]:
		return "below /dev runc lays out the device nodes, /dev/pts, /dev/ptmx and /dev/console itself, and a mount there replaces or redirects them " +
			"(a bind at /dev/pts hands runc's console a link of the caller's); only a devpts at /dev/pts, an mqueue at /dev/mqueue, " +
			"a tmpfs or bind at /dev/shm and a bind at /dev/termination-log go there"
	case typ == "bind" && (under(dst, "/proc") || under(dst, "/sys")):
		return "a bind over " + dst + " would replace kernel files or the device directory bulkhead lays out"
	}
	return ""
}

// devPlaces are the mounts engines put below /dev, by place and type:
// the pseudo-terminals' and message queues' own filesystems, the shared
// memory Docker and CRI give a container or pod, and the kubelet's
// termination log.
var devPlaces = map[string]map[string]bool{
	"/dev/pts":             {"devpts": true},
	"/dev/mqueue":          {"mqueue": true},
	"/dev/shm":             {"tmpfs": true, "bind": true},
	"/dev/termination-log": {"bind": true},
}

// OwnDir is the directory of bulkhead's own programs in a container
// (runsc's seccomp-exec and egress-forward): no mount of the caller's may
// land at or below it, named there or led there by a link, or the
// mount's files would stand where every exec starts.
const OwnDir = "/.bulkhead"

// isPolicyPlace: the places whose mounts the policy decides itself (the
// tmp rule's /tmp, the /dev runc lays out, the kernel filesystems), which
// a mount must name as they are rather than through a link.
func isPolicyPlace(p string) bool {
	switch p {
	case "/", "/tmp", "/dev", "/proc", "/sys":
		return true
	}
	return false
}

// placements judges where each mount lands: runc resolves a destination
// through the links beneath it when it mounts it, the image's and those
// in the sources of binds mounted before it, in the order mount_order
// gives them (parents first), so the view is built in that order. A link
// can move a mount the lexical checks allowed into /proc or /sys, or onto
// a place the policy lays out; and a link at or above a place runc lays
// out itself (/dev, /proc, /sys, /tmp) moves what runc writes there,
// partly through plain host paths (runc 1.1's /dev/ptmx and /dev/fd
// links land in the host directory a /dev link names). The reasons are
// keyed by index in mounts; -1 is the /dev tmpfs the mounts rule adds
// when there is none. Nothing is judged when the rootfs is unknown.
func placements(view *containerView, mounts []rspec.Mount) map[int]string {
	moved := map[int]string{}
	if view == nil {
		return moved
	}
	placed := map[int]string{}
	var laid []int // in the order runc mounts them
	judge := func(i int, m rspec.Mount) {
		dst := cleanAbs(m.Destination)
		typ := m.Type
		if isBind(m) {
			typ = "bind"
		}
		resolved, err := view.place(dst)
		via := dst + " resolves through symlinks in the image or an earlier bind's source to " + resolved
		switch {
		case err != nil:
			moved[i] = dst + " cannot be placed: " + err.Error() + "; name a place the image holds as a directory"
		case resolved == dst:
		case mountPlaceProblem(typ, resolved) != "":
			moved[i] = via + ": " + mountPlaceProblem(typ, resolved)
		case isPolicyPlace(resolved):
			moved[i] = via + ", a place the policy lays out; name it directly"
		case underRuntimePlace(dst) || underRuntimePlace(resolved):
			moved[i] = via + ": runc lays out /dev, /proc, /sys and /tmp itself and follows no link there; make it a directory in the image"
		}
		if _, refused := moved[i]; !refused && err == nil {
			if why := view.missingInBind(resolved); why != "" {
				moved[i] = why
			}
		}
		view.add(m)
		placed[i] = resolved
		laid = append(laid, i)
		// runc 1.1 looks the destination up again to apply ro, nosuid,
		// nodev and noexec, through the tree with the new mount in it: a
		// link in the source (x -> /q, where the image has x -> .) sends
		// the remount elsewhere and leaves this mount with the source's
		// own, writable flags.
		if again, err := view.place(dst); moved[i] == "" && (err != nil || again != resolved) {
			moved[i] = dst + " resolves to " + resolved + " for the mount and, through the mounted source's own links, to " + again +
				" for the remount that makes it read-only: runc would leave it writable; remove the link from the source or name the place directly"
		}
	}
	if !slices.ContainsFunc(mounts, func(m rspec.Mount) bool { return cleanAbs(m.Destination) == "/dev" }) {
		judge(-1, defaultDevTmpfs)
	}
	order := make([]int, len(mounts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compareMountDepth(mounts[a], mounts[b]) })
	for _, i := range order {
		judge(i, mounts[i])
	}
	// A mount that a link lays above one mounted before it hides it: the
	// policy's home, scratch or workspace, which the job's environment
	// and the kept changes name, would be gone.
	for k, j := range laid {
		for _, i := range laid[:k] {
			if moved[j] == "" && placed[i] != placed[j] && under(placed[i], placed[j]) {
				moved[j] = cleanAbs(mountAt(mounts, j).Destination) + " lands at " + placed[j] + ", over " + placed[i] +
					" mounted before it, which it would hide; name the place directly"
			}
		}
	}
	// Once every mount is in place runc 1.1 looks each tmpfs up again to
	// make it read-only, and verification looks every mount up there: a
	// later mount whose links move an earlier destination sends both to
	// another mount.
	for i, at := range placed {
		dst := cleanAbs(mountAt(mounts, i).Destination)
		if again, err := view.place(dst); moved[i] == "" && (err != nil || again != at) {
			moved[i] = dst + " is mounted at " + at + " but leads to " + again + " once every mount is in place, where runc makes tmpfs mounts read-only and bulkhead verifies them: a later mount's links move it; name the place directly"
		}
	}
	return moved
}

// mountAt is mounts[i], or for -1 the /dev tmpfs the mounts rule adds.
func mountAt(mounts []rspec.Mount, i int) rspec.Mount {
	if i < 0 {
		return defaultDevTmpfs
	}
	return mounts[i]
}

// underRuntimePlace: at or below a place runc or the policy lays out.
func underRuntimePlace(p string) bool {
	return under(p, "/dev") || under(p, "/proc") || under(p, "/sys") || under(p, "/tmp")
}
