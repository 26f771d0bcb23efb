package main

import (
	"fmt"
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
// second, bulkhead over runc) of the median rounds.
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
	var took [2][]time.Duration
	for r := 0; r < rounds; r++ {
		for i, side := range sides {
			d, err := side.fleet(fmt.Sprintf("fleet-%d", r))
			if err != nil {
				return err
			}
			took[i] = append(took[i], d)
		}
	}
	fmt.Printf("\n%d containers created, started and deleted at once, %d rounds each, alternating\n", fleet, rounds)
	fmt.Printf("%-8s %-16s %9s %9s %9s\n", "backend", "runtime", "min", "median", "max")
	mb, mp := stats("runc", "bulkhead", took[0]), stats("runc", "runc", took[1])
	fmt.Printf("%-8s throughput ratio bulkhead/runc (containers per second): %.2f (%.1f against %.1f per second)\n",
		"runc", float64(mp)/float64(mb), fleet/mb.Seconds(), fleet/mp.Seconds())
	return nil
}

// fleet runs the whole lifecycle of 32 containers at once and returns the
// time until the last was deleted.
func (l lifecycle) fleet(prefix string) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, fleet)
	start := time.Now()
	for i := 0; i < fleet; i++ {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			if _, err := l.run(id); err != nil {
				errs <- err
			}
		}(fmt.Sprintf("%s-%d", prefix, i))
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	return d, <-errs
}
