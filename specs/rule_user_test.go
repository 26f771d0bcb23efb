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
			if u.UID != 65534 || u.GID != 65534 || !slices.Equal(u.AdditionalGids, []uint32{10}) {
				t.Fatalf("user %+v", u)
			}
		}},
		{name: "uid 1000 kept", spec: func(s *rspec.Spec) { s.Process.User = rspec.User{UID: 1000, GID: 1000} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.user.uid", Kept)
				if s.Process.User.UID != 1000 || s.Process.User.GID != 1000 {
					t.Fatalf("user %+v", s.Process.User)
				}
			}},
		{name: "uid 1000 gid 0", spec: func(s *rspec.Spec) { s.Process.User = rspec.User{UID: 1000} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.user.gid", Tightened)
				if s.Process.User.UID != 1000 || s.Process.User.GID != 65534 {
					t.Fatalf("user %+v", s.Process.User)
				}
			}},
	})
}
