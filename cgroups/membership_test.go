package cgroups

import "testing"

func TestMembershipWithin(t *testing.T) {
	parent := Membership{V1: map[string]string{"pids": "/bhx", "memory": "/bhx", "name=systemd": "/bhx"}, Unified: "/bhx"}
	for _, tc := range []struct {
		name string
		m    Membership
		ok   bool
	}{
		{"same", parent, true},
		{"sub-cgroup", Membership{V1: map[string]string{"pids": "/bhx/sub", "memory": "/bhx", "name=systemd": "/bhx"}, Unified: "/bhx/sub"}, true},
		{"sibling sharing the name as prefix", Membership{V1: map[string]string{"pids": "/bhx-host", "memory": "/bhx", "name=systemd": "/bhx"}, Unified: "/bhx"}, false},
		{"parent", Membership{V1: map[string]string{"pids": "/", "memory": "/bhx", "name=systemd": "/bhx"}, Unified: "/bhx"}, false},
		{"unified sibling", Membership{V1: parent.V1, Unified: "/bhx2"}, false},
		{"hierarchy missing", Membership{V1: map[string]string{"pids": "/bhx", "name=systemd": "/bhx"}, Unified: "/bhx"}, false},
		{"extra hierarchy", Membership{V1: map[string]string{"pids": "/bhx", "memory": "/bhx", "name=systemd": "/bhx", "cpu": "/"}, Unified: "/bhx"}, false},
	} {
		if err := tc.m.Within(parent); (err == nil) != tc.ok {
			t.Errorf("%s: Within = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	root := Membership{Unified: "/"}
	if err := (Membership{Unified: "/x"}).Within(root); err != nil {
		t.Errorf("a group below the root: %v", err)
	}
}
