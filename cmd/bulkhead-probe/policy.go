package main

import "fmt"

// policy is the limits of the profile the sandbox runs under, as the host
// hands them (-cpus, -memory-limit, -pids-limit, -tmp-size). A job profile
// sets its own (tests: 2 CPUs, 1536m, 256 pids): judged against the
// default profile's numbers, a correct job profile would read as a broken
// boundary, and a limit above the default's would never be reached. The
// flags' defaults are the default profile's, so a bare run expects what
// it always did.
type policy struct {
	cpus        float64 // quota ceiling in CPUs; 0: the profile sets none
	memoryLimit int64   // bytes; 0: none
	pidsLimit   int64   // 0: none
	tmpSize     int64   // bytes; 0: none
}

// The default profile's limits (runtime/default.toml).
const (
	defaultCPUs        = 1.0
	defaultMemoryLimit = 256 << 20
	defaultPidsLimit   = 64
	defaultTmpSize     = 16 << 20
)

var defaultPolicy = policy{cpus: defaultCPUs, memoryLimit: defaultMemoryLimit, pidsLimit: defaultPidsLimit, tmpSize: defaultTmpSize}

// memMaxCeiling bounds the memory attempt: a profile whose limit leaves no
// room for the attempt's margin below it cannot be shown to hold by a
// probe that must not take the host's memory itself, and fails.
const memMaxCeiling = 4 << 30

// memoryCeiling is how far the memory attempt goes: half again past the
// limit, since touching less than the limit proves nothing (a missing
// limit would pass on silence), and a killed child must have been stopped
// by the limit rather than by the end of its own loop. Never below
// memCeiling (what the default profile's 256m has always been probed
// with), never above memMaxCeiling; whole steps.
func memoryCeiling(limit int64) int64 {
	c := limit + limit/2
	c = (c + memStep - 1) / memStep * memStep
	return min(max(c, memCeiling), memMaxCeiling)
}

// maxChildrenCap bounds the fork attempt the same way memMaxCeiling bounds
// the memory one.
const maxChildrenCap = 2048

// childrenCeiling is how many sleepers the pids attempt forks at most:
// past the limit (each sleeper is at least one pid), never below
// maxChildren, never above maxChildrenCap.
func childrenCeiling(limit int64) int {
	return int(min(max(limit+limit/2, maxChildren), maxChildrenCap))
}

// tmpFillCap is how much the tmp-size attempt writes at most: well past
// the size, so a /tmp larger than the policy's is caught, never below
// tmpWriteCap.
func tmpFillCap(size int64) int64 {
	return max(3*size, tmpWriteCap)
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
