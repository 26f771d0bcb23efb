package backend

import (
	"strings"
	"testing"
)

func TestGVisorFlagRefusal(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the refusal; "" for none
	}{
		{[]string{"--platform=ptrace"}, ""},
		{[]string{"--root=/run/x", "--network=none", "--oci-seccomp=true", "--debug", "--debug-log=/var/log/runsc/", "-log-format=json"}, ""},
		{[]string{"--platform", "ptrace"}, "takes a value"},
		{[]string{"--platform=native"}, "may be only"},
		{[]string{"--host-uds=all"}, "not a runsc flag bulkhead knows"},
		{[]string{"--host-fifo=open"}, "not a runsc flag bulkhead knows"},
		{[]string{"--TESTONLY-unsafe-nonroot"}, "not a runsc flag bulkhead knows"},
		{[]string{"--allow-flag-override"}, "not a runsc flag bulkhead knows"},
		{[]string{"--network=host"}, "may be only none"},
		{[]string{"--rootless=true"}, "may be only false"},
		{[]string{"ptrace"}, "is no flag"},
		{[]string{"--"}, "not a runsc flag"},
		{[]string{"--oci-seccomp", "--network=none"}, ""},
		{[]string{"--overlay2=all:/var/tmp/x"}, "may be only none"},
		{[]string{"--overlay2=root:memory"}, "may be only none"},
		{[]string{"--overlay"}, "may be only false"},
		{[]string{"--profile"}, "may be only false"},
		{[]string{"--profile-cpu=/etc/x"}, "not a runsc flag bulkhead knows"},
		{[]string{"--overlay2=none", "--overlay=false", "--profile=false"}, ""},
		{[]string{"--strace"}, "not a runsc flag bulkhead knows"},
		{[]string{"--strace-log-size=1000000000"}, "not a runsc flag bulkhead knows"},
		{[]string{"--pcap-log=/tmp/p"}, "not a runsc flag bulkhead knows"},
	} {
		got := GVisorFlagRefusal(tc.args)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
}
