package runtime

import (
	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// specContext is what the rules know besides the spec, the same for
// create and check: the profile, the backend's name, the bundle, the
// container's id ("" for check, where the engine's per-container files
// then match no container), and the host facts they ask for.
func specContext(g *Globals, p *specs.Profile, backendName, bundle string, reg *state.Registry, original []byte, id string, annotations map[string]string) *specs.Context {
	return &specs.Context{
		Profile:           p,
		Bundle:            bundle,
		Original:          original,
		ID:                id,
		JoinableNamespace: reg.JoinableFor(p, backendName, annotations),
		JoinableSandbox:   reg.SandboxFor(p, backendName, annotations),
		KubeletPod:        reg.KubeletPodFor(p, backendName, annotations),
		MadeByCRI:         func() bool { return specs.CRIBundle(bundle) },
		CgroupTaken:       cgroups.Taken,
		CgroupPopulated:   func(path string) (bool, error) { return cgroups.Populated(path) },
		PodCgroupParent:   reg.PodCgroupParentFor(p, backendName, annotations),
		SystemdCgroup:     g.SystemdCgroup,
	}
}
