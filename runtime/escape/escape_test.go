package escape

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestHidden(t *testing.T) {
	for _, r := range []rune{0x00, 0x1b, 0x7f, 0x9b, 0x00ad, 0x061c, 0x200b, 0x200c, 0x200d, 0x200e, 0x2028, 0x2029,
		0x202e, 0x2060, 0x2066, 0x3164, 0xfe0f, 0x00a0, 0x3000, 0x2800, 0x1d159, 0xfeff, 0xfffe, 0xe000, 0xe0041, 0xe0100, 0x10ffff, 0x0378} {
		if !Hidden(r) {
			t.Errorf("Hidden(%U) = false", r)
		}
	}
	for _, r := range []rune{'a', ' ', '~', 0x00e9, 0x0301, 0x4e2d, 0x05d0, 0x1f600, 0x2014, 0x2801} {
		if Hidden(r) {
			t.Errorf("Hidden(%U) = true", r)
		}
	}
	for _, c := range []struct {
		prev, r, next rune
		shown         bool
	}{
		{0x2714, 0xfe0f, ' ', true}, {'1', 0xfe0f, 0x20e3, true}, {0x1f469, 0x200d, 0x1f4bb, true},
		{0xfe0f, 0x200d, 0x1f525, true}, {0x1f3fd, 0x200d, 0x1f4bb, true},
		{'a', 0xfe0f, ' ', false}, {0xfe0f, 0xfe0f, ' ', false}, {'s', 0x200d, 'w', false},
		{'1', 0x200d, '2', false}, {'1', 0xfe0f, '2', false}, {'^', 0x200d, 0x263a, false},
		{0x1f469, 0x200d, 'x', false}, {0x2714, 0x200b, ' ', false},
		// Symbols that are no emoji join and style nothing: °‍° reads °°.
		{0xb0, 0x200d, 0xb0, false}, {0x25a0, 0xfe0f, ' ', false}, {0x1f469, 0x200d, 0xb0, false},
		{0x2194, 0xfe0f, ' ', true}, {0xa9, 0xfe0f, ' ', true},
		// A symbol that shows as text joins nothing, and a selector that
		// changes nothing is hidden: ©‍© reads ©©, ™︎ reads ™, 👍️ 👍.
		{0xa9, 0x200d, 0xa9, false}, {0x2764, 0x200d, 0x1f525, false}, {0x2122, 0xfe0e, ' ', false},
		{0x1f44d, 0xfe0f, ' ', false}, {0x231a, 0xfe0e, ' ', true},
	} {
		if got := shownRune(c.prev, c.r, c.next); got != c.shown {
			t.Errorf("shownRune(%U, %U, %U) = %v", c.prev, c.r, c.next, got)
		}
	}
	// The ends of the text and a byte that is not UTF-8 are nothing a
	// joiner or a selector could style or join.
	for in, want := range map[string]string{
		"\U0001f469\u200d":     "\U0001f469\\u200d",
		"\U0001f469\u200d\xff": "\U0001f469\\u200d\\xff",
		"\xff\ufe0f":           `\xff\ufe0f`,
		// A selector hidden where it stands supports no joiner.
		"a\ufe0f\u200d\U0001f525": `a\ufe0f\u200d` + "\U0001f525",
		"\ufe0f":                  `\ufe0f`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		if Plain([]byte(in)) {
			t.Errorf("Plain(%q) holds", in)
		}
	}
	for _, emoji := range []string{"\u2764\ufe0f\u200d\U0001f525", "\U0001f469\U0001f3fd\u200d\U0001f4bb", "1\ufe0f\u20e3", "\u2714\ufe0f", "\u231a\ufe0e"} {
		if !Plain([]byte(emoji)) {
			t.Errorf("Plain(%q) does not hold", emoji)
		}
	}
	if got := Text("tag\U000e0041x"); got != `tag\U000e0041x` {
		t.Errorf("escapeText of a tag character: %q", got)
	}
}

func TestLen(t *testing.T) {
	for _, s := range []string{"", "plain/path.go", "a\\b", "\xff\x00\x1b", "bidi\u202e", "é中\u2066x", "\xc3", "tag\U000e0041", "zw\u200b", "ok\u2714\ufe0f", "run\u2714\ufe0f\ufe0f"} {
		if got, want := Len(s), len(Text(s)); got != want {
			t.Errorf("Len(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestTerminal: a message keeps its layout (line breaks, tabs, the
// backslashes of quoted values) and shows every other hidden rune escaped.
func TestTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain message":        "plain message",
		"one\n\ttwo \"a\\nb\"": "one\n\ttwo \"a\\nb\"",
		"x\x1b[2K\rOK\x1b[8m":  `x\x1b[2K\x0dOK\x1b[8m`,
		"bidi\u202eevil":       `bidi\u202eevil`,
		"not utf-8 \xff":       `not utf-8 \xff`,
		"c1 \u009b31m":         `c1 \x9b31m`,
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestJSON: a JSON document keeps exactly the text a JSON reader decodes
// and holds no rune that does not show.
func TestJSON(t *testing.T) {
	in := map[string]string{"destination": "exa\u202emple.com\u200b:443 \x7f \u009b31m \U000e0041 \U0001f469\u200d\U0001f4bb caf\u00e9 \"q\\\""}
	doc, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := JSON(doc)
	if !eachRune(string(out), func(_ string, _ rune, shown bool) bool { return shown }) {
		t.Errorf("JSON left a hidden rune: %q", out)
	}
	for _, want := range []string{`\u202e`, `\u200b`, `\u007f`, `\u009b`, `\udb40\udc41`, "\U0001f469\u200d\U0001f4bb", "caf\u00e9"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("JSON(%s) = %s, lacks %q", doc, out, want)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["destination"] != in["destination"] {
		t.Errorf("JSON(%s) = %s, decodes to %q (%v), want the text itself", doc, out, back["destination"], err)
	}
	// An indented document keeps its layout, and still parses.
	indented, err := json.MarshalIndent(in, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	indented = append(indented, '\n')
	if err := json.Unmarshal(JSON(indented), &back); err != nil || back["destination"] != in["destination"] ||
		!strings.HasPrefix(string(JSON(indented)), "{\n\t\"destination\"") {
		t.Errorf("JSON of an indented document: %q (%v)", JSON(indented), err)
	}
	if plain := []byte(`{"a":"b\\u0000 \u00e9"}`); string(JSON(plain)) != string(plain) {
		t.Errorf("JSON changed a document that shows: %s", JSON(plain))
	}
}
