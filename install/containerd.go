package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
)

// DefaultContainerdConfig is containerd's configuration file.
const DefaultContainerdConfig = "/etc/containerd/config.toml"

// ShimRuntimeType is the runtime_type containerd maps to
// containerd-shim-bulkhead-v2 on its PATH.
const ShimRuntimeType = "io.containerd.bulkhead.v2"

// The CRI plugin that holds runtime handlers, by config version: version 2
// (containerd 1.x; 2.x converts it) and version 3 (containerd 2.x).
var criPlugin = map[int64]string{
	2: "io.containerd.grpc.v1.cri",
	3: "io.containerd.cri.v1.runtime",
}

// The block install appends is framed by these comment lines, so that
// uninstall removes exactly it and the rest of the file keeps its bytes,
// comments and order.
const (
	blockBegin = "# bulkhead install containerd: begin (bulkhead uninstall containerd removes this block)"
	blockEnd   = "# bulkhead install containerd: end"
	createdBy  = "# Created by bulkhead install containerd."
)

// Containerd describes one registration of bulkhead with containerd's CRI
// plugin: runtime handlers for a RuntimeClass (handler NAME) and for
// crictl/ctr.
type Containerd struct {
	// Config is the config.toml to edit.
	Config string
	// Name is the runtime handler name.
	Name string
	// Version is the config version to write when the file does not exist
	// yet (2 for containerd 1.x, 3 for 2.x); an existing file's own
	// version is always used.
	Version int64
	// DryRun computes and reports the change without writing anything.
	DryRun bool
}

func (c *Containerd) check() error {
	if c.Config == "" {
		return errors.New("no config.toml path")
	}
	if c.Name == "" || strings.ContainsAny(c.Name, " \t\n\"'./[]") {
		return fmt.Errorf("runtime handler name %q: want a plain name such as bulkhead", c.Name)
	}
	return nil
}

// handlers are the runtime tables bulkhead owns, by handler name. The
// bulkhead handler has no options table: the CRI plugin sends runtime types
// other than io.containerd.runc.v2 a generic options message, and
// containerd 1.6 ignores runtime_path, so containerd-shim-bulkhead-v2 finds
// bulkhead itself.
//
// There is no gVisor handler: every container CRI runs is a pod's, and a
// gVisor pod's containers start only through a caller that hands each its
// own streams at start (gVisor's own shim). Through containerd's runc task
// service, bulkhead's shim included, they are refused at create, so such a
// handler would run a pod's sandbox and none of its containers.
func (c *Containerd) handlers() map[string]map[string]any {
	return map[string]map[string]any{
		c.Name: {"runtime_type": ShimRuntimeType},
	}
}

// formerGVisorHandler is the name of the gVisor handler an earlier install
// wrote, and its table, when the file still holds it as install wrote it:
// in install's framed block, containerd's runc shim with BinaryName
// bulkhead-runsc and nothing else. install and uninstall take it away; a
// NAME-runsc table the administrator wrote, or changed, stays.
func (c *Containerd) formerGVisorHandler(doc *containerdDoc) (string, any) {
	name := c.Name + "-runsc"
	text := string(doc.text)
	i := strings.Index(text, blockBegin)
	if i < 0 {
		return "", nil
	}
	j := strings.Index(text[i:], blockEnd)
	if j < 0 {
		return "", nil
	}
	var block map[string]any
	if toml.Unmarshal([]byte(text[i:i+j]), &block) != nil {
		return "", nil
	}
	h, _ := runtimesOf(block, doc.runtimesPath())[name].(map[string]any)
	opts, _ := h["options"].(map[string]any)
	binary, _ := opts["BinaryName"].(string)
	if len(h) != 2 || len(opts) != 1 || h["runtime_type"] != "io.containerd.runc.v2" || filepath.Base(binary) != "bulkhead-runsc" {
		return "", nil
	}
	if current := runtimesOf(doc.tree, doc.runtimesPath())[name]; !same(current, h) {
		return "", nil
	}
	return name, h
}

// containerdDoc is a parsed config.toml.
type containerdDoc struct {
	text    []byte
	tree    map[string]any
	version int64
	plugin  string
}

func (c *Containerd) parse(data []byte) (*containerdDoc, error) {
	d := &containerdDoc{text: data, tree: map[string]any{}}
	if err := toml.Unmarshal(data, &d.tree); err != nil {
		return nil, fmt.Errorf("%s: %w; fix the file first, bulkhead edits only valid TOML", c.Config, err)
	}
	switch v := d.tree["version"].(type) {
	case nil:
		if len(bytes.TrimSpace(data)) > 0 {
			return nil, fmt.Errorf("%s has no version: a version 1 config (containerd 1.x); convert it first: containerd config migrate > new.toml", c.Config)
		}
		// A new file gets the version given.
		d.version = c.Version
		d.tree["version"] = d.version
	case int64:
		d.version = v
	default:
		return nil, fmt.Errorf("%s: version = %v is not a number", c.Config, v)
	}
	p, ok := criPlugin[d.version]
	if !ok {
		return nil, fmt.Errorf("%s: config version %d: bulkhead knows versions 2 and 3", c.Config, d.version)
	}
	d.plugin = p
	return d, nil
}

// runtimesPath is the dotted path of the runtimes table.
func (d *containerdDoc) runtimesPath() []string {
	return []string{"plugins", d.plugin, "containerd", "runtimes"}
}

func (d *containerdDoc) key(name string) string {
	return fmt.Sprintf("plugins.%q.containerd.runtimes.%s", d.plugin, name)
}

// runtimes returns the runtimes table of tree, nil when absent.
func runtimesOf(tree map[string]any, path []string) map[string]any {
	cur := tree
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

// withRuntimes returns a deep copy of tree whose runtimes table has set
// applied: a nil value removes the entry.
func withRuntimes(tree map[string]any, path []string, set map[string]map[string]any) map[string]any {
	out := deepCopy(tree).(map[string]any)
	cur := out
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	for name, v := range set {
		if v == nil {
			delete(cur, name)
		} else {
			cur[name] = deepCopy(v)
		}
	}
	return out
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	default:
		return v
	}
}

// same compares TOML values as JSON sees them (int64 1 and a decoded 1).
func same(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func compactValue(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// stripBlock removes install's framed block (and the blank line before it)
// from text; found reports whether there was one.
func stripBlock(text []byte) (out []byte, found bool, err error) {
	s := string(text)
	i := strings.Index(s, blockBegin)
	if i < 0 {
		return text, false, nil
	}
	j := strings.Index(s[i:], blockEnd)
	if j < 0 {
		return nil, false, fmt.Errorf("install block begins but does not end (%q missing); edit the file by hand", blockEnd)
	}
	end := i + j + len(blockEnd)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	start := i
	if strings.HasSuffix(s[:start], "\n\n") {
		start--
	}
	return []byte(s[:start] + s[end:]), true, nil
}

// renderBlock renders the handler tables with go-toml, as full-path table
// headers, framed by install's comment lines. go-toml also writes a header
// for each parent table; those carry no keys and are dropped, because the
// administrator's part of the file may define them already and TOML
// forbids defining a table twice.
func renderBlock(path []string, handlers map[string]map[string]any) ([]byte, error) {
	set := map[string]map[string]any{}
	for k, v := range handlers {
		set[k] = v
	}
	data, err := toml.Marshal(withRuntimes(map[string]any{}, path, set))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var kept []string
	for i, l := range lines {
		if strings.HasPrefix(l, "[") && (i+1 == len(lines) || strings.HasPrefix(lines[i+1], "[")) {
			continue // a header without keys of its own
		}
		kept = append(kept, l)
	}
	return []byte(blockBegin + "\n" + strings.Join(kept, "\n") + "\n" + blockEnd + "\n"), nil
}

// Install adds bulkhead's runtime handlers to config.toml, keeping the rest
// of the file byte for byte (the handlers go in a framed block at its end).
// Running it again changes nothing.
func (c *Containerd) Install() (*Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	before, mode, err := readConfig(c.Config)
	if err != nil {
		return nil, err
	}
	doc, err := c.parse(before)
	if err != nil {
		return nil, err
	}
	res := &Result{Path: c.Config, Before: before, After: before}
	path := doc.runtimesPath()
	current := runtimesOf(doc.tree, path)
	want := c.handlers()
	set := map[string]map[string]any{}
	for name, entry := range want {
		set[name] = entry
		old, has := current[name]
		switch {
		case !has:
			res.Changes = append(res.Changes, Change{Action: "added", Key: doc.key(name), After: compactValue(entry)})
		case !same(old, entry):
			res.Changes = append(res.Changes, Change{Action: "changed", Key: doc.key(name), Before: compactValue(old), After: compactValue(entry)})
		}
	}
	if name, old := c.formerGVisorHandler(doc); name != "" {
		res.Changes = append(res.Changes, Change{Action: "removed", Key: doc.key(name), Before: compactValue(old)})
		set[name] = nil
	}
	sortChanges(res.Changes)
	if len(res.Changes) == 0 {
		return res, nil
	}
	wantTree := withRuntimes(doc.tree, path, set)
	stripped, _, err := stripBlock(before)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Config, err)
	}
	if len(bytes.TrimSpace(stripped)) == 0 {
		// A new file: say who made it, and its version.
		head, err := toml.Marshal(map[string]any{"version": doc.version})
		if err != nil {
			return nil, err
		}
		stripped = append([]byte(createdBy+"\n"), head...)
	}
	block, err := renderBlock(path, want)
	if err != nil {
		return nil, err
	}
	after := append(bytes.TrimRight(stripped, "\n"), '\n', '\n')
	after = append(after, block...)
	if err := c.verify(after, wantTree); err != nil {
		// The appended block does not fit the file (an inline runtimes
		// table, or our handlers defined outside the block): write the
		// whole file with go-toml instead. Comments are lost then; the
		// backup keeps them.
		if after, err = toml.Marshal(wantTree); err != nil {
			return nil, err
		}
		if err := c.verify(after, wantTree); err != nil {
			return nil, err
		}
	}
	res.After = after
	return res, c.writeBytes(res, after, mode)
}

// verify parses the text to be written and checks it is exactly the wanted
// configuration.
func (c *Containerd) verify(text []byte, want map[string]any) error {
	var got map[string]any
	if err := toml.Unmarshal(text, &got); err != nil {
		return fmt.Errorf("the edited %s would not be valid TOML (nothing written): %w", c.Config, err)
	}
	if !same(got, want) {
		return fmt.Errorf("the edited %s would not hold what was intended (nothing written)", c.Config)
	}
	return nil
}

// Uninstall removes bulkhead's handlers. The framed block install appended
// is cut out, which gives back the file as it was before; handlers found
// outside a block (a file rewritten by another tool) are removed by
// rewriting the file with go-toml. A file install created is removed.
func (c *Containerd) Uninstall() (*Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	before, mode, err := readConfig(c.Config)
	if err != nil {
		return nil, err
	}
	res := &Result{Path: c.Config, Before: before, After: before}
	if before == nil {
		return res, nil
	}
	doc, err := c.parse(before)
	if err != nil {
		return nil, err
	}
	path := doc.runtimesPath()
	current := runtimesOf(doc.tree, path)
	remove := map[string]map[string]any{}
	for name := range c.handlers() {
		if old, has := current[name]; has {
			res.Changes = append(res.Changes, Change{Action: "removed", Key: doc.key(name), Before: compactValue(old)})
			remove[name] = nil
		}
	}
	if name, old := c.formerGVisorHandler(doc); name != "" {
		res.Changes = append(res.Changes, Change{Action: "removed", Key: doc.key(name), Before: compactValue(old)})
		remove[name] = nil
	}
	sortChanges(res.Changes)
	if len(res.Changes) == 0 {
		return res, nil
	}
	wantTree := withRuntimes(doc.tree, path, remove)
	after, found, err := stripBlock(before)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Config, err)
	}
	if found && (c.verify(after, wantTree) == nil || c.verify(after, pruneEmpty(deepCopy(wantTree).(map[string]any), path)) == nil) {
		if strings.HasPrefix(string(after), createdBy+"\n") {
			var rest map[string]any
			if toml.Unmarshal(after, &rest) == nil && len(rest) == 1 {
				// install created the file; uninstall takes it away again.
				res.After, res.Removed = nil, true
				if c.DryRun {
					return res, nil
				}
				if err := os.Remove(c.Config); err != nil {
					return nil, err
				}
				res.Written = true
				return res, nil
			}
		}
	} else {
		if after, err = toml.Marshal(wantTree); err != nil {
			return nil, err
		}
		if err := c.verify(after, wantTree); err != nil {
			return nil, err
		}
	}
	res.After = after
	return res, c.writeBytes(res, after, mode)
}

// pruneEmpty drops the parent tables along path that are left empty: the
// block defined them implicitly, so cutting it out removes them too.
func pruneEmpty(tree map[string]any, path []string) map[string]any {
	if len(path) == 0 {
		return tree
	}
	child, ok := tree[path[0]].(map[string]any)
	if !ok {
		return tree
	}
	pruneEmpty(child, path[1:])
	if len(child) == 0 {
		delete(tree, path[0])
	}
	return tree
}

func sortChanges(cs []Change) {
	slices.SortStableFunc(cs, func(a, b Change) int { return strings.Compare(a.Key, b.Key) })
}

func (c *Containerd) writeBytes(res *Result, after []byte, mode fs.FileMode) error {
	return writeWithBackup(c.Config, c.DryRun, res, after, mode)
}
