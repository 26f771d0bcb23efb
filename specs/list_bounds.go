package specs

import (
	"reflect"
	"strconv"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// MaxListEntries bounds every list and map of the caller's spec, at any
// depth, but those listBounds names: root judges each entry outside any
// cgroup, at create, at check and in create's verification, and some
// against one another (each mount is placed through the view of those
// before it, each masked path is looked up in the running container).
// A caller's config.json must not choose how long create computes or
// how much it holds: 8,000 tmpfs mounts took 3 s here, 400,000 masked
// paths two minutes, 300,000 hooks a GiB. Engines hand a container tens
// of each.
const MaxListEntries = 1024

// listBounds are the lists bounded above MaxListEntries, as long as
// their cost grows with their length only, well above what a kernel or
// an engine takes (execve's 2 MiB of arguments and environment,
// NGROUPS_MAX).
var listBounds = map[string]int{
	"annotations":                 4 * MaxListEntries,
	"process.args":                32 * MaxListEntries,
	"process.env":                 32 * MaxListEntries,
	"process.user.additionalGids": 64 * MaxListEntries,
}

// overlongLists are the refusals of the lists of s longer than their
// bounds, judged before any rule runs.
func overlongLists(s *rspec.Spec) []Decision {
	var ds []Decision
	walkLists(reflect.ValueOf(s), "", func(path string, n int) {
		limit, ok := listBounds[path]
		if !ok {
			limit = MaxListEntries
		}
		if n > limit {
			ds = append(ds, Decision{Rule: "spec_fields", Field: path, Action: Refused, Before: strconv.Itoa(n) + " entries", Layer: LayerNone,
				Why: "at most " + strconv.Itoa(limit) + " entries: each is judged, as root outside any cgroup, so their number " +
					"must not choose how long create computes; give fewer"})
		}
	})
	return ds
}

// walkLists calls visit with the path (as encoding/json names its fields;
// an element's is its list's with "[]") and length of every slice and
// map in v.
func walkLists(v reflect.Value, path string, visit func(path string, n int)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkLists(v.Elem(), path, visit)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			name, embedded := jsonName(v.Type().Field(i))
			switch {
			case embedded:
				walkLists(v.Field(i), path, visit)
			case name != "":
				walkLists(v.Field(i), joinPath(path, name), visit)
			}
		}
	case reflect.Slice, reflect.Map:
		visit(path, v.Len())
		if !holdsLists(v.Type().Elem()) {
			return
		}
		if v.Kind() == reflect.Map {
			for it := v.MapRange(); it.Next(); {
				walkLists(it.Value(), path+"{}", visit)
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			walkLists(v.Index(i), path+"[]", visit)
		}
	}
}

// holdsLists tells whether a value of type t may hold a slice or a map.
func holdsLists(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer:
		return holdsLists(t.Elem())
	case reflect.Struct, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}
