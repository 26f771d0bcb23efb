package runtime

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"bulkhead.dev/bulkhead/specs"
)

// exactKeys refuses a key the configuration's types do not spell exactly
// so. The TOML decoder matches struct fields ignoring case, so
// "PIDS_LIMIT" set pids_limit and a second [Profiles.default] table
// replaced [profiles.default] whole, where an unknown key must be an
// error: a key written twice in two spellings has no one meaning.
func exactKeys(data []byte) error {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		return err
	}
	var bad []string
	check := func(where string, table map[string]any, t reflect.Type) {
		known := tomlTags(t)
		for _, k := range sortedKeys(table) {
			if !slices.Contains(known, k) {
				bad = append(bad, where+k)
			}
		}
	}
	check("", raw, reflect.TypeOf(fileConfig{}))
	for _, n := range sortedKeys(tableOf(raw["backends"])) {
		check("backends."+n+".", tableOf(tableOf(raw["backends"])[n]), reflect.TypeOf(BackendConfig{}))
	}
	for _, n := range sortedKeys(tableOf(raw["profiles"])) {
		check("profiles."+n+".", tableOf(tableOf(raw["profiles"])[n]), reflect.TypeOf(specs.Profile{}))
	}
	if len(bad) > 0 {
		return fmt.Errorf("unknown key %s: keys are spelt as docs/config.example.toml spells them, in lower case", strings.Join(bad, ", "))
	}
	return nil
}

func tableOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tomlTags are the TOML names of t's fields.
func tomlTags(t reflect.Type) []string {
	var tags []string
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag != "" && tag != "-" {
			tags = append(tags, tag)
		}
	}
	return tags
}
