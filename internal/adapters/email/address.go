package email

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Addresses go out as 7-bit ASCII (docs/adapters.md, "email"): Amazon SES
// does not support SMTPUTF8 (RFC 6531), so an address's domain is sent in
// its IDNA form (punycode: exámple.com as xn--exmple-qta.com), its display
// name as RFC 2047 encoded words, and a local part (before the @) must be
// ASCII already: there is no encoding for it that a receiving server
// would undo, so one that is not is refused at enqueue. The mail sink
// writes what SES would be sent.

// errLocalPartNotASCII refuses an address whose local part is not ASCII.
var errLocalPartNotASCII = errors.New("the part before the @ must be ASCII: SES does not support SMTPUTF8 (RFC 6531), and no encoding of it survives delivery; a non-ASCII domain is fine (it is sent as punycode)")

// asciiAddress renders one address for a header or an SES request field in
// 7-bit ASCII: the display name encoded (RFC 2047), the domain in IDNA form.
// An address that is ASCII already goes as it was given.
func asciiAddress(s string) (string, error) {
	a, err := mail.ParseAddress(s)
	if err == nil && isASCII(s) {
		return s, nil
	}
	if err != nil {
		return "", err
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at < 0 {
		return "", fmt.Errorf("not an email address: %q", s)
	}
	local, domain := a.Address[:at], a.Address[at+1:]
	if !isASCII(local) {
		return "", errLocalPartNotASCII
	}
	if !isASCII(domain) {
		if domain, err = idna.Lookup.ToASCII(domain); err != nil {
			return "", fmt.Errorf("the domain is not a valid internationalized domain name: %s", strings.TrimPrefix(err.Error(), "idna: "))
		}
	}
	a.Address = local + "@" + domain
	if a.Name == "" {
		return a.Address, nil
	}
	return a.String(), nil
}

// asciiAddresses renders every address of a list (see asciiAddress).
func asciiAddresses(list []string) ([]string, error) {
	if list == nil {
		return nil, nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		a, err := asciiAddress(s)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// foldLine is the line length headers are folded to (RFC 5322 §2.1.1
// recommends 78; RFC 2047 §2 caps a line holding encoded words at 76).
const foldLine = 76

// encodedWordBytes is how many bytes of UTF-8 text one encoded word of a
// subject carries: "=?utf-8?b?" + base64 of 39 bytes (52) + "?=" is 64
// characters, so even the first line ("Subject: " and one word) is within
// foldLine.
const encodedWordBytes = 39

// subjectValue is a subject ready to fold: itself when it is printable
// ASCII that folds at its spaces into lines of at most foldLine (and holds
// nothing a reader would take for an encoded word), else the whole subject
// as RFC 2047 encoded words, each short enough for a line of its own.
func subjectValue(s string) string {
	if isASCII(s) && !strings.Contains(s, "=?") && printable(s) && longestWord(s) <= foldLine-len("Subject: ") {
		return s
	}
	var words []string
	for len(s) > 0 {
		n := 0
		for n < len(s) {
			_, size := utf8.DecodeRuneInString(s[n:])
			if n+size > encodedWordBytes {
				break
			}
			n += size
		}
		// Always encoded (mime's encoder leaves ASCII as it is, which
		// would split a long word with the spaces between words).
		words = append(words, "=?utf-8?b?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, " ")
}

// printable reports whether s holds only printable ASCII and spaces.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

func longestWord(s string) int {
	longest := 0
	for _, w := range strings.Split(s, " ") {
		longest = max(longest, len(w))
	}
	return longest
}

// foldHeader renders "name: value" folded at the value's spaces (RFC 5322
// §2.2.3: CRLF before a space, which unfolding removes again) so that no
// line is longer than foldLine unless one word alone is (an address
// cannot be broken; it stays within RFC 5322's 998).
func foldHeader(name, value string) string {
	var b strings.Builder
	b.WriteString(name + ":")
	line := len(name) + 1
	for i, w := range strings.Split(value, " ") {
		if i > 0 && line+1+len(w) > foldLine {
			b.WriteString("\r\n")
			line = 0
		}
		b.WriteString(" " + w)
		line += 1 + len(w)
	}
	b.WriteString("\r\n")
	return b.String()
}
