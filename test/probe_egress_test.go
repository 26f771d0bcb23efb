package test

import (
	"encoding/json"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/leftover"
)

// probeRow is one control of `bulkhead probe --format json`.
type probeRow struct {
	Name     string `json:"name"`
	Observed string `json:"observed"`
	Layer    string `json:"layer"`
	Result   string `json:"result"`
	Detail   string `json:"detail"`
}

type probeReport struct {
	ID       string     `json:"id"`
	Finished bool       `json:"finished"`
	Pass     bool       `json:"pass"`
	Controls []probeRow `json:"controls"`
}

// probeEgress runs `bulkhead probe` with the test's names in /etc/hosts
// (the broker create starts stays in that mount namespace) and returns
// the report and the egress row.
func probeEgress(t *testing.T, hosts string, g []string, args ...string) (probeReport, probeRow, result) {
	t.Helper()
	r := createWithHosts(t, hosts, append(append(g, "probe", "--format", "json", "--timeout", "100s"), args...)...)
	var rep probeReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("probe: exit %d, no JSON report (%v):\n%s\nstderr: %s", r.code, err, r.stdout, r.stderr)
	}
	var row probeRow
	for _, c := range rep.Controls {
		t.Logf("%-5s %-13s %-60.60s %s", c.Result, c.Name, c.Observed, c.Layer)
		if c.Name == "egress" {
			row = c
		}
	}
	if row.Name == "" {
		t.Fatalf("probe report has no egress row:\n%s", r.stdout)
	}
	if pids := leftover.Brokers(rep.ID); len(pids) != 0 {
		t.Errorf("after the probe: brokers %v of %s still running", pids, rep.ID)
	}
	return rep, row, r
}

// `bulkhead probe` of a profile with egress: the listed test host answers
// through the broker, a name outside the list gets the broker's 403, a
// direct connection to the test host's listed address meets the empty
// namespace and DNS finds no server; the broker's audit lines show both
// verdicts. Pointed at a listed name the broker refuses (it resolves to
// loopback), the same control fails. On runc and on runsc.
func TestProbeEgress(t *testing.T) {
	for _, b := range []struct{ backend, direct, layer string }{
		{"runc", "ENETUNREACH", "egress broker, netns"},
		// gVisor's netstack answers for the empty namespace.
		{"runsc", "EHOSTUNREACH", "egress broker, gVisor (Sentry), netns"},
	} {
		t.Run(b.backend, func(t *testing.T) { probeEgressOn(t, b.backend, b.direct, b.layer) })
	}
}

func probeEgressOn(t *testing.T, backend, direct, layer string) {
	needRoot(t, backend, "ip", "unshare")
	h := newEgressHost(t)
	config, audit, hosts := egressConfig(t, h, "")
	g := []string{"--config", config, "--root", stateRoot(t), "--backend", backend}

	rep, row, r := probeEgress(t, hosts, g)
	if !rep.Finished || row.Result != "pass" {
		t.Fatalf("egress row %+v (probe exit %d, stderr %s); want pass", row, r.code, r.stderr)
	}
	for _, want := range []string{
		"allowed allowed.test:80 200 through the broker",
		"denied denied.bulkhead.invalid:80 403",
		"direct " + h.addr + ":80 " + direct,
		"DNS allowed.test no server",
	} {
		if !strings.Contains(row.Observed, want) {
			t.Errorf("egress observed %q, want %q", row.Observed, want)
		}
	}
	if row.Layer != layer {
		t.Errorf("egress layer %q, want %q", row.Layer, layer)
	}
	lines := waitEgressLines(t, audit, rep.ID, 2)
	verdicts := map[string]string{}
	for _, l := range lines {
		verdicts[l["destination"].(string)], _ = l["outcome"].(string)
	}
	if verdicts["allowed.test:80"] != "allowed" || verdicts["denied.bulkhead.invalid:80"] != "denied" {
		t.Errorf("audit egress lines of the probe: %v; want allowed.test:80 allowed and denied.bulkhead.invalid:80 denied", lines)
	}

	rep, row, r = probeEgress(t, hosts, g, "--egress-target", "loopback.test:80")
	if row.Result != "fail" || !strings.Contains(row.Observed, "allowed loopback.test:80 403") || r.code == 0 || rep.Pass {
		t.Fatalf("probe of a listed name the broker refuses: row %+v, exit %d, pass %v; want the egress row to fail and the probe to exit non-zero", row, r.code, rep.Pass)
	}
}
