package runtime

import (
	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// specContext is what the rules know besides the spec, the same for
// create and check: the profile, the bundle, the container's own pod
// sandbox (state.Registry.PodSandbox, nil for none), the container's id
// ("" for check, where the engine's per-container files then match no
// container), and the host facts they ask for.
func specContext(g *Globals, p *specs.Profile, bundle string, sandbox *state.Record, original []byte, id string) *specs.Context {
	return &specs.Context{
		Profile:           p,
		Bundle:            bundle,
		Original:          original,
		ID:                id,
		JoinableNamespace: state.JoinableIn(sandbox),
		JoinableSandbox:   state.IsSandbox(sandbox),
		KubeletPod:        state.KubeletPodOf(sandbox),
		MadeByCRI:         func() bool { return specs.CRIBundle(bundle) },
		CgroupTaken:       cgroups.Taken,
		CgroupPopulated:   func(path string) (bool, error) { return cgroups.Populated(path) },
		PodCgroupParent:   state.PodCgroupParentOf(sandbox),
		SystemdCgroup:     g.SystemdCgroup,
	}
}
