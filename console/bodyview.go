package console

import (
	"encoding/hex"
	"encoding/json"
	"strings"
)

// The message page shows a body as text, pretty JSON or a hex dump of its
// first limit bytes; pretty JSON is cut at limit bytes of its own, since it
// can be far longer than its body: deeply nested JSON pretty-prints with an
// indentation that grows with its depth, so that a body of 20 KB would
// print as 200 MB.

// renderBody renders body in view ("text", "json" or "hex"), the text and
// hex views of its first limit bytes, the JSON view in limit bytes, and
// reports whether it cut the view short.
func renderBody(body []byte, view string, limit int) (string, bool) {
	head, cut := body, false
	if len(head) > limit {
		head, cut = dropCutRune(head[:limit]), true
	}
	switch view {
	case "json":
		if !json.Valid(body) {
			// Unmarshal reports the syntax error before it decodes anything.
			err := json.Unmarshal(body, new(json.RawMessage))
			return "(not valid JSON: " + err.Error() + ")\n\n" + strings.ToValidUTF8(string(head), "\uFFFD"), cut
		}
		return indentJSON(body, limit)
	case "hex":
		// Bytes, not runes: the head is not shortened to a whole rune. Its
		// dump is about five times as long: bounded with it.
		return hex.Dump(body[:min(len(body), limit)]), cut
	}
	return strings.ToValidUTF8(string(head), "\uFFFD"), cut
}

// indentJSON pretty-prints b, valid JSON, as json.Indent(dst, b, "", "  ")
// does, but stops once the output holds limit bytes, and reports whether
// it stopped before the end of b.
func indentJSON(b []byte, limit int) (string, bool) {
	out := make([]byte, 0, min(len(b)*2, limit+1))
	depth := 0
	newline := func() {
		out = append(out, '\n')
		for range depth {
			out = append(out, ' ', ' ')
			if len(out) > limit {
				return
			}
		}
	}
	inString, escaped := false, false
	for i := 0; i < len(b) && len(out) <= limit; i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			inString = true
			out = append(out, c)
		case '{', '[':
			out = append(out, c)
			j := i + 1
			for j < len(b) && isJSONSpace(b[j]) {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				out = append(out, b[j]) // empty: "{}" or "[]"
				i = j
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline()
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, c)
		}
	}
	if len(out) > limit {
		return string(dropCutRune(out[:limit])), true
	}
	return string(out), false
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
