package specs

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

type devNode struct {
	path         string
	major, minor int64
}

// allowedDevices are the character devices every program expects. Runc
// adds the same nodes itself when linux.devices omits them.
var allowedDevices = []devNode{
	{"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7}, {"/dev/random", 1, 8},
	{"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}, {"/dev/ptmx", 5, 2},
}

// ptsMajor is /dev/pts/N, created by the container's own devpts mount.
const ptsMajor = 136

func ruleDevices(c *Context, s *rspec.Spec) []Decision {
	l := ensureLinux(s)
	var ds []Decision
	var kept []rspec.LinuxDevice
	for _, d := range l.Devices {
		if allowedNode(d) {
			kept = append(kept, d)
			continue
		}
		ds = append(ds, Decision{Rule: "devices", Field: "linux.devices[" + d.Path + "]", Action: Removed,
			Before: fmt.Sprintf("%s %d:%d", d.Type, d.Major, d.Minor), Layer: LayerDevices,
			Why: "only null, zero, full, random, urandom, tty and ptmx exist in the sandbox; a host device gives direct access to hardware or kernel memory"})
	}
	l.Devices = kept
	return append(ds, deviceCgroup(ensureResources(s))...)
}

func allowedNode(d rspec.LinuxDevice) bool {
	for _, a := range allowedDevices {
		if d.Path == a.path && d.Type == "c" && d.Major == a.major && d.Minor == a.minor {
			return true
		}
	}
	return false
}

// deviceCgroup puts deny-all first and then the allowlist, so that the
// caller's entries cannot widen it. The caller's deny entries are kept
// after ours: they only narrow. Runc 1.1 appends its own defaults after
// all of these (mknod of any device, /dev/net/tun), which no spec entry
// can deny: mknod is moot without CAP_MKNOD, and a tun node the image
// holds (runc's read-only remount of / drops nodev) opens, but without
// CAP_NET_ADMIN it attaches to no interface (TUNSETIFF is EPERM).
func deviceCgroup(r *rspec.LinuxResources) []Decision {
	var ds []Decision
	rules := []rspec.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}
	for _, a := range allowedDevices {
		rules = append(rules, charRule(a.major, a.minor))
	}
	rules = append(rules, rspec.LinuxDeviceCgroup{Allow: true, Type: "c", Major: i64(ptsMajor), Access: "rwm"})
	for i, d := range r.Devices {
		if !d.Allow {
			if !(d.Type == "" || d.Type == "a") || d.Major != nil || d.Minor != nil {
				rules = append(rules, d)
			}
			continue
		}
		if inAllowlist(d) {
			continue
		}
		ds = append(ds, Decision{Rule: "devices", Field: fmt.Sprintf("linux.resources.devices[%d]", i),
			Action: Removed, Before: cgroupRuleString(d), Layer: LayerDevices,
			Why: "the device cgroup allows only the sandbox's character devices"})
	}
	r.Devices = rules
	return append(ds, Decision{Rule: "devices", Field: "linux.resources.devices", Action: Tightened,
		After: "deny a *:* rwm, then allow null, zero, full, random, urandom, tty, ptmx, pts",
		Layer: LayerDevices, Why: "opening any other device fails (EPERM)"})
}

func charRule(major, minor int64) rspec.LinuxDeviceCgroup {
	return rspec.LinuxDeviceCgroup{Allow: true, Type: "c", Major: i64(major), Minor: i64(minor), Access: "rwm"}
}

func inAllowlist(d rspec.LinuxDeviceCgroup) bool {
	if d.Type != "c" || d.Major == nil {
		return false
	}
	if *d.Major == ptsMajor {
		return true
	}
	if d.Minor == nil {
		return false
	}
	for _, a := range allowedDevices {
		if *d.Major == a.major && *d.Minor == a.minor {
			return true
		}
	}
	return false
}

func cgroupRuleString(d rspec.LinuxDeviceCgroup) string {
	num := func(p *int64) string {
		if p == nil || *p < 0 {
			return "*"
		}
		return fmtInt(*p)
	}
	t := d.Type
	if t == "" {
		t = "a"
	}
	return fmt.Sprintf("allow %s %s:%s %s", t, num(d.Major), num(d.Minor), d.Access)
}
