// Package state owns what bulkhead remembers of the containers it
// created, below the caller's --root: the registry of records (which
// backend owns an id, what the policy decided, the init's pid), each
// container's state directory and how it is removed (everything mounted
// under it unmounted first), the backends' own roots, and the pods whose
// namespaces a container may join.
//
// Every change to a record happens under one flock. It imports nothing of
// runtime.
package state
