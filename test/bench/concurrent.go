package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
)

// fleet is how many containers a CI runner or an agent fleet starts at
// once in the concurrent bench.
const fleet = 32

// benchConcurrent times 32 containers created, started and deleted at
// once, by bulkhead and by plain runc given the spec bulkhead hands it,
// alternating rounds, and prints the throughput ratio (containers per
// second, bulkhead over runc) of the median rounds: first with no
// cgroupsPath (each runtime names the group), then as an engine sends
// them, each container naming its own group below /docker as dockerd's
// cgroupfs driver does, which bulkhead checks again under its cgroup lock.
func benchConcurrent(bulkhead, dir string, rounds int) error {
	plain, err := exec.LookPath("runc")
	if err != nil {
		fmt.Println("runc not installed, concurrent bench skipped")
		return nil
	}
	ours, theirs := filepath.Join(dir, "fleet"), filepath.Join(dir, "fleet-handed")
	if err := bundle.Make(ours, []string{"true"}); err != nil {
		return err
	}
	if err := handedBundle(bulkhead, filepath.Join(dir, "fleet-root"), "runc", ours, theirs); err != nil {
		return err
	}
	// One handed spec for all: without a cgroupsPath runc puts each
	// container in a group of its own id.
	s, err := bundle.Read(theirs)
	if err != nil {
		return err
	}
	s.Linux.CgroupsPath = ""
	if err := bundle.Write(theirs, s); err != nil {
		return err
	}
	sides := []lifecycle{
		{bin: bulkhead, log: filepath.Join(dir, "fleet-bulkhead.log"), bundle: ours, awaitInit: true},
		{bin: plain, log: filepath.Join(dir, "fleet-plain.log"), bundle: theirs, awaitInit: true},
	}
	sides[0].global = []string{"--root", filepath.Join(dir, "fleet-root"), "--log", sides[0].log, "--backend", "runc"}
	sides[1].global = []string{"--root", filepath.Join(dir, "fleet-plain"), "--log", sides[1].log}
	fmt.Printf("\n%d containers created, started and deleted at once, %d rounds each, alternating\n", fleet, rounds)
	fmt.Printf("%-8s %-16s %9s %9s %9s\n", "backend", "runtime", "min", "median", "max")
	if err := fleetRounds(sides, "", rounds); err != nil {
		return err
	}
	// The same fleet as an engine names its groups: a bundle each.
	for i, side := range sides {
		named := make([]string, fleet)
		for n := range named {
			named[n] = filepath.Join(dir, fmt.Sprintf("fleet-named-%d-%d", i, n))
			if err := namedGroupBundle(side.bundle, named[n], fmt.Sprintf("/docker/bh-bench-%d-%d-%d", os.Getpid(), i, n)); err != nil {
				return err
			}
		}
		sides[i].bundles = named
	}
	fmt.Printf("%d at once, each naming its group /docker/<id> as dockerd does\n", fleet)
	return fleetRounds(sides, "named-", rounds)
}

// fleetRounds runs rounds of the fleet on each side, alternating, and
// prints the medians and the throughput ratio.
func fleetRounds(sides []lifecycle, prefix string, rounds int) error {
	var took [2][]time.Duration
	for r := 0; r < rounds; r++ {
		for i, side := range sides {
			d, err := side.fleet(fmt.Sprintf("fleet-%s%d", prefix, r))
			if err != nil {
				return err
			}
			took[i] = append(took[i], d)
		}
	}
	mb, mp := stats("runc", "bulkhead", took[0]), stats("runc", "runc", took[1])
	fmt.Printf("%-8s throughput ratio bulkhead/runc (containers per second): %.2f (%.1f against %.1f per second)\n",
		"runc", float64(mp)/float64(mb), fleet/mb.Seconds(), fleet/mp.Seconds())
	return nil
}

// namedGroupBundle writes at dst the bundle src with its own copy of the
// rootfs (which must lie in the bundle) and linux.cgroupsPath group.
func namedGroupBundle(src, dst, group string) error {
	s, err := bundle.Read(src)
	if err != nil {
		return err
	}
	if err := bundle.Rootfs(filepath.Join(dst, "rootfs")); err != nil {
		return err
	}
	s.Root.Path = "rootfs"
	s.Linux.CgroupsPath = group
	return bundle.Write(dst, s)
}

// fleet runs the whole lifecycle of 32 containers at once and returns the
// time until the last was deleted. Container n uses bundles[n] where
// there are bundles of their own.
func (l lifecycle) fleet(prefix string) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, fleet)
	start := time.Now()
	for i := 0; i < fleet; i++ {
		wg.Add(1)
		one := l
		if len(l.bundles) == fleet {
			one.bundle = l.bundles[i]
		}
		go func(id string) {
			defer wg.Done()
			if _, err := one.run(id); err != nil {
				errs <- err
			}
		}(fmt.Sprintf("%s-%d", prefix, i))
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	return d, <-errs
}
