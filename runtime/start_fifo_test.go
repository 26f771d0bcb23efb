package runtime

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/backend"
)

func TestStartsByFifo(t *testing.T) {
	runc := &backend.Backend{Name: "runc", Path: "/usr/sbin/runc"}
	hook := rspec.Hook{Path: "/usr/bin/true"}
	for _, tc := range []struct {
		name string
		b    *backend.Backend
		spec *rspec.Spec
		want bool
	}{
		{"runc, no hooks", runc, &rspec.Spec{}, true},
		{"runc, a prestart hook only", runc, &rspec.Spec{Hooks: &rspec.Hooks{CreateRuntime: []rspec.Hook{hook}}}, true},
		{"runc, a poststart hook", runc, &rspec.Spec{Hooks: &rspec.Hooks{Poststart: []rspec.Hook{hook}}}, false},
		{"runc under another name", &backend.Backend{Name: "runc-next", Path: "/opt/runc"}, &rspec.Spec{}, true},
		{"crun", &backend.Backend{Name: "crun", Path: "/usr/bin/crun"}, &rspec.Spec{}, false},
		{"runsc", &backend.Backend{Name: "runsc", Path: "/usr/bin/runsc"}, &rspec.Spec{}, false},
	} {
		if got := startsByFifo(tc.b, tc.spec); got != tc.want {
			t.Errorf("%s: startsByFifo = %v, want %v", tc.name, got, tc.want)
		}
	}
}
