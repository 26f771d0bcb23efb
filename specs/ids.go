package specs

import (
	"fmt"
	"strconv"
	"strings"
)

// idRange is an inclusive range of uids or gids.
type idRange struct{ lo, hi uint32 }

// parseIDRanges reads "N" and "N-M" entries. Root (0) is never allowed
// this way: the user rule replaces it, whatever the ranges say.
func parseIDRanges(entries []string) ([]idRange, error) {
	var out []idRange
	for _, e := range entries {
		r, ok := parseIDRange(e)
		if !ok || r.lo == 0 {
			return nil, fmt.Errorf("id range %q: want N or N-M with 0 < N <= M", e)
		}
		out = append(out, r)
	}
	return out, nil
}

// parseIDRange reads one "N" or "N-M" entry with N <= M.
func parseIDRange(e string) (idRange, bool) {
	lo, hi, isRange := strings.Cut(e, "-")
	if !isRange {
		hi = lo
	}
	l, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
	h, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 32)
	if err1 != nil || err2 != nil || l > h {
		return idRange{}, false
	}
	return idRange{uint32(l), uint32(h)}, true
}

// allowedID tells whether id is the profile's own or in its ranges.
func allowedID(own uint32, ranges []string, id uint32) bool {
	if id == own {
		return true
	}
	rs, err := parseIDRanges(ranges)
	if err != nil {
		return false
	}
	for _, r := range rs {
		if id >= r.lo && id <= r.hi {
			return true
		}
	}
	return false
}

// parseOwnerRanges reads workspace_owners: "N" and "N-M" entries, root
// (0) included, because naming root there is the administrator's
// explicit choice.
func parseOwnerRanges(entries []string) ([]idRange, error) {
	var out []idRange
	for _, e := range entries {
		r, ok := parseIDRange(e)
		if !ok || r.hi >= 1<<32-1 {
			return nil, fmt.Errorf("workspace_owners %q: want N or N-M with 0 <= N <= M < 4294967295", e)
		}
		out = append(out, r)
	}
	return out, nil
}

// WorkspaceOwnerAllowed tells whether a workspace source owned by id may
// be id-mapped so that its owner's files become the sandbox user's.
func (p *Profile) WorkspaceOwnerAllowed(id uint32) bool {
	rs, err := parseOwnerRanges(p.WorkspaceOwners)
	if err != nil {
		return false
	}
	for _, r := range rs {
		if id >= r.lo && id <= r.hi {
			return true
		}
	}
	return false
}
