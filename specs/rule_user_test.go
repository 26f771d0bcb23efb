package specs

import (
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleUser(t *testing.T) {
	runRule(t, ruleUser, []ruleCase{
		{name: "root", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.user.uid", Tightened)
			wantDecision(t, ds, "process.user.gid", Tightened)
			wantDecision(t, ds, "process.user.additionalGids", Removed)
			u := s.Process.User
			if u.UID != 65534 || u.GID != 65534 || len(u.AdditionalGids) != 0 {
				t.Fatalf("user %+v", u)
			}
		}},
		{name: "a host user's uid is not the job's", spec: func(s *rspec.Spec) {
			s.Process.User = rspec.User{UID: 1000, GID: 42, AdditionalGids: []uint32{42, 65534, 999}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.user.uid", Tightened)
			wantDecision(t, ds, "process.user.gid", Tightened)
			wantDecision(t, ds, "process.user.additionalGids", Removed)
			if u := s.Process.User; u.UID != 65534 || u.GID != 65534 || !slices.Equal(u.AdditionalGids, []uint32{65534}) {
				t.Fatalf("user %+v", u)
			}
		}},
		{name: "ids in the profile's ranges kept", ctx: func(c *Context) {
			c.Profile.AllowedUIDs, c.Profile.AllowedGIDs = []string{"100000-165535"}, []string{"100000-165535"}
		}, spec: func(s *rspec.Spec) {
			s.Process.User = rspec.User{UID: 100123, GID: 100123, AdditionalGids: []uint32{100124, 5}}
		},
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.user.uid", Kept)
				if u := s.Process.User; u.UID != 100123 || u.GID != 100123 || !slices.Equal(u.AdditionalGids, []uint32{100124}) {
					t.Fatalf("user %+v", u)
				}
			}},
	})
}
