package runtime

import (
	"os"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestCheckShowsJobAllowances: `bulkhead check --profile tests` says what
// a job may do and the error past each allowance, from the profile's own
// values; the default profile says it has no home and no scratch.
func TestCheckShowsJobAllowances(t *testing.T) {
	dir := bundle.New(t, []string{"true"})
	for _, tc := range []struct {
		profile string
		want    []string
	}{
		{"tests", []string{"write 256m in /home/sandbox", "write 256m in /scratch and execute it", "1536m including the pages",
			"EACCES executing from it", "ENOSPC past 256m", "EAGAIN from fork/clone", "30m after start"}},
		{"formatter", []string{"write 32m in /home/sandbox", "write 32m in /scratch and execute it", "512m including"}},
		{"default", []string{"none: HOME stays the image's", "none: nothing written in the container can be executed", "EROFS writing below HOME"}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			g := checkGlobals(t, "")
			g.Profile = tc.profile
			r := dryRun(t, g, dir)
			var b strings.Builder
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("check --profile %s does not say %q:\n%s", tc.profile, w, b.String())
				}
			}
		})
	}
}

// TestREADMEHasTheJobProfiles: the README's table of each job profile is
// the one check prints, so the two cannot drift apart.
func TestREADMEHasTheJobProfiles(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig("", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range JobProfiles {
		p := cfg.Profiles[name]
		if table := AllowancesMarkdown(&p); !strings.Contains(string(readme), table) {
			t.Errorf("README.md lacks the table of profile %s; it should read:\n%s", name, table)
		}
	}
}
