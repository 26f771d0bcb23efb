package doctor

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

//go:embed runc_cves.toml
var runcCVEsTOML []byte

// RuncCVE is one line of runc_cves.toml.
type RuncCVE struct {
	ID      string   `toml:"id"`
	Fixed   []string `toml:"fixed"`
	Summary string   `toml:"summary"`
	Source  string   `toml:"source"`
}

// RuncCVEs is the embedded table of runc escapes doctor judges.
func RuncCVEs() ([]RuncCVE, error) {
	var doc struct {
		Runc []RuncCVE `toml:"runc"`
	}
	dec := toml.NewDecoder(bytes.NewReader(runcCVEsTOML))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("runc_cves.toml: %w", err)
	}
	for _, c := range doc.Runc {
		if c.ID == "" || len(c.Fixed) == 0 || c.Source == "" {
			return nil, fmt.Errorf("runc_cves.toml: %s: id, fixed and source are required", c.ID)
		}
		for _, f := range c.Fixed {
			if _, err := parseRuncVersion(f); err != nil {
				return nil, fmt.Errorf("runc_cves.toml: %s: %w", c.ID, err)
			}
		}
	}
	return doc.Runc, nil
}

// runcVersion is an upstream runc version: 1.1.5, 1.0.0-rc92, 1.4.0-rc.3.
// Build metadata (+ds1, Debian's repack suffix) is dropped: it names a
// packaging, not a source change.
type runcVersion struct {
	major, minor, patch int
	// pre is the pre-release split into its letters and its number
	// ("rc.3" and "rc3" alike: rc, 3); empty pre is a release.
	pre    string
	preNum int
	raw    string
}

// A pre-release starts with a letter; what starts with a digit after the
// dash is a distribution's revision (1.1.12-0ubuntu2~22.04.1) and dropped.
var runcVersionRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(?:-([A-Za-z][0-9A-Za-z.]*))?(?:[-+~].*)?$`)
})

func parseRuncVersion(s string) (runcVersion, error) {
	m := runcVersionRE().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return runcVersion{}, fmt.Errorf("runc version %q: not MAJOR.MINOR.PATCH[-PRERELEASE]", s)
	}
	v := runcVersion{raw: s}
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	v.patch, _ = strconv.Atoi(m[3])
	if pre := strings.ReplaceAll(m[4], ".", ""); pre != "" {
		i := strings.IndexFunc(pre, func(r rune) bool { return r >= '0' && r <= '9' })
		if i < 0 {
			v.pre = pre
		} else {
			v.pre = pre[:i]
			n, err := strconv.Atoi(pre[i:])
			if err != nil {
				return runcVersion{}, fmt.Errorf("runc version %q: pre-release %q", s, m[4])
			}
			v.preNum = n
		}
	}
	return v, nil
}

// compare orders versions as semver does, except that a pre-release's
// number compares as a number (rc10 after rc7, as runc numbered them).
func (v runcVersion) compare(o runcVersion) int {
	for _, d := range []int{v.major - o.major, v.minor - o.minor, v.patch - o.patch} {
		if d != 0 {
			return d
		}
	}
	switch {
	case v.pre == o.pre:
		return v.preNum - o.preNum
	case v.pre == "":
		return 1
	case o.pre == "":
		return -1
	default:
		return strings.Compare(v.pre, o.pre)
	}
}

func (v runcVersion) sameBranch(o runcVersion) bool {
	return v.major == o.major && v.minor == o.minor
}

// upstreamFixed judges version against one CVE's fixed versions: fixed on
// a listed branch at or past its fix, or past every listed fix; anything
// else is vulnerable, so a branch the table does not know fails closed.
func upstreamFixed(v runcVersion, fixed []string) bool {
	newest := true
	for _, f := range fixed {
		fv, err := parseRuncVersion(f)
		if err != nil {
			return false
		}
		if v.sameBranch(fv) {
			return v.compare(fv) >= 0
		}
		if v.compare(fv) < 0 {
			newest = false
		}
	}
	return newest
}

// Changelog is a distribution package's changelog for a backend binary.
type Changelog struct {
	// Source is what was read: a file or a command line.
	Source string
	// Package and Version are the installed package the binary belongs to.
	Package string
	Version string
	Text    []byte
}

// names tells whether the changelog names id as a whole word (so that
// CVE-2025-3113 is not found in CVE-2025-31133).
func (c *Changelog) names(id string) bool {
	re := regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(id) + `\b`)
	return re.Match(c.Text)
}

// CVEVerdict is the judgement of one CVE for one runc, with the source
// that decided it.
type CVEVerdict struct {
	CVE     RuncCVE
	Fixed   bool
	Decided string
}

// judgeRunc judges an upstream version against the table. A version the
// upstream fixes cover is decided by the version; a vulnerable one is
// looked up in the distribution's changelog, which decides when it names
// the CVE. Without a changelog the upstream version decides.
func judgeRunc(version string, cl *Changelog, table []RuncCVE) ([]CVEVerdict, error) {
	v, err := parseRuncVersion(version)
	if err != nil {
		return nil, err
	}
	var out []CVEVerdict
	for _, c := range table {
		verdict := CVEVerdict{CVE: c}
		switch {
		case upstreamFixed(v, c.Fixed):
			verdict.Fixed = true
			verdict.Decided = fmt.Sprintf("upstream version %s (fixed in %s)", version, strings.Join(c.Fixed, ", "))
		case cl != nil && cl.names(c.ID):
			verdict.Fixed = true
			verdict.Decided = fmt.Sprintf("%s names %s (package %s %s backports the fix to upstream %s)", cl.Source, c.ID, cl.Package, cl.Version, version)
		case cl != nil:
			verdict.Decided = fmt.Sprintf("upstream version %s predates the fixes (%s) and %s (package %s %s) does not name %s", version, strings.Join(c.Fixed, ", "), cl.Source, cl.Package, cl.Version, c.ID)
		default:
			verdict.Decided = fmt.Sprintf("upstream version %s predates the fixes (%s); no distribution package owns the binary, so no backport is known", version, strings.Join(c.Fixed, ", "))
		}
		out = append(out, verdict)
	}
	return out, nil
}

// DistroChangelog finds the changelog of the package that installed
// binary: Debian and Ubuntu keep it as /usr/share/doc/PKG/changelog.Debian.gz,
// RPM distributions answer `rpm -q --changelog`. A binary no package owns
// (a runc from a release tarball) has none: (nil, nil).
func DistroChangelog(binary string) (*Changelog, error) {
	if p, err := filepath.EvalSymlinks(binary); err == nil {
		binary = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "dpkg-query", "-S", binary).Output(); err == nil {
		pkg, _, _ := strings.Cut(strings.TrimSpace(string(out)), ":")
		ver, _ := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", pkg).Output()
		path := filepath.Join("/usr/share/doc", pkg, "changelog.Debian.gz")
		text, err := readGzip(path)
		if err != nil {
			return nil, fmt.Errorf("package %s: %w", pkg, err)
		}
		return &Changelog{Source: path, Package: pkg, Version: string(ver), Text: text}, nil
	}
	if out, err := exec.CommandContext(ctx, "rpm", "-qf", "--qf", "%{NAME} %{VERSION}-%{RELEASE}", binary).Output(); err == nil {
		pkg, ver, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
		text, err := exec.CommandContext(ctx, "rpm", "-q", "--changelog", pkg).Output()
		if err != nil {
			return nil, fmt.Errorf("rpm -q --changelog %s: %w", pkg, err)
		}
		return &Changelog{Source: "rpm -q --changelog " + pkg, Package: pkg, Version: ver, Text: text}, nil
	}
	return nil, nil
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer zr.Close()
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}
