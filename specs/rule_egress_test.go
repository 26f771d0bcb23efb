package specs

import (
	"slices"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleEgressNone(t *testing.T) {
	s := &rspec.Spec{Process: &rspec.Process{Env: []string{"PATH=/bin", "HTTP_PROXY=http://corp:8080"}}}
	if ds := ruleEgress(testContext(), s); len(ds) != 0 {
		t.Fatalf("no egress: decisions %+v, want none", ds)
	}
	if !slices.Contains(s.Process.Env, "HTTP_PROXY=http://corp:8080") {
		t.Fatalf("no egress changed the env: %v", s.Process.Env)
	}
}

func TestRuleEgressSetsProxy(t *testing.T) {
	c := testContext()
	c.Profile.Egress = []string{"pypi.org:443"}
	s := &rspec.Spec{Process: &rspec.Process{Env: []string{"PATH=/bin", "https_proxy=http://corp:8080", "https_proxy=http://other:1",
		"HTTP_PROXY=" + egressProxyURL}}}
	ds := ruleEgress(c, s)
	if len(ds) != len(egressEnv) {
		t.Fatalf("%d decisions, want one per variable (%d): %+v", len(ds), len(egressEnv), ds)
	}
	actions := map[string]Action{}
	for _, d := range ds {
		actions[d.Field] = d.Action
		if d.Layer != LayerEgressBroker || strings.Contains(d.Before, "corp") {
			t.Errorf("decision %+v: want layer egress broker and no caller value recorded", d)
		}
	}
	if actions["process.env[https_proxy]"] != Tightened || actions["process.env[HTTP_PROXY]"] != Kept || actions["process.env[PIP_PROXY]"] != Added {
		t.Fatalf("actions %v", actions)
	}
	env := s.Process.Env
	for _, want := range []string{"PATH=/bin", "https_proxy=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128",
		"NO_PROXY=localhost,127.0.0.1", "npm_config_https_proxy=http://127.0.0.1:3128", "PIP_PROXY=http://127.0.0.1:3128"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	n := 0
	for _, kv := range env {
		if strings.HasPrefix(kv, "https_proxy=") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d https_proxy entries, want 1: %v", n, env)
	}
}

// exec'd processes get the same variables: an engine builds their env
// from its own process file, not config.json.
func TestApplyProcessEgress(t *testing.T) {
	c := &Context{Profile: testProfile()}
	c.Profile.Egress = []string{"*.example.org:443"}
	p, ds, err := ApplyProcess(c, &rspec.Process{Args: []string{"sh"}, Cwd: "/", Env: []string{"https_proxy=http://elsewhere:3128"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Env, "https_proxy=http://127.0.0.1:3128") || !slices.Contains(p.Env, "no_proxy=localhost,127.0.0.1") {
		t.Fatalf("exec env %v lacks the broker", p.Env)
	}
	if !slices.ContainsFunc(ds, func(d Decision) bool { return d.Rule == "egress" && d.Action == Tightened }) {
		t.Fatalf("no egress decision for exec: %+v", ds)
	}
}
