// Package console is Ferry's web console: server-rendered pages that show
// the outbox — the backlog per partition, the actions and their attempts,
// lanes, proposals, the partition map and the last hour's metrics — served
// by `ferry dev` and `ferry local` under /console on their API address, and
// by `ferry console` on loopback against any table.
//
// It reads through the engine's own bounded reads (internal/outbox: the
// status, the listings, an action and its neighbours, its delivery
// evidence) over an *operator.Meter, so every page says what it cost in
// read units, and it changes actions only through the CLI's admit and
// cancel (internal/operator), with the same rules and refusals.
//
// Safe by construction: every page is rendered by html/template (payloads,
// lane keys, subject ids and provider errors are hostile input); the
// assets are embedded in the binary (its own script and style, and a
// vendored uPlot with its licence) and the Content-Security-Policy allows
// nothing else — no inline script or style, no other origin; a browser
// signs in with a token and gets an HttpOnly, SameSite=Strict session
// cookie; every change carries the session's CSRF token and must come from
// the console's own origin. A viewer is a workspace principal (it sees
// only its workspaces' actions; another's is "not found", as in the API)
// or an operator (every workspace, and the instance-wide pages).
package console
