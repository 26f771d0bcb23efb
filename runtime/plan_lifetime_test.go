package runtime

import (
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/specs"
)

func TestDecideLifetime(t *testing.T) {
	for _, tc := range []struct {
		name, profile, annotation string // annotation "-" for none
		want                      time.Duration
		action                    specs.Action
		why                       string
		refused                   bool
	}{
		{"no limit, no annotation", "0", "-", 0, "", "", false},
		{"profile only", "30m", "-", 30 * time.Minute, specs.Added, "killed 30m0s after start", false},
		{"shorter honoured", "30m", "90s", 90 * time.Second, specs.Kept, "honoured", false},
		{"equal honoured", "30m", "30m", 30 * time.Minute, specs.Kept, "honoured", false},
		{"longer clamped", "30m", "2h", 30 * time.Minute, specs.Tightened, "clamped", false},
		{"none asked, clamped", "30m", "0", 30 * time.Minute, specs.Tightened, "asks for no limit", false},
		{"no profile limit, annotation honoured", "0", "10s", 10 * time.Second, specs.Kept, "sets no max_lifetime", false},
		{"garbage refused", "30m", "forever", 0, specs.Refused, "not a duration", true},
		{"negative refused", "0", "-5s", 0, specs.Refused, "not a duration", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := specs.DefaultProfile()
			p.MaxLifetime = tc.profile
			ann := map[string]string{}
			if tc.annotation != "-" {
				ann[AnnotationMaxLifetime] = tc.annotation
			}
			got, ds, err := decideLifetime(&p, ann)
			if (err != nil) != tc.refused {
				t.Fatalf("err %v, refused %v", err, tc.refused)
			}
			if got != tc.want {
				t.Fatalf("lifetime %s, want %s", got, tc.want)
			}
			if tc.action == "" {
				if len(ds) != 0 {
					t.Fatalf("decisions %+v, want none", ds)
				}
				return
			}
			if len(ds) != 1 || ds[0].Action != tc.action || ds[0].Rule != "lifetime" || !strings.Contains(ds[0].Why, tc.why) {
				t.Fatalf("decisions %+v, want one lifetime %s decision saying %q", ds, tc.action, tc.why)
			}
			if tc.refused && !strings.Contains(err.Error(), AnnotationMaxLifetime) {
				t.Fatalf("refusal %q does not name the annotation", err)
			}
		})
	}
}

func TestWatchdogArgvAbsolute(t *testing.T) {
	g := &Globals{Root: "rel/root"}
	g.SetConfig("cfg.toml", true)
	argv := strings.Join(watchdogArgv("/bin/bulkhead", g, false, "c1", 42, 3*time.Second, "2026-12-03T00:00:00.5Z"), " ")
	if strings.Contains(argv, " rel/root") || strings.Contains(argv, " cfg.toml") {
		t.Fatalf("watchdog argv %q: the watchdog runs in /, paths must be absolute", argv)
	}
	if !strings.HasSuffix(argv, "watchdog --ready-fd 3 --pid 42 --lifetime 3s --created 2026-12-03T00:00:00.5Z c1") {
		t.Fatalf("watchdog argv %q", argv)
	}
}
