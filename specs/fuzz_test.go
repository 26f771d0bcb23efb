package specs

import (
	"errors"
	"os"
	"testing"
)

func FuzzApply(f *testing.F) {
	for _, fx := range fixtures(f) {
		data, err := os.ReadFile(fx)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Decode(data)
		if err != nil {
			return
		}
		c := testContext()
		out, ds, err := Apply(c, in)
		if err != nil {
			var re *RefusalError
			if !errors.As(err, &re) || !refused(ds) || out != nil {
				t.Fatalf("Apply failed without a refusal: %v", err)
			}
			return
		}
		if err := CheckInvariants(c.Profile, out); err != nil {
			t.Fatalf("Apply accepted a spec that breaks the policy: %v", err)
		}
		// The rewrite must survive the trip through config.json.
		back, err := Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(back)
		if err != nil {
			t.Fatalf("rewritten spec does not decode: %v", err)
		}
		if err := CheckInvariants(c.Profile, again); err != nil {
			t.Fatalf("policy lost in the round trip: %v", err)
		}
	})
}
