package main

import (
	"log/slog"
	"net"
)

// warnRaft logs, when serve guards itself (guarded: it has tokens or
// TLS), that the cluster's Raft transport on addr does not: it is plain
// TCP without authentication, so a peer that reaches it, with no token,
// can depose the leader and write the cluster's log. Tokens and TLS guard
// the gRPC server and the add-ons only.
func warnRaft(log *slog.Logger, addr net.Addr, guarded bool) {
	if !guarded {
		return
	}
	log.Warn("the Raft transport (--cluster-raft) has no authentication and no encryption: --token and --tls-cert do not guard it, and whoever reaches it can depose the leader and write the cluster's log; keep it on a network only the cluster's nodes reach", "addr", addr.String())
}
