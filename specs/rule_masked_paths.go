package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

// DefaultMaskedPaths and DefaultReadonlyPaths are Docker's lists (moby
// oci/defaults.go): files of /proc and /sys that reveal or change host
// state outside the container's namespaces. Every profile's spec has them.
var (
	DefaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	DefaultReadonlyPaths = []string{
		"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
	}
)

func ruleMaskedPaths(c *Context, s *rspec.Spec) []Decision {
	l := ensureLinux(s)
	var ds []Decision
	ds = append(ds, ensurePaths(&l.MaskedPaths, DefaultMaskedPaths, "linux.maskedPaths",
		"hidden behind an empty mount: they reveal host hardware, keys and kernel memory"))
	ds = append(ds, ensurePaths(&l.ReadonlyPaths, DefaultReadonlyPaths, "linux.readonlyPaths",
		"read-only: writing them changes the host kernel, not the container"))
	for i := range s.Mounts {
		m := &s.Mounts[i]
		if m.Type != "sysfs" && m.Type != "cgroup" && m.Type != "cgroup2" {
			continue
		}
		d := Decision{Rule: "masked_paths", Field: "mounts[" + m.Destination + "]", Action: Kept,
			Before: m.Type + " " + fmtList(m.Options), Layer: LayerReadOnly,
			Why: "sysfs and cgroupfs writes reach host devices and limits; read-only (EROFS)"}
		if !hasOpt(m.Options, "ro") || hasOpt(m.Options, "rw") || hasOpt(m.Options, "rrw") {
			d.Action = Tightened
			m.Options = append(withoutOpts(m.Options, "rw", "rrw", "ro"), "ro")
		}
		d.After = m.Type + " " + fmtList(m.Options)
		ds = append(ds, d)
	}
	return ds
}

func ensurePaths(have *[]string, want []string, field, why string) Decision {
	var added []string
	for _, p := range want {
		if !hasOpt(*have, p) {
			*have = append(*have, p)
			added = append(added, p)
		}
	}
	d := Decision{Rule: "masked_paths", Field: field, Action: Kept, After: fmtList(*have),
		Layer: LayerMasked, Why: why}
	if len(added) > 0 {
		d.Action, d.Before = Added, "missing "+fmtList(added)
	}
	return d
}
