package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestWritableNoexec: every mount the sandbox can write is noexec unless
// the profile lets the job run what it writes, and then only the build
// scratch and the workspaces are exempt. The workspace's copy-on-write
// layer is a writable bind: under the default profile a program written
// there ran although /tmp was noexec.
func TestWritableNoexec(t *testing.T) {
	def := testProfile()
	def.Workspaces = []string{"/workspace"}
	job := *def
	job.ScratchSize = "64m"
	ws := func(opts ...string) rspec.Mount {
		return rspec.Mount{Destination: "/workspace", Type: "bind", Source: "/run/x/merged", Options: opts}
	}
	tmpfs := func(dst string, opts ...string) rspec.Mount {
		return rspec.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: opts}
	}
	for _, tc := range []struct {
		name string
		p    *Profile
		m    rspec.Mount
		ok   bool
	}{
		{"default: rw workspace without noexec", def, ws("rbind", "rw", "nosuid", "nodev"), false},
		{"default: rw workspace with exec last", def, ws("rbind", "rw", "noexec", "exec"), false},
		{"default: rw workspace with rexec", def, ws("rbind", "rw", "noexec", "rexec"), false},
		{"default: rw workspace noexec", def, ws("rbind", "rw", "nosuid", "nodev", "noexec"), true},
		{"default: bind neither ro nor rw", def, ws("bind", "nosuid"), false},
		{"default: ro bind may execute", def, ws("bind", "ro", "nosuid", "nodev"), true},
		{"default: tmpfs at /scratch", def, tmpfs("/scratch", "exec", "nosuid"), false},
		{"default: bind at /scratch", def, rspec.Mount{Destination: "/scratch", Type: "bind", Source: "/srv/x", Options: []string{"rw"}}, false},
		{"job: rw workspace may execute", &job, ws("rbind", "rw", "nosuid", "nodev"), true},
		{"job: scratch may execute", &job, tmpfs("/scratch/", "exec", "nosuid"), true},
		{"job: other tmpfs may not", &job, tmpfs("/home/sandbox", "exec", "nosuid"), false},
		{"job: rw bind at /scratch may not", &job, rspec.Mount{Destination: "/scratch", Type: "bind", Source: "/srv/x", Options: []string{"rw"}}, false},
		{"job: rw bind elsewhere may not", &job, rspec.Mount{Destination: "/out", Type: "bind", Source: "/srv/x", Options: []string{"rw"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckWritableNoexec(tc.p, tc.m)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckWritableNoexec(%v) = %v, want ok=%v", tc.m.Options, err, tc.ok)
			}
		})
	}
}
