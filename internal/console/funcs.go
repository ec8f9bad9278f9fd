package console

import (
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// funcs are the templates' helpers. Each returns plain text (escaped by
// html/template where it lands) or a URL built from escaped parts; none
// returns markup.
var funcs = template.FuncMap{
	"when":       when,
	"age":        age,
	"dur":        dur,
	"stateClass": func(s outbox.State) string { return "state-" + strings.ToLower(string(s)) },
	"actionHref": func(id string) string { return Prefix + "/actions/" + url.PathEscape(id) },
	"verbHref":   func(id, verb string) string { return Prefix + "/actions/" + url.PathEscape(id) + "/" + verb },
	"laneHref": func(ws, lane string) string {
		return Prefix + "/lanes?" + url.Values{"ws": {ws}, "lane": {lane}}.Encode()
	},
	"filterHref": func(k, v string) string { return Prefix + "/actions?" + url.Values{k: {v}}.Encode() },
	"wsFilterHref": func(ws, k, v string) string {
		return Prefix + "/actions?" + url.Values{"ws": {ws}, k: {v}}.Encode()
	},
	"eraseHref": func(ws, subject string) string {
		return Prefix + "/subjects/erase?" + url.Values{"ws": {ws}, "subject": {subject}}.Encode()
	},
	"dash": dash,
	"join": strings.Join,
	"ints": func(ns []int) string {
		parts := make([]string, len(ns))
		for i, n := range ns {
			parts[i] = fmt.Sprint(n)
		}
		return strings.Join(parts, ", ")
	},
	"after": func(a, b time.Time) bool { return a.After(b) },
}

// when writes a time in UTC to the second ("-" for none).
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// age writes a duration for people: 0s, 42s, 3m10s, 2h5m, 3d4h.
func age(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// dur writes a duration to the millisecond, or to 0.1 ms below one.
func dur(d time.Duration) string {
	if d < time.Millisecond {
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
