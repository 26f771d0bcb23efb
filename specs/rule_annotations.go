package specs

import (
	"sort"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// CRI annotations that say which pod a container belongs to. runsc reads
// them to put a container into an existing gVisor sandbox.
const (
	AnnotationCRIContainerType = "io.kubernetes.cri.container-type"
	AnnotationCRISandboxID     = "io.kubernetes.cri.sandbox-id"
)

// informationalAnnotations name things and change nothing in any backend.
var informationalAnnotations = []string{
	"io.kubernetes.cri.container-name", "io.kubernetes.cri.image-name", "io.kubernetes.cri.sandbox-name",
	"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-uid", "io.kubernetes.cri.sandbox-log-directory",
	"io.kubernetes.cri.sandbox-cpu-period", "io.kubernetes.cri.sandbox-cpu-quota", "io.kubernetes.cri.sandbox-cpu-shares",
	"io.kubernetes.cri.sandbox-memory", "io.kubernetes.cri.podsandbox.image-name", "io.kubernetes.cri.untrusted-workload",
	"io.containerd.cri.runtime-handler",
	"bulkhead.dev/profile", "bulkhead.dev/backend", "bulkhead.dev/max-lifetime", AnnotationCgroupsPath,
}

// informationalPrefixes are annotation namespaces of the same kind: the
// OCI image's own description.
var informationalPrefixes = []string{"org.opencontainers.image."}

// ruleAnnotations lets only known annotations reach the backend. runc and
// runsc act on some (runsc joins a sandbox by the CRI sandbox id, takes
// mount hints and flag overrides from dev.gvisor.*; runc passes
// org.systemd.property.* to systemd), so an unknown one is refused rather
// than passed through, and the pod ones must name this container's own
// sandbox.
func ruleAnnotations(c *Context, s *rspec.Spec) []Decision {
	keys := make([]string, 0, len(s.Annotations))
	for k := range s.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ds []Decision
	for _, k := range keys {
		v := s.Annotations[k]
		field := "annotations[" + k + "]"
		d := Decision{Rule: "annotations", Field: field, Action: Kept, Before: v, After: v, Layer: LayerNone}
		switch {
		case k == AnnotationCRIContainerType || k == AnnotationCRISandboxID:
			d.Why = podAnnotationRefusal(c, s.Annotations)
			if d.Why != "" {
				d.Action, d.After = Refused, ""
			} else {
				d.Why = "names this container's own pod sandbox"
			}
		case hasOpt(informationalAnnotations, k) || hasPrefix(informationalPrefixes, k) || annotationAllowed(c.Profile, k):
			d.Why = "informational, or on the profile's annotations_allowed"
		default:
			d.Action, d.After = Refused, ""
			d.Why = "annotation " + k + " is not on the allowlist: backends act on annotations (sandbox joining, mount hints, systemd properties); remove it, or an administrator adds it to annotations_allowed"
		}
		ds = append(ds, d)
	}
	return ds
}

// podAnnotationRefusal says why the CRI pod annotations do not name this
// container's own sandbox, or "".
func podAnnotationRefusal(c *Context, a map[string]string) string {
	id := a[AnnotationCRISandboxID]
	switch a[AnnotationCRIContainerType] {
	case "sandbox":
		if c.ID != "" && id != c.ID {
			return "a pod sandbox must carry its own id as sandbox-id"
		}
		return ""
	case "container":
		if !madeByCRI(c) {
			return "pod annotations count only in a bundle a CRI engine made (containerd's CRI plugin, CRI-O), and this one is a caller's; the backend would put this container into sandbox " + id + "; remove the io.kubernetes.cri.* annotations, or run the pod through CRI"
		}
		if id == "" || c.JoinableSandbox == nil || !c.JoinableSandbox(id) {
			return "sandbox " + id + " is not a running pod sandbox that bulkhead created under this enforced profile; the backend would put this container into it"
		}
		return ""
	case "":
		if id != "" {
			return "a sandbox id without a container type"
		}
		return ""
	}
	return "container type " + a[AnnotationCRIContainerType] + " is neither sandbox nor container"
}

func hasPrefix(prefixes []string, s string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// annotationAllowed: an exact key of annotations_allowed, or a prefix
// written with a trailing "*".
func annotationAllowed(p *Profile, k string) bool {
	for _, a := range p.AnnotationsAllowed {
		if a == k || strings.HasSuffix(a, "*") && strings.HasPrefix(k, strings.TrimSuffix(a, "*")) {
			return true
		}
	}
	return false
}
