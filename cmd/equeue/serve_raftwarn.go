package main

import (
	"log/slog"
	"net"
)

// warnRaft logs, when serve guards itself but not the cluster's Raft
// transport on addr (open: it has tokens or TLS, and
// --cluster-insecure-raft instead of --cluster-secret-file), that the
// transport is plain TCP without authentication, so a peer that reaches
// it, with no token, can depose the leader and write the cluster's log.
// Tokens and TLS guard the gRPC server and the add-ons only.
func warnRaft(log *slog.Logger, addr net.Addr, open bool) {
	if !open {
		return
	}
	log.Warn("the Raft transport (--cluster-raft) has no authentication and no encryption (--cluster-insecure-raft): --token and --tls-cert do not guard it, and whoever reaches it can depose the leader and write the cluster's log; keep it on a network only the cluster's nodes reach, or give every node --cluster-secret-file", "addr", addr.String())
}
