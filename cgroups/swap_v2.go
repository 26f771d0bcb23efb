//go:build !bulkhead_misread_swap

package cgroups

// memorySwap2 is memory plus swap from v2's memory.max and memory.swap.max:
// v2 counts swap alone, the OCI field and v1 count memory plus swap.
func memorySwap2(memoryMax, swapMax int64) int64 {
	if memoryMax == Unlimited || swapMax == Unlimited {
		return Unlimited
	}
	return memoryMax + swapMax
}
