package specs

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// AnnotationCgroupsPath records a cgroups path bulkhead chose itself. The
// rewritten config.json stays in the bundle, so a later create from the
// same bundle must recognise the path as bulkhead's and choose anew
// rather than share the earlier container's cgroup.
const AnnotationCgroupsPath = "bulkhead.dev/cgroups-path"

// BulkheadCgroupParent is where bulkhead puts the cgroup of a container
// whose caller named none (runtime.DefaultCgroupsPath).
const BulkheadCgroupParent = "/bulkhead"

// BulkheadSystemdSlice is the same under the systemd driver
// (runtime.DefaultSystemdCgroupsPath); its cgroup is /bulkhead.slice.
const BulkheadSystemdSlice = "bulkhead.slice"

// bulkheadSystemdParent is BulkheadSystemdSlice's cgroupfs path.
const bulkheadSystemdParent = "/" + BulkheadSystemdSlice

// systemdUnitName is what systemd accepts as a unit name: no path.
var systemdUnitName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9:_.\\@-]+$`) })

// systemdUnitSuffixes name cgroups that systemd manages for services,
// sessions and slices; a container is never put in one by cgroupfs path.
var systemdUnitSuffixes = []string{".slice", ".service", ".scope", ".socket", ".mount", ".swap"}

// ruleCgroupsPath keeps the container's cgroup its own and new. An
// existing cgroup with processes in it (a host service, another container,
// the engine) would get the container's limits, and `kill --all` of the
// container would kill its processes; an existing empty one (a group the
// host set up with its own limits, the kubelet's pod parent before its
// containers start) would have its limits overwritten and be removed with
// the container. An empty path is filled in by bulkhead with a fresh one
// (runtime.chooseCgroupsPath). A new group below an existing one that
// holds another container's processes would share that container's
// limits (CgroupSharedAncestor). Under the systemd driver the same is
// judged of the scope's group (SystemdScopePath): the driver joins a scope
// that exists, and the caller names the slice above it.
// MaxCgroupDepth bounds how deep a caller's cgroup lies: the engines'
// deepest (a kubelet's pod below its QoS slice, in a kind node's group
// below dockerd's) is six.
const MaxCgroupDepth = 16

func ruleCgroupsPath(c *Context, s *rspec.Spec) []Decision {
	const field = "linux.cgroupsPath"
	p := ensureLinux(s).CgroupsPath
	if p == "" {
		return nil
	}
	if s.Annotations[AnnotationCgroupsPath] == p && (under(path.Clean(p), BulkheadCgroupParent) || strings.HasPrefix(p, BulkheadSystemdSlice+":")) {
		return []Decision{{Rule: "cgroups_path", Field: field, Action: Kept, Before: p, After: "a fresh path",
			Layer: LayerNone, Why: "a path bulkhead chose for an earlier container of this bundle; bulkhead chooses a fresh one"}}
	}
	var translated []Decision
	refuse := func(why string) []Decision {
		return append(translated, Decision{Rule: "cgroups_path", Field: field, Action: Refused, Before: p, Layer: LayerNone,
			Why: why + "; leave cgroupsPath empty or name a new cgroup for this container"})
	}
	// judged is the cgroupfs path the backend will make: p itself, or under
	// the systemd driver the scope's group.
	judged := p
	scope := ""
	switch {
	case c.SystemdCgroup:
		if !strings.Contains(p, ":") {
			return refuse("under --systemd-cgroup the backend reads cgroupsPath as slice:prefix:name, and a path is none")
		}
		sp, err := SystemdScopePath(p)
		if err != nil {
			return refuse(err.Error())
		}
		if under(sp, bulkheadSystemdParent) {
			return refuse(BulkheadSystemdSlice + " holds the scopes bulkhead chooses for containers that name none; a caller's scope there could take another container's before it is created")
		}
		judged, scope = sp, " (the systemd scope "+sp+")"
	case strings.Contains(p, ":"):
		parts := strings.Split(p, ":")
		if len(parts) != 3 || !systemdUnitName().MatchString(parts[0]) || !strings.HasSuffix(parts[0], ".slice") ||
			parts[0] == "-.slice" || !systemdUnitName().MatchString(parts[1]) || !systemdUnitName().MatchString(parts[2]) {
			return refuse("a systemd cgroupsPath is slice:prefix:name, each a plain unit name, with a slice other than the root")
		}
		// Under the cgroupfs driver runc would take the whole string as a
		// path relative to its own cgroup. containerd 1.6's CRI writes this
		// form when it cannot tell the kubelet's driver, and the shim runs
		// the cgroupfs driver where systemd is not running: the path
		// becomes the plain one the kubelet's cgroupfs driver would name,
		// and is judged below like any other.
		plain := PlainCgroupsPath(parts[0], parts[1], parts[2])
		translated = []Decision{{Rule: "cgroups_path", Field: field, Action: Tightened, Before: p, After: plain,
			Layer: LayerNone, Why: "slice:prefix:name is the systemd driver's form and the backend uses the cgroupfs driver; translated to a cgroupfs path, which is checked like any other"}}
		s.Linux.CgroupsPath = plain
		p, judged = plain, plain
		fallthrough
	default:
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" {
			return refuse("a cgroupfs cgroupsPath must be a clean absolute path below the root")
		}
		if under(p, BulkheadCgroupParent) {
			return refuse(BulkheadCgroupParent + " holds the cgroups bulkhead chooses for containers that name none; a caller's path there could take another container's before it is created")
		}
		// The systemd driver's own slices and scope are its to make; by
		// cgroupfs path a unit's group would be taken over.
		for _, part := range strings.Split(p[1:], "/") {
			for _, suf := range systemdUnitSuffixes {
				if strings.HasSuffix(part, suf) || part == "init.scope" {
					return refuse(part + " is a systemd unit's cgroup")
				}
			}
		}
	}
	if depth := strings.Count(judged, "/"); depth > MaxCgroupDepth {
		return refuse(fmt.Sprintf("%s is %d groups deep, at most %d: the backend makes every missing group above it in every hierarchy, in kernel memory no limit of the container's charges", judged, depth, MaxCgroupDepth))
	}
	for _, parent := range c.Profile.CgroupParents {
		if under(parent, judged) {
			return refuse(fmt.Sprintf("%s is or holds %s, one of the profile's cgroup_parents, where other containers' groups lie: they would lie below this container's, under its limits, and end with it", judged, parent))
		}
	}
	if c.CgroupTaken == nil {
		return refuse("whether this cgroup is new cannot be checked here")
	}
	busy, err := c.CgroupTaken(judged)
	switch {
	case err != nil:
		return refuse("whether this cgroup is new cannot be read (" + err.Error() + ")")
	case busy:
		return refuse("this cgroup" + scope + " already exists, or a group above it holds processes: it is not a fresh one of this container's")
	}
	shared, err := CgroupSharedAncestor(c, judged)
	switch {
	case err != nil:
		return refuse("whether a group above it holds processes cannot be read (" + err.Error() + ")")
	case shared != "":
		return refuse(SharedAncestorWhy(shared))
	}
	return append(translated, Decision{Rule: "cgroups_path", Field: field, Action: Kept, Before: p, After: p, Layer: LayerNone,
		Why: "a new cgroup" + scope + ", below none that holds processes but the profile's cgroup_parents and this container's own pod: only this container's"})
}

// PlainCgroupsPath is the cgroupfs path for a systemd cgroupsPath
// slice:prefix:name: the slice's dash-separated hierarchy as directories
// (kubepods-burstable-pod1.slice is /kubepods/burstable/pod1, as the
// kubelet's cgroupfs driver names it) and <prefix>-<name> below it. No part
// keeps a systemd unit suffix: without systemd they name no unit, and the
// rule refuses such names in a cgroupfs path.
func PlainCgroupsPath(slice, prefix, name string) string {
	dirs := strings.Split(strings.TrimSuffix(slice, ".slice"), "-")
	return "/" + path.Join(append(dirs, prefix+"-"+name)...)
}

// SharedAncestorWhy is why a cgroupsPath below the group a is refused.
func SharedAncestorWhy(a string) string {
	return "joins the limits of " + a + ", which holds another container's processes; a group above a caller's cgroup must be one of the profile's cgroup_parents, hold no process, or be this container's own pod's"
}
