package specs

import (
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// egressProxyURL is the broker as HTTP clients name a proxy.
const egressProxyURL = "http://" + EgressProxyAddr

// egressEnv are the variables that send a job's HTTP clients to the
// broker: the lower- and upper-case spellings (curl reads only the lower
// case http_proxy, Go and Python both), and the package managers that
// read their own (npm, yarn, pip, cargo). A client that ignores all of
// them connects directly and meets the empty network namespace.
var egressEnv = []struct{ name, value string }{
	{"HTTP_PROXY", egressProxyURL},
	{"HTTPS_PROXY", egressProxyURL},
	{"http_proxy", egressProxyURL},
	{"https_proxy", egressProxyURL},
	{"NO_PROXY", "localhost,127.0.0.1"},
	{"no_proxy", "localhost,127.0.0.1"},
	{"npm_config_proxy", egressProxyURL},
	{"npm_config_https_proxy", egressProxyURL},
	{"YARN_HTTP_PROXY", egressProxyURL},
	{"YARN_HTTPS_PROXY", egressProxyURL},
	{"PIP_PROXY", egressProxyURL},
	{"CARGO_HTTP_PROXY", egressProxyURL},
}

func ruleEgress(c *Context, s *rspec.Spec) []Decision {
	return proxyEnv(c.Profile, ensureProcess(s))
}

// proxyEnv points the process's HTTP clients at the egress broker when the
// profile has egress, replacing any proxy the caller named: the broker is
// the only way out of the namespace. A profile without egress changes
// nothing: there is no broker to name, and a proxy the caller named is
// unreachable like every other destination. Values are not recorded: a
// caller's proxy URL may carry a password.
func proxyEnv(prof *Profile, p *rspec.Process) []Decision {
	if len(prof.Egress) == 0 {
		return nil
	}
	const why = "the egress broker, outside the sandbox, is the only way out of the loopback-only network namespace; it allows " +
		"only the profile's egress list"
	var ds []Decision
	for _, v := range egressEnv {
		field := "process.env[" + v.name + "]"
		var before []string
		p.Env, before = withoutEnv(p.Env, v.name)
		p.Env = append(p.Env, v.name+"="+v.value)
		switch {
		case len(before) == 0:
			ds = append(ds, Decision{Rule: "egress", Field: field, Action: Added, After: v.value, Layer: LayerEgressBroker, Why: why})
		case len(before) == 1 && before[0] == v.value:
			ds = append(ds, Decision{Rule: "egress", Field: field, Action: Kept, Before: v.value, After: v.value, Layer: LayerEgressBroker, Why: why})
		default:
			ds = append(ds, Decision{Rule: "egress", Field: field, Action: Tightened, Before: "the caller's value", After: v.value,
				Layer: LayerEgressBroker, Why: why})
		}
	}
	return ds
}

// withoutEnv is env without any entry of name, and the values those had.
func withoutEnv(env []string, name string) (rest, values []string) {
	rest = env[:0:0]
	for _, kv := range env {
		n, v, _ := strings.Cut(kv, "=")
		if n == name {
			values = append(values, v)
			continue
		}
		rest = append(rest, kv)
	}
	return rest, values
}
