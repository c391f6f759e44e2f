package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// A global flag that the command given, or the mode it runs in, does not
// use is a usage error naming it, and the flag meant when one is
// obvious: taken and then ignored, it would leave the user believing it
// applies ("serve --tls-ca" where --client-ca was meant serves without
// mutual TLS).

// clientFlags are the global flags of a connection to a broker over the
// network (--server).
var clientFlags = []string{"tls-ca", "tls-cert", "tls-key", "insecure-skip-verify", "token", "connect-timeout"}

// checkUnusedFlags returns a usage error for the first flag given on the
// command line, at another value than its default, that cmd does not use
// with the global flags as they are (a.dir and a.server set).
func (a *app) checkUnusedFlags(cmd *cobra.Command) error {
	flags := cmd.Flags()
	// A flag given at its default value (a wrapper script's
	// --insecure-skip-verify=false) changes nothing and is let through.
	given := func(name string) bool {
		f := flags.Lookup(name)
		return f != nil && f.Changed && f.Value.String() != f.DefValue
	}
	switch topCommand(cmd) {
	case "serve":
		// --tls-cert and --tls-key are the server's certificate; --token
		// is serve's own flag.
		if given("tls-ca") {
			return usageErrorf("--tls-ca is a client's flag, unused by serve: did you mean --client-ca (the CA that client certificates must be signed by)?")
		}
		for _, name := range []string{"insecure-skip-verify", "connect-timeout"} {
			if given(name) {
				return usageErrorf("--%s is a client's flag, unused by serve", name)
			}
		}
	case "cluster":
		// It talks HTTP to a node's --cluster-admin, with --token.
		if given("server") {
			return usageErrorf("--server is unused by cluster, which talks to a node's administration address: did you mean --admin (the node's --cluster-admin)?")
		}
		for _, name := range []string{"dir", "tls-ca", "tls-cert", "tls-key", "insecure-skip-verify", "connect-timeout"} {
			if given(name) {
				return usageErrorf("--%s is unused by cluster, which talks plain HTTP to a node's --cluster-admin (--admin), with --token", name)
			}
		}
	case "", "help", "completion":
	default:
		if a.server == "" {
			for _, name := range clientFlags {
				if given(name) {
					return usageErrorf("--%s is used only with --server (a broker over the network): with --dir, or no address, %s opens the engine in this process", name, cmd.CommandPath())
				}
			}
			return nil
		}
		if strings.Contains(a.server, ",") && given("connect-timeout") {
			return usageErrorf("--connect-timeout applies to one --server: a cluster's nodes (a comma-separated --server) are connected to as they are needed")
		}
	}
	return nil
}

// topCommand is the name of the command under the root that cmd is, or
// is under; "" for the root.
func topCommand(cmd *cobra.Command) string {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	if !cmd.HasParent() {
		return ""
	}
	return cmd.Name()
}
