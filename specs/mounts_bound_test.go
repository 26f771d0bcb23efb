package specs

import (
	"strconv"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// A spec with more mounts than MaxMounts is refused before any rule
// runs, naming the bound; one at the bound is judged as usual.
func TestMountsBounded(t *testing.T) {
	spec := func(n int) *rspec.Spec {
		s := hostileSpec()
		s.Mounts = nil
		for i := 0; i < n; i++ {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/m" + strconv.Itoa(i), Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1k"}})
		}
		return s
	}
	_, ds, err := Apply(testContext(), spec(MaxMounts+1))
	if err == nil || len(ds) != 1 || ds[0].Field != "mounts" || !strings.Contains(ds[0].Why, "at most 1024 mounts") {
		t.Fatalf("%d mounts: %v %s", MaxMounts+1, err, dump(ds))
	}
	_, ds, _ = Apply(testContext(), spec(MaxMounts))
	if d, ok := find(ds, "mounts"); ok && d.Action == Refused {
		t.Errorf("%d mounts refused: %+v", MaxMounts, d)
	}
	if len(ds) < 10 {
		t.Errorf("%d mounts: the rules did not run (%d decisions)", MaxMounts, len(ds))
	}
}
