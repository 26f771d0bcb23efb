package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
)

// egressBlob is the size of the download the egress bench times.
const egressBlob = 100 << 20

// egressHost is a test host for the bench: a network namespace of its
// own, joined to the host by a veth pair, where busybox httpd serves the
// blob. Its address is private, so the profile lists it by address, as an
// operator lists an internal mirror.
type egressHost struct {
	ns, veth, addr string
	httpd          *exec.Cmd
}

func newEgressHost(dir string) (*egressHost, error) {
	n := os.Getpid()%200 + 20
	h := &egressHost{ns: fmt.Sprintf("bh-bench-%d", os.Getpid()), veth: fmt.Sprintf("bhb%d", os.Getpid()), addr: fmt.Sprintf("10.214.%d.2", n)}
	steps := [][]string{
		{"netns", "add", h.ns},
		{"link", "add", h.veth + "h", "type", "veth", "peer", "name", h.veth + "c"},
		{"link", "set", h.veth + "c", "netns", h.ns},
		{"addr", "add", fmt.Sprintf("10.214.%d.1/24", n), "dev", h.veth + "h"},
		{"link", "set", h.veth + "h", "up"},
		{"-n", h.ns, "addr", "add", h.addr + "/24", "dev", h.veth + "c"},
		{"-n", h.ns, "link", "set", h.veth + "c", "up"},
		{"-n", h.ns, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			h.remove()
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		h.remove()
		return nil, err
	}
	f, err := os.Create(filepath.Join(www, "blob"))
	if err == nil {
		// Real bytes, not a hole: the host's page cache serves both runs alike.
		chunk := []byte(strings.Repeat("bulkhead", 1<<17)) // 1 MiB
		for i := 0; i < egressBlob/len(chunk) && err == nil; i++ {
			_, err = f.Write(chunk)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		h.remove()
		return nil, err
	}
	h.httpd = exec.Command("ip", "netns", "exec", h.ns, bundle.Busybox, "httpd", "-f", "-p", h.addr+":80", "-h", www)
	if err := h.httpd.Start(); err != nil {
		h.httpd = nil
		h.remove()
		return nil, err
	}
	for i := 0; ; i++ {
		if exec.Command(bundle.Busybox, "wget", "-q", "--spider", h.url()).Run() == nil {
			return h, nil
		}
		if i == 100 {
			h.remove()
			return nil, fmt.Errorf("test host %s does not answer", h.addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *egressHost) url() string { return "http://" + h.addr + "/blob" }

func (h *egressHost) remove() {
	if h.httpd != nil && h.httpd.Process != nil {
		_ = h.httpd.Process.Kill()
		_ = h.httpd.Wait()
	}
	_ = exec.Command("ip", "link", "delete", h.veth+"h").Run()
	_ = exec.Command("ip", "netns", "delete", h.ns).Run()
}

// benchEgress times a 100 MiB download by a job in the sandbox through the
// egress broker against the same download by the same client directly in
// the host's namespace, interleaved, and prints the ratio of the median
// throughputs. Each sandbox run is a new container (bulkhead run) with its
// own broker; the time is the client's own, from request to last byte.
func benchEgress(bulkhead, dir string, n int) error {
	fmt.Printf("\negress: a %d MiB download through the broker (runc) vs directly in the host namespace, %d iterations each, interleaved\n", egressBlob>>20, n)
	for _, tool := range []string{"runc", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Printf("egress   %s not installed, skipped\n", tool)
			return nil
		}
	}
	fetch := filepath.Join(dir, "fetch")
	build := exec.Command("go", "build", "-o", fetch, "bulkhead.dev/bulkhead/test/bench/fetch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the fetch client: %v: %s", err, out)
	}
	h, err := newEgressHost(dir)
	if err != nil {
		return err
	}
	defer h.remove()

	cfg := filepath.Join(dir, "egress.toml")
	body := fmt.Sprintf("audit_log = %q\n[profiles.default]\negress = [\"%s:80\"]\n", filepath.Join(dir, "egress-audit.jsonl"), h.addr)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return err
	}
	b := filepath.Join(dir, "egress-bundle")
	if err := bundle.Make(b, []string{"/bin/fetch", h.url()}); err != nil {
		return err
	}
	data, err := os.ReadFile(fetch)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b, "rootfs", "bin", "fetch"), data, 0o755); err != nil {
		return err
	}
	root := filepath.Join(dir, "root-egress")
	var broker, direct []float64
	for i := 0; i < n; i++ {
		out, err := exec.Command(bulkhead, "--config", cfg, "--root", root, "--backend", "runc", "run", "--bundle", b, fmt.Sprintf("egress-%d", i)).Output()
		if err != nil {
			return fmt.Errorf("bulkhead run of the download: %v: %s", err, stderrOf(err))
		}
		mibs, err := throughput(out)
		if err != nil {
			return fmt.Errorf("through the broker: %w", err)
		}
		broker = append(broker, mibs)
		if out, err = exec.Command(fetch, h.url()).Output(); err != nil {
			return fmt.Errorf("direct download: %v: %s", err, stderrOf(err))
		}
		if mibs, err = throughput(out); err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		direct = append(direct, mibs)
	}
	fmt.Printf("%-8s %-16s %11s %11s %11s\n", "backend", "path", "min", "median", "max")
	mb := throughputStats("runc", "broker", broker)
	md := throughputStats("host", "direct", direct)
	fmt.Printf("egress   median throughput ratio broker/direct: %.2f\n", mb/md)
	return nil
}

// throughput reads the fetch client's "bytes seconds" line, which must
// be the whole blob.
func throughput(out []byte) (float64, error) {
	var bytes int64
	var secs float64
	if _, err := fmt.Sscanf(string(out), "%d %f", &bytes, &secs); err != nil {
		return 0, fmt.Errorf("fetch printed %q: %w", out, err)
	}
	if bytes != egressBlob || secs <= 0 {
		return 0, fmt.Errorf("fetched %d bytes in %f s, want %d", bytes, secs, egressBlob)
	}
	return float64(bytes) / (1 << 20) / secs, nil
}

func throughputStats(backend, label string, v []float64) float64 {
	sort.Float64s(v)
	med := v[len(v)/2]
	fmt.Printf("%-8s %-16s %7.0f MiB/s %7.0f MiB/s %7.0f MiB/s\n", backend, label, v[0], med, v[len(v)-1])
	return med
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
