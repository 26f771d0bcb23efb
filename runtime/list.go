package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/escape"
	"bulkhead.dev/bulkhead/runtime/state"
)

// ContainerState is one entry of `list --format json`, runc's fields.
type ContainerState struct {
	Version        string            `json:"ociVersion"`
	ID             string            `json:"id"`
	InitProcessPid int               `json:"pid"`
	Status         string            `json:"status"`
	Bundle         string            `json:"bundle"`
	Rootfs         string            `json:"rootfs"`
	Created        time.Time         `json:"created"`
	Annotations    map[string]string `json:"annotations,omitempty"`
	Owner          string            `json:"owner"`
}

// List merges the containers of every configured backend under this root.
// A backend that is not installed, or whose list fails, contributes none.
func List(g *Globals, v Values, out io.Writer) error {
	cfg, err := g.LoadConfig()
	if err != nil {
		return err
	}
	if err := state.JudgeRoot(g.Root); err != nil {
		return err
	}
	all := []ContainerState{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Backends)) {
		b, err := cfg.ResolveBackend(name)
		if err != nil {
			continue
		}
		if _, err := os.Stat(state.BackendRoot(g.Root, name)); err != nil {
			continue
		}
		data, err := backend.Output(g.backendArgv(b, "list", "--format", "json"))
		if err != nil {
			return fmt.Errorf("list of backend %s: %w", name, err)
		}
		var states []ContainerState
		if err := json.Unmarshal(data, &states); err != nil && len(data) > 0 {
			return fmt.Errorf("list of backend %s: %w", name, err)
		}
		all = append(all, states...)
	}
	// Backends were given bulkhead's own bundle; engines know the caller's.
	// runsc's list gives no creation time: the record's, taken as the
	// create began, stands in rather than the zero time. The registry is
	// only read: list creates nothing.
	reg := state.View(g.Root)
	for i := range all {
		if state.CheckID(all[i].ID) != nil {
			continue
		}
		if rec, err := reg.Get(all[i].ID); err == nil {
			all[i].Bundle = rec.Bundle
			if all[i].Created.IsZero() {
				all[i].Created = rec.Created
			}
		}
	}
	switch {
	case v.Bool("quiet"):
		for _, s := range all {
			fmt.Fprintln(out, s.ID)
		}
	case v.String("format") == "json":
		return writeShownJSON(out, all, "")
	case v.String("format") == "" || v.String("format") == "table":
		w := tabwriter.NewWriter(out, 12, 1, 3, ' ', 0)
		fmt.Fprint(w, "ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER\n")
		for _, s := range all {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", escape.Text(s.ID), s.InitProcessPid, escape.Text(s.Status), escape.Text(s.Bundle),
				s.Created.Format(time.RFC3339Nano), escape.Text(s.Owner))
		}
		return w.Flush()
	default:
		return fmt.Errorf("list --format %q: want table or json", v.String("format"))
	}
	return nil
}

// Features prints the default backend's features document after checking
// that it parses: dockerd reads it at start. runsc 2022 has no features
// verb; for it bulkhead states only the spec versions it hands over, and
// says where the document came from.
func Features(g *Globals, out io.Writer) error {
	b, _, _, err := owner(g, "")
	if err != nil {
		return err
	}
	if b.IsGVisor() {
		return json.NewEncoder(out).Encode(map[string]any{
			"ociVersionMin": "1.0.0",
			"ociVersionMax": "1.0.2",
			"annotations":   map[string]string{"bulkhead.dev/features": "minimal: backend runsc has no features verb"},
		})
	}
	data, err := backend.Output(g.backendArgv(b, "features"))
	if err != nil {
		return fmt.Errorf("features of backend %s: %w", b.Name, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("features of backend %s: not JSON: %w", b.Name, err)
	}
	_, err = out.Write(data)
	return err
}

// Version prints the backends bulkhead would use, then its own version on
// the last line: dockerd takes the runtime version from a line that
// contains "version".
func Version(g *Globals, version string, out io.Writer) error {
	cfg, err := g.LoadConfig()
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Backends)) {
		b, err := cfg.ResolveBackend(name)
		if err != nil {
			fmt.Fprintf(out, "backend %s: not found (%s)\n", name, cfg.Backends[name].Path)
			continue
		}
		fmt.Fprintf(out, "backend %s: %s (%s)\n", name, b.Path, b.Version())
	}
	fmt.Fprintf(out, "bulkhead version %s\n", version)
	return nil
}
