package egress

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// Only public unicast addresses pass; every form that embeds or stands for
// another address is judged by where it leads or refused.
func TestRefusedAddress(t *testing.T) {
	own := []netip.Prefix{netip.MustParsePrefix("203.0.114.7/32"), netip.MustParsePrefix("44.44.44.52/30")}
	for _, a := range []string{
		"127.0.0.1", "127.1.2.3", "0.0.0.0", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
		"169.254.169.254", "224.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.2.1",
		"::1", "::", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "fe80::1", "fe80::1%eth0",
		"fd00::1", "ff02::1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::7f00:1",
		"2002:7f00:1::", "2002:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:db8::1",
		"100::1", "203.0.114.7", "::ffff:203.0.114.7", "44.44.44.53", "::ffff:44.44.44.55",
	} {
		if why := refusedAddress(netip.MustParseAddr(a), own); why == "" {
			t.Errorf("%s passed, want refused", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "1.1.1.1", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::5db8:d822", "::ffff:93.184.216.34"} {
		if why := refusedAddress(netip.MustParseAddr(a), own); why != "" {
			t.Errorf("%s refused (%s), want passed", a, why)
		}
	}
}

// The host's own addresses are what its kernel delivers locally, not only
// its interfaces' addresses: a `local` route (what cloud guest agents add
// for a load balancer's address) and a prefix on lo reached host services
// on 0.0.0.0 through the broker. Read in a network namespace of the
// test's own, set up so.
func TestHostLocal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a network namespace with routes of its own")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2) to set up the namespace's routes")
	}
	ns := fmt.Sprintf("bulkhead-hostlocal-%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	ip("-n", ns, "link", "set", "lo", "up")
	ip("-n", ns, "route", "add", "local", "44.44.44.46/32", "dev", "lo")
	ip("-n", ns, "addr", "add", "44.44.44.52/30", "dev", "lo")

	var own []netip.Prefix
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The thread ends with the goroutine, never back in the host's.
		runtime.LockOSThread()
		f, ferr := os.Open("/run/netns/" + ns)
		if ferr != nil {
			err = ferr
			return
		}
		defer f.Close()
		if err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			return
		}
		own, err = hostLocal()
	}()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("local: %v", own)
	for _, a := range []string{"44.44.44.46", "44.44.44.53", "::ffff:44.44.44.55"} {
		if why := refusedAddress(netip.MustParseAddr(a), own); why != "an address of the host itself" {
			t.Errorf("%s: %q, want the host's own", a, why)
		}
	}
	if why := refusedAddress(netip.MustParseAddr("44.44.44.60"), own); why != "" {
		t.Errorf("44.44.44.60, no local route: refused (%s)", why)
	}
}
