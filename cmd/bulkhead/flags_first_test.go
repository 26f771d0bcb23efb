package main

import (
	"reflect"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime"
)

func TestFlagsFirst(t *testing.T) {
	app := newApp(&runtime.Globals{}, wiring{dispatch: dispatch, ownVerbs: true})
	cases := []struct{ in, want string }{
		{"bulkhead diff ID --format json", "bulkhead diff --format json ID"},
		{"bulkhead --root R --debug changes export ID --format=tar", "bulkhead --root R --debug changes export --format=tar ID"},
		{"bulkhead inspect --format json ID", "bulkhead inspect --format json ID"},
		{"bulkhead seccomp show --profile p --format json", "bulkhead seccomp show --profile p --format json"},
		{"bulkhead check cfg.json --profile gvisor", "bulkhead check --profile gvisor cfg.json"},
		// runc's verbs keep runc's rule.
		{"bulkhead kill ID -9", "bulkhead kill ID -9"},
		{"bulkhead exec ID sh -c true", "bulkhead exec ID sh -c true"},
		{"bulkhead --root R create --bundle B ID", "bulkhead --root R create --bundle B ID"},
	}
	for _, c := range cases {
		got := strings.Join(flagsFirst(app, strings.Fields(c.in)), " ")
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q became %q, want %q", c.in, got, c.want)
		}
	}
}
