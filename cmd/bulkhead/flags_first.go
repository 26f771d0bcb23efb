package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// flagsFirst lets bulkhead's own verbs take their flags after the
// container id, as people type them (`bulkhead diff ID --format json`):
// urfave/cli, like Go's flag package, stops at the first argument, so those
// flags are moved in front of the arguments before parsing. runc's verbs
// keep runc's rule, flags end at the first argument, because engines
// depend on it (`kill ID -9`, `exec ID sh -c …`). Which flags take a value
// is read from the commands' own definitions.
func flagsFirst(app *cli.App, args []string) []string {
	i := skipFlags(app.Flags, args, 1)
	if i >= len(args) {
		return args
	}
	if _, runc := runtime.VerbFlags[args[i]]; runc {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil {
		return args
	}
	i++
	for i < len(args) {
		sub := cmd.Command(args[i])
		if sub == nil {
			break
		}
		cmd, i = sub, i+1
	}
	var flags, positional []string
	rest := args[i:]
	for k := 0; k < len(rest); k++ {
		tok := rest[k]
		switch {
		case tok == "--":
			positional = append(positional, rest[k:]...)
			k = len(rest)
		case len(tok) > 1 && tok[0] == '-':
			flags = append(flags, tok)
			if !strings.Contains(tok, "=") && takesValue(cmd.Flags, tok) && k+1 < len(rest) {
				k++
				flags = append(flags, rest[k])
			}
		default:
			positional = append(positional, tok)
		}
	}
	out := slices.Clone(args[:i])
	out = append(out, flags...)
	return append(out, positional...)
}

// skipFlags returns the index of the first argument after the flags that
// start at args[i].
func skipFlags(defs []cli.Flag, args []string, i int) int {
	for i < len(args) && len(args[i]) > 1 && args[i][0] == '-' {
		if !strings.Contains(args[i], "=") && takesValue(defs, args[i]) {
			i++
		}
		i++
	}
	return i
}

// takesValue tells whether the flag tok names is defined and not boolean.
func takesValue(defs []cli.Flag, tok string) bool {
	name := strings.TrimLeft(tok, "-")
	for _, f := range defs {
		if slices.Contains(f.Names(), name) {
			_, isBool := f.(*cli.BoolFlag)
			return !isBool
		}
	}
	return false
}
