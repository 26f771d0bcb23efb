package runtime

import "testing"

func TestSwapMapping(t *testing.T) {
	for _, c := range []struct {
		a, b uint32
		want string
	}{
		{1000, 65534, "0:0:1000,1000:65534:1,1001:1001:64533,65534:1000:1,65535:65535:4294901760"},
		{65534, 1000, "0:0:1000,1000:65534:1,1001:1001:64533,65534:1000:1,65535:65535:4294901760"},
		{0, 65534, "0:65534:1,1:1:65533,65534:0:1,65535:65535:4294901760"},
		{65534, 65535, "0:0:65534,65534:65535:1,65535:65534:1,65536:65536:4294901759"},
		{7, 7, "0:0:4294967295"},
	} {
		if got := swapMapping(c.a, c.b); got != c.want {
			t.Errorf("swapMapping(%d, %d) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	for _, c := range []struct{ id, want uint32 }{{1000, 65534}, {65534, 1000}, {0, 0}, {1001, 1001}} {
		if got := shifted(c.id, 1000, 65534); got != c.want {
			t.Errorf("shifted(%d) = %d, want %d", c.id, got, c.want)
		}
	}
}
