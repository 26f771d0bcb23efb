package specs

import (
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func u16(v uint16) *uint16 { return &v }

// TestBlkioWeightCeilingUnderV2: the weight ceiling, through runc's own
// conversion to io.weight, stays at or below io.weight's default 100, and
// one more would not.
func TestBlkioWeightCeilingUnderV2(t *testing.T) {
	if got := cgroups.ConvertBlkIOToIOWeightValue(maxBlkioWeight); got > 100 {
		t.Errorf("weight %d is io.weight %d, above the default 100", maxBlkioWeight, got)
	}
	if got := cgroups.ConvertBlkIOToIOWeightValue(maxBlkioWeight + 1); got <= 100 {
		t.Errorf("weight %d is io.weight %d: the ceiling could be higher", maxBlkioWeight+1, got)
	}
}

func TestRuleBlkio(t *testing.T) {
	heavy := func(s *rspec.Spec) {
		ensureResources(s).BlockIO = &rspec.LinuxBlockIO{Weight: u16(1000), LeafWeight: u16(1000), WeightDevice: []rspec.LinuxWeightDevice{
			{LinuxBlockIODevice: rspec.LinuxBlockIODevice{Major: 8, Minor: 0}, Weight: u16(1000), LeafWeight: u16(500)},
			{LinuxBlockIODevice: rspec.LinuxBlockIODevice{Major: 8, Minor: 16}, Weight: u16(50)},
		}}
	}
	runRule(t, ruleBlkio, []ruleCase{
		{name: "weights above the default lowered", spec: heavy, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			for _, f := range []string{"weight", "leafWeight", "weightDevice[8:0].weight", "weightDevice[8:0].leafWeight"} {
				wantDecision(t, ds, "linux.resources.blockIO."+f, Tightened)
			}
			b := s.Linux.Resources.BlockIO
			if *b.Weight != 19 || *b.LeafWeight != 100 || *b.WeightDevice[0].Weight != 100 || *b.WeightDevice[0].LeafWeight != 100 {
				t.Fatalf("weights %d %d %d %d", *b.Weight, *b.LeafWeight, *b.WeightDevice[0].Weight, *b.WeightDevice[0].LeafWeight)
			}
			if *b.WeightDevice[1].Weight != 50 || len(ds) != 4 {
				t.Fatalf("the caller's lower device weight changed, or extra decisions: %d, %s", *b.WeightDevice[1].Weight, dump(ds))
			}
			if err := CheckInvariants(testProfile(), s); err != nil && strings.Contains(err.Error(), "blockIO") {
				t.Errorf("invariant refuses the clamped weights: %v", err)
			}
		}},
		{name: "lower and unset weights kept", spec: func(s *rspec.Spec) {
			ensureResources(s).BlockIO = &rspec.LinuxBlockIO{Weight: u16(10), LeafWeight: u16(0)}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			if len(ds) != 0 || *s.Linux.Resources.BlockIO.Weight != 10 {
				t.Fatalf("kept weights changed: %s", dump(ds))
			}
		}},
	})
}

// TestInvariantBlkio: a handed spec with a weight over its ceiling is
// refused, whichever weight it is.
func TestInvariantBlkio(t *testing.T) {
	for name, b := range map[string]*rspec.LinuxBlockIO{
		"weight":              {Weight: u16(20)},
		"leafWeight":          {LeafWeight: u16(101)},
		"weightDevice.weight": {WeightDevice: []rspec.LinuxWeightDevice{{Weight: u16(101)}}},
		"weightDevice.leaf":   {WeightDevice: []rspec.LinuxWeightDevice{{LeafWeight: u16(1000)}}},
	} {
		errs := checkDefaultDeny(testProfile(), testID, &rspec.Spec{Linux: &rspec.Linux{Resources: &rspec.LinuxResources{BlockIO: b}}})
		found := false
		for _, err := range errs {
			found = found || strings.Contains(err.Error(), "blockIO")
		}
		if !found {
			t.Errorf("%s over the ceiling not refused: %v", name, errs)
		}
	}
}

// TestClampResourcesBlkio: `update --blkio-weight 1000` is lowered too.
func TestClampResourcesBlkio(t *testing.T) {
	r := &rspec.LinuxResources{BlockIO: &rspec.LinuxBlockIO{Weight: u16(1000)}}
	ds, err := ClampResources(testProfile(), r)
	if err != nil {
		t.Fatal(err)
	}
	wantDecision(t, ds, "linux.resources.blockIO.weight", Tightened)
	if *r.BlockIO.Weight != maxBlkioWeight {
		t.Fatalf("update weight %d", *r.BlockIO.Weight)
	}
}
