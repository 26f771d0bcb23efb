//go:build bulkhead_misread_swap

package cgroups

// memorySwap2, built with the tag bulkhead_misread_swap only, makes the
// mistake the cgroup v2 guest tests must catch: it takes memory.swap.max
// for memory plus swap, as v1's memory.memsw.limit_in_bytes is. A
// container with as much swap as memory then looks within its ceiling.
func memorySwap2(memoryMax, swapMax int64) int64 {
	return swapMax
}
