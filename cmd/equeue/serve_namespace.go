package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// parseTokenNamespaces reads the @NAMESPACE of serve's
// TOKEN=RIGHTS@NAMESPACE specs (--token flags and --token-file lines):
// token -> namespace, for scoped tokens only.
func parseTokenNamespaces(specs []tokenSpec) (map[string]string, error) {
	var out map[string]string
	for _, spec := range specs {
		tok, rest, _ := strings.Cut(spec.text, "=")
		_, ns, scoped := strings.Cut(rest, "@")
		if !scoped {
			continue
		}
		if !validNamespace(ns) {
			return nil, fmt.Errorf("%s=...@%s: a namespace is 1-127 characters of [A-Za-z0-9._-]", spec.label(tok), spec.shown(ns))
		}
		if out == nil {
			out = map[string]string{}
		}
		out[tok] = ns
	}
	return out, nil
}

// validNamespace reports whether ns can name a namespace
// (equeue.Engine.Namespace): 1-127 characters of [A-Za-z0-9._-].
func validNamespace(ns string) bool {
	return equeue.ValidateName(ns) == nil && !strings.Contains(ns, equeue.NamespaceSeparator)
}

// addonTokens returns the tokens add-ons (the console) admit: those of the
// whole engine, since add-ons serve it all. With scoped tokens only, an
// add-on would be open to anyone, so that is refused.
func addonTokens(tokens map[string]remote.Rights, scoped map[string]string, addons bool) (map[string]remote.Rights, error) {
	if len(scoped) == 0 {
		return tokens, nil
	}
	out := map[string]remote.Rights{}
	for tok, r := range tokens {
		if _, ok := scoped[tok]; !ok {
			out[tok] = r
		}
	}
	if len(out) == 0 && addons {
		return nil, fmt.Errorf("every token (--token, --token-file) is scoped to a namespace, but add-ons such as --console serve the whole engine: give them a token without @NAMESPACE")
	}
	return out, nil
}

// namespaceTokens groups the tokens scoped to a namespace by namespace.
func namespaceTokens(tokens map[string]remote.Rights, scoped map[string]string) map[string]map[string]remote.Rights {
	out := map[string]map[string]remote.Rights{}
	for tok, ns := range scoped {
		if out[ns] == nil {
			out[ns] = map[string]remote.Rights{}
		}
		out[ns][tok] = tokens[tok]
	}
	return out
}

// namespaceAddon is implemented by add-ons that may serve one namespace
// only (--kafka-namespace), to the tokens scoped to it.
type namespaceAddon interface {
	servedNamespace() string
}

// needWholeEngineToken reports whether an add-on switched on needs a token
// of the whole engine: every one does, except one serving a namespace that
// has tokens of its own.
func needWholeEngineToken(on []serveAddon, scoped map[string]string) bool {
	for _, ad := range on {
		if na, ok := ad.(namespaceAddon); ok && na.servedNamespace() != "" && slices.Contains(slices.Collect(maps.Values(scoped)), na.servedNamespace()) {
			continue
		}
		return true
	}
	return false
}
