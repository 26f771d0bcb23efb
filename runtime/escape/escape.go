// Package escape shows text the sandbox chose (names, link targets, file
// contents, a destination it asked for) to a person without letting it
// hide or fake what they read.
package escape

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// Names, link targets and file contents come from the sandbox. Written raw
// to a reviewer's terminal, a CR or an escape sequence can hide a line or
// show one that is not there; bidi controls can reorder what is read.
// Text output therefore escapes them, and formats that cannot escape (a
// patch must apply to the very bytes) leave such entries out.

// Hidden tells whether a terminal or editor would not show r as
// itself. Judged by Unicode property, not by a list of known tricks: a
// rune shows when it is a letter, mark, number, punctuation or symbol, and
// not one Unicode says a renderer ignores (variation selectors, the Hangul
// fillers) or a noncharacter. Everything else is hidden: control
// characters (C0, DEL, C1), format characters (bidi controls, zero-width
// spaces and joiners, the byte order mark, the soft hyphen, tag
// characters), every space but ASCII's (a no-break space reads as one in
// "exit 1" and makes the shell run a command "exit 1"), the line and
// paragraph separators (JavaScript takes them for a line break a terminal
// does not show), private use and code points this Unicode version does
// not assign; and the symbols every font draws blank (the braille blank,
// the musical null notehead).
func Hidden(r rune) bool {
	if r < 0x80 {
		return r < 0x20 || r == 0x7f
	}
	switch r {
	case 0x2800, 0x1d159:
		return true
	}
	if unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Noncharacter_Code_Point) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// shownRune tells whether r, between prev and next (notUTF8 at either
// end, for a byte that is not UTF-8 and for a rune hidden where it
// stands), shows as itself: a rune that is not hidden, or one of the three
// that style or join the emoji around them where they change what shows: a
// variation selector 16 after an emoji that shows as text on its own
// (✔️, ©️) or inside a keycap (1️⃣: the digit, '#' or '*' followed by the
// enclosing keycap mark), a selector 15 after one that shows as an emoji
// on its own (⌚︎), a zero-width joiner after an emoji shown as one (a
// selector 16 or a skin tone before it counts) and before another (👩‍💻,
// ❤️‍🔥, 👩🏽‍💻). Anywhere else (between digits, a run of selectors, beside
// a letter, a symbol that is no emoji, °‍°, or one shown as text, ©‍©, ™︎)
// they are hidden: there they carry what nobody sees. A joiner between
// two emoji that make no emoji together (👩‍🔥) shows as both of them,
// and a selector 16 after a pictograph with no emoji form (★) as nothing:
// telling those apart would take Unicode's emoji lists.
func shownRune(prev, r, next rune) bool {
	if !Hidden(r) {
		return true
	}
	switch r {
	case 0xfe0f:
		return pictographic(prev) && !emojiPresentation(prev) || keycapBase(prev) && next == 0x20e3
	case 0xfe0e:
		return emojiPresentation(prev)
	case 0x200d:
		return (emojiPresentation(prev) || prev == 0xfe0f || emojiModifier(prev)) && pictographic(next)
	}
	return false
}

// pictographic tells whether r is an emoji (Unicode's Extended_Pictographic):
// the grapheme rules join r, a joiner and an emoji into one character
// (UAX #29, GB11) only when it is.
func pictographic(r rune) bool {
	if r < 0xa9 {
		return false
	}
	s := string([]rune{r, 0x200d, 0x1f600})
	c, _, _, _ := uniseg.FirstGraphemeClusterInString(s, -1)
	return len(c) == len(s)
}

// emojiPresentation tells whether r is an emoji that shows as one on its
// own (Emoji_Presentation: 👩, ⌚), not as text (©, ™, ↔): uniseg gives
// those two columns, and text-style ones one.
func emojiPresentation(r rune) bool {
	return pictographic(r) && uniseg.StringWidth(string(r)) == 2
}

func keycapBase(r rune) bool { return r >= '0' && r <= '9' || r == '#' || r == '*' }

// emojiModifier tells whether r is one of the five skin tones.
func emojiModifier(r rune) bool { return r >= 0x1f3fb && r <= 0x1f3ff }

// Text writes s so that every byte of it shows: a hidden rune as
// \xNN (below 0x100), \uNNNN or \UNNNNNNNN, a byte that is not UTF-8 as \xNN, and a
// backslash as \\, so the escaped form is never ambiguous.
func Text(s string) string {
	if !Needed(s) {
		return s
	}
	return escape(s, nil)
}

// Terminal escapes, for a message on a terminal, what Text
// does but the line breaks and tabs that lay the message out and the
// backslashes a quoted value carries: a message is read, not parsed.
func Terminal(s string) string {
	return escape(s, func(r rune) bool { return r == '\n' || r == '\t' || r == '\\' })
}

// Lines escapes what Text does but the line breaks: for a
// table whose rows are lines and whose fields the sandbox chose.
func Lines(s string) string {
	return escape(s, func(r rune) bool { return r == '\n' })
}

// escape escapes s but the runes keep says to keep as they are.
func escape(s string, keep func(rune) bool) string {
	var b strings.Builder
	escapeTo(&b, s, keep)
	return b.String()
}

// Len is len(Text(s)), without building it.
func Len(s string) int {
	var n byteCount
	escapeTo(&n, s, nil)
	return int(n)
}

// escapeTo writes s escaped to w, but the runes keep says to keep.
func escapeTo(w io.Writer, s string, keep func(rune) bool) {
	eachRune(s, func(raw string, r rune, shown bool) bool {
		switch {
		case r == notUTF8:
			fmt.Fprintf(w, `\x%02x`, raw[0])
		case keep != nil && keep(r):
			io.WriteString(w, raw)
		case r == '\\':
			io.WriteString(w, `\\`)
		case shown:
			io.WriteString(w, raw)
		case r < 0x100:
			fmt.Fprintf(w, `\x%02x`, r)
		case r > 0xffff:
			fmt.Fprintf(w, `\U%08x`, r)
		default:
			fmt.Fprintf(w, `\u%04x`, r)
		}
		return true
	})
}

// byteCount is a writer that only counts.
type byteCount int

func (n *byteCount) Write(p []byte) (int, error) { *n += byteCount(len(p)); return len(p), nil }

func (n *byteCount) WriteString(s string) (int, error) { *n += byteCount(len(s)); return len(s), nil }

// notUTF8 stands for a byte that does not begin a UTF-8 encoding.
const notUTF8 rune = -1

// eachRune hands visit each rune of s with its bytes and whether it shows
// between its neighbours (shownRune), a byte that is not UTF-8 as notUTF8,
// until visit returns false; it tells whether visit saw them all. Every
// judgement of text is made here, so escaping, measuring and checking
// cannot disagree.
func eachRune(s string, visit func(raw string, r rune, shown bool) bool) bool {
	prev := notUTF8
	r, n := decodeRune(s)
	for len(s) > 0 {
		next, k := decodeRune(s[n:])
		shown := r != notUTF8 && shownRune(prev, r, next)
		if !visit(s[:n], r, shown) {
			return false
		}
		s = s[n:]
		if !shown {
			r = notUTF8 // hidden where it stands, it styles and joins nothing
		}
		prev, r, n = r, next, k
	}
	return true
}

// decodeRune is utf8.DecodeRuneInString with notUTF8 for a byte that is
// not UTF-8 and for the end of s: neither is a rune an emoji could join.
func decodeRune(s string) (rune, int) {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n <= 1 {
		return notUTF8, n
	}
	return r, n
}

func Needed(s string) bool {
	return !eachRune(s, func(_ string, r rune, shown bool) bool { return shown && r != '\\' })
}

// Plain tells whether content shows on a terminal exactly as a patch
// applies it: UTF-8 with no hidden rune except tab and newline, and a CR
// right before a newline (a Windows line end: nothing follows it on its
// line to overwrite what came before).
func Plain(b []byte) bool {
	return eachRune(strings.ReplaceAll(string(b), "\r\n", "\n"), func(_ string, r rune, shown bool) bool { return shown || r == '\t' || r == '\n' })
}

// JSON is the JSON document doc holding only runes that show: every other
// becomes JSON's own \u escape, which a JSON reader decodes to the very
// text. A record (an audit line) keeps exactly what the sandbox chose,
// and the file shows no bidi control, zero-width space or terminal
// control to whoever reads it. doc must be encoding/json's output, whose
// strings are UTF-8 with every control character escaped, so a line
// break, tab or carriage return in it lays the document out and stays.
func JSON(doc []byte) []byte {
	s := string(doc)
	layout := func(r rune) bool { return r == '\n' || r == '\t' || r == '\r' }
	if eachRune(s, func(_ string, r rune, shown bool) bool { return shown || layout(r) }) {
		return doc
	}
	out := make([]byte, 0, len(doc)+64)
	eachRune(s, func(raw string, r rune, shown bool) bool {
		switch {
		case shown || layout(r):
			out = append(out, raw...)
		case r == notUTF8:
			out = append(out, `\ufffd`...)
		default:
			r1, r2 := utf16.EncodeRune(r)
			if r1 == unicode.ReplacementChar {
				r1, r2 = r, -1
			}
			out = fmt.Appendf(out, `\u%04x`, r1)
			if r2 != -1 {
				out = fmt.Appendf(out, `\u%04x`, r2)
			}
		}
		return true
	})
	return out
}
