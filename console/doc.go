// Package console is a web console for an equeue broker: an http.Handler
// that shows topics, queues, consumer groups, messages, retries, dead
// letters and delayed messages, and lets an operator add queues, close a
// queue to producers, reset a group's offsets and redrive dead letters.
//
// # Mounting
//
// New returns a handler for every path under Options.Prefix; mount it at
// that prefix in the application's mux, without stripping it:
//
//	h := console.New(engine, console.Options{Prefix: "/admin/"})
//	mux.Handle("/admin/", h)
//
// Every link, form and asset URL the console writes starts with the prefix,
// so it works behind the application's own routing and authentication.
//
// # Brokers
//
// The console needs only the administration seam (remote.Admin) and
// unfenced pulls for browsing, so it runs over an in-process
// *equeue.Engine and over a *remote.Client alike. Optional extras are found
// by type assertion: the store size (Stats), which *equeue.Engine reports,
// and the delayed messages (Delayed), which both report.
//
// # Security
//
// Every state change is a POST carrying a CSRF token bound to the caller's
// session; ReadOnly registers no write routes at all. With Options.Tokens
// set, callers log in with a token on the login form (or send
// "Authorization: Bearer <token>"): a token with remote.RightAdmin may act,
// one with remote.RightConsume may only look, and other tokens see nothing
// (their sign-in is refused).
// Unknown tokens are throttled per client address (an IPv6 /64) and in
// total; behind a reverse proxy, Options.TrustedProxies names the proxies
// whose X-Forwarded-For header gives the client's address.
// Without Tokens the console trusts whoever reaches it: put it behind the
// application's own authentication. On a loopback address it then answers
// only requests addressed to localhost or a loopback address (any port;
// any other Host gets 403), so that a web page of another site whose name
// was made to resolve to 127.0.0.1 (DNS rebinding) cannot read its pages
// or post its forms through an operator's browser; a proxy in front of it
// on loopback must send such a Host.
//
// # Assets
//
// Templates, the style sheet and a few lines of script are embedded; no
// build step and no external requests.
//
// The handler is safe for concurrent use and starts no goroutines.
package console
