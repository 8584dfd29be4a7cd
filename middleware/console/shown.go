package console

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"unicode"
)

// hidden reports whether r is a character a reader cannot see, or that
// changes how what is around it reads: a control character, a format
// character (bidi overrides and isolates, zero-width spaces and joiners,
// the byte order mark) or a line or paragraph separator. Shown raw,
// "cust-\u202e1174" reads as cust-4711.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// shownText writes s for a place that holds only text (the page's
// title): each hidden character as \uXXXX.
func shownText(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "\\u%04X", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// shown writes s as page text, escaped, with each hidden character made
// visible: \uXXXX in a span the style sheet marks, so that it cannot
// be taken for those characters typed.
func shown(s string) template.HTML {
	var b strings.Builder
	for {
		i := strings.IndexFunc(s, hidden)
		if i < 0 {
			b.WriteString(html.EscapeString(s))
			return template.HTML(b.String()) // every part escaped above
		}
		r := []rune(s[i:])[0]
		fmt.Fprintf(&b, `%s<span class="esc">\u%04X</span>`, html.EscapeString(s[:i]), r)
		s = s[i+len(string(r)):]
	}
}
