package doctor

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRuncCVETable(t *testing.T) {
	table, err := RuncCVEs()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CVE-2019-5736", "CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"}
	var got []string
	for _, c := range table {
		got = append(got, c.ID)
		if !strings.HasPrefix(c.Source, "https://") {
			t.Errorf("%s: source %q is no address", c.ID, c.Source)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("table lists %v, want %v", got, want)
	}
}

func TestRuncVersionOrder(t *testing.T) {
	// Each version sorts before the next.
	ordered := []string{"0.1.1", "1.0.0-rc6", "1.0.0-rc7", "1.0.0-rc10", "1.0.0-rc92", "1.0.0", "1.1.5+ds1",
		"1.1.11", "1.1.12-0ubuntu2~22.04.1", "1.2.7", "1.2.8", "1.4.0-rc.2", "1.4.0-rc.3", "1.4.0"}
	for i := 0; i+1 < len(ordered); i++ {
		a, err := parseRuncVersion(ordered[i])
		if err != nil {
			t.Fatal(err)
		}
		b, err := parseRuncVersion(ordered[i+1])
		if err != nil {
			t.Fatal(err)
		}
		if a.compare(b) >= 0 || b.compare(a) <= 0 {
			t.Errorf("%s does not sort before %s", ordered[i], ordered[i+1])
		}
	}
	for _, bad := range []string{"", "1.1", "runc", "1.x.0"} {
		if _, err := parseRuncVersion(bad); err == nil {
			t.Errorf("%q parsed as a version", bad)
		}
	}
}

// TestJudgeRuncUpstream: the upstream version alone, per release branch.
func TestJudgeRuncUpstream(t *testing.T) {
	table, err := RuncCVEs()
	if err != nil {
		t.Fatal(err)
	}
	// fixed: the CVEs of the table this version has upstream fixes for.
	cases := []struct {
		version string
		fixed   []string
	}{
		{"1.0.0-rc6", nil},
		{"1.0.0-rc7", []string{"CVE-2019-5736"}},
		{"1.0.0-rc92", []string{"CVE-2019-5736"}},
		{"1.0.3", []string{"CVE-2019-5736"}}, // no 1.0 fix for 2024-21626
		{"1.1.5+ds1", []string{"CVE-2019-5736"}},
		{"1.1.11", []string{"CVE-2019-5736"}},
		{"1.1.12", []string{"CVE-2019-5736", "CVE-2024-21626"}},
		{"1.1.15", []string{"CVE-2019-5736", "CVE-2024-21626"}}, // no 1.1 fix for 2025
		{"1.2.0", []string{"CVE-2019-5736", "CVE-2024-21626"}},
		{"1.2.7", []string{"CVE-2019-5736", "CVE-2024-21626"}},
		{"1.2.8", []string{"CVE-2019-5736", "CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"}},
		{"1.3.2", []string{"CVE-2019-5736", "CVE-2024-21626"}},
		{"1.3.3", []string{"CVE-2019-5736", "CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"}},
		{"1.4.0-rc.2", []string{"CVE-2019-5736", "CVE-2024-21626"}},
		{"1.4.0-rc.3", []string{"CVE-2019-5736", "CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"}},
		{"1.4.0", []string{"CVE-2019-5736", "CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"}},
		{"1.5.3", []string{"CVE-2019-5736", "CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"}},
	}
	for _, tc := range cases {
		verdicts, err := judgeRunc(tc.version, nil, table)
		if err != nil {
			t.Fatalf("%s: %v", tc.version, err)
		}
		var fixed []string
		for _, v := range verdicts {
			if v.Fixed {
				fixed = append(fixed, v.CVE.ID)
				if !strings.HasPrefix(v.Decided, "upstream version "+tc.version) {
					t.Errorf("%s %s: decided by %q, want the upstream version", tc.version, v.CVE.ID, v.Decided)
				}
			} else if !strings.Contains(v.Decided, "no distribution package") {
				t.Errorf("%s %s: vulnerable, decided by %q", tc.version, v.CVE.ID, v.Decided)
			}
		}
		if strings.Join(fixed, " ") != strings.Join(tc.fixed, " ") {
			t.Errorf("runc %s: fixed %v, want %v", tc.version, fixed, tc.fixed)
		}
	}
}

// TestJudgeRuncChangelog: a distribution changelog that names a CVE
// decides it fixed for a vulnerable upstream version; one that does not
// name it leaves it vulnerable, and the verdict names the file. The
// fixtures are read through gzip as changelog.Debian.gz is.
func TestJudgeRuncChangelog(t *testing.T) {
	table, err := RuncCVEs()
	if err != nil {
		t.Fatal(err)
	}
	deb12u1 := gzipFixture(t, "changelog-deb12u1.txt")
	backport := gzipFixture(t, "changelog-2025-backport.txt")
	cases := []struct {
		name      string
		version   string
		changelog string
		fixed     map[string]bool
	}{
		// This host: Debian 12's runc names the 2024 fix only.
		{"debian 12 deb12u1", "1.1.5+ds1", deb12u1, map[string]bool{
			"CVE-2019-5736": true, "CVE-2024-21626": true, "CVE-2025-31133": false, "CVE-2025-52565": false, "CVE-2025-52881": false}},
		{"2025 backport on 1.1", "1.1.5+ds1", backport, map[string]bool{
			"CVE-2019-5736": true, "CVE-2024-21626": true, "CVE-2025-31133": true, "CVE-2025-52565": true, "CVE-2025-52881": true}},
		// The 1.2 branch before 1.2.8 with a changelog that names only
		// the older fix.
		{"1.2 branch, no backport", "1.2.5", deb12u1, map[string]bool{
			"CVE-2019-5736": true, "CVE-2024-21626": true, "CVE-2025-31133": false, "CVE-2025-52565": false, "CVE-2025-52881": false}},
		{"1.3 branch, backport", "1.3.0", backport, map[string]bool{
			"CVE-2019-5736": true, "CVE-2024-21626": true, "CVE-2025-31133": true, "CVE-2025-52565": true, "CVE-2025-52881": true}},
		// 1.1.11 predates the 2024 fix upstream; the changelog names it.
		{"1.1 branch, 2024 backport", "1.1.11", deb12u1, map[string]bool{
			"CVE-2019-5736": true, "CVE-2024-21626": true, "CVE-2025-31133": false, "CVE-2025-52565": false, "CVE-2025-52881": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text, err := readGzip(tc.changelog)
			if err != nil {
				t.Fatal(err)
			}
			cl := &Changelog{Source: tc.changelog, Package: "runc", Version: "fixture", Text: text}
			verdicts, err := judgeRunc(tc.version, cl, table)
			if err != nil {
				t.Fatal(err)
			}
			up, _ := parseRuncVersion(tc.version)
			for _, v := range verdicts {
				if v.Fixed != tc.fixed[v.CVE.ID] {
					t.Errorf("%s: fixed=%v, want %v (%s)", v.CVE.ID, v.Fixed, tc.fixed[v.CVE.ID], v.Decided)
				}
				byChangelog := !upstreamFixed(up, v.CVE.Fixed)
				if byChangelog && !strings.Contains(v.Decided, tc.changelog) {
					t.Errorf("%s: decided by %q, which does not name the changelog", v.CVE.ID, v.Decided)
				}
			}
		})
	}
}

// TestChangelogNamesWholeID: an id that is a prefix of another is not
// found in it.
func TestChangelogNamesWholeID(t *testing.T) {
	cl := &Changelog{Text: []byte("  * CVE-2025-31133: masked paths\n")}
	if cl.names("CVE-2025-3113") {
		t.Error("CVE-2025-3113 found in CVE-2025-31133")
	}
	if !cl.names("CVE-2025-31133") || !cl.names("cve-2025-31133") {
		t.Error("CVE-2025-31133 not found")
	}
}

// gzipFixture compresses testdata/name into the test's temp dir,
// as a package's changelog.Debian.gz.
func gzipFixture(t *testing.T, name string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "changelog.Debian.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(text); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
