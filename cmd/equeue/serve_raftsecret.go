package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/equeue-go/equeue/cluster"
)

// maxSecretFileBytes bounds what serve reads of --cluster-secret-file.
const maxSecretFileBytes = 4096

// raftSecret returns the secret that authenticates the cluster's Raft
// connections (cluster.NewSecureStream), read from --cluster-secret-file,
// or nil without one. A node that guards its other ports (guarded: it
// has tokens or TLS) needs one, unless --cluster-insecure-raft says its
// operator keeps the Raft port on a network only the cluster's nodes
// reach: a peer that reaches an open Raft port with no token deposes the
// leader and writes the log.
//
// It returns the file's permission bits too (warnSecretFile). A file it
// cannot read or use is a usage error, and so is --cluster-salt without
// a secret file, empty, or longer than the node keeps in its directory
// (maxSaltFileBytes); one ending with a newline is refused unless the
// node keeps it so (keptSalt).
func (c *clusterFlags) raftSecret(guarded bool) ([]byte, fs.FileMode, error) {
	switch {
	case c.saltSet && c.secretFile == "":
		return nil, 0, usageErrorf("--cluster-salt needs --cluster-secret-file: it salts the key the secret is proved with")
	case c.saltSet && c.salt == "":
		return nil, 0, usageErrorf("--cluster-salt is empty: give the cluster's salt, or leave the flag out")
	case c.saltSet && len(c.salt) > maxSaltFileBytes:
		return nil, 0, usageErrorf("--cluster-salt has %d bytes: a node keeps at most %d of it in its directory; give a shorter one (the cluster's name, or a few random bytes)", len(c.salt), maxSaltFileBytes)
	case c.secretFile != "" && c.insecureRaft:
		return nil, 0, usageErrorf("--cluster-insecure-raft serves the Raft transport without authentication, --cluster-secret-file authenticates it: give one of them")
	case c.secretFile == "" && guarded && !c.insecureRaft:
		return nil, 0, usageErrorf("--token and --tls-cert do not guard the Raft transport (--cluster-raft): give every node of the cluster the same --cluster-secret-file, or --cluster-insecure-raft to serve it without authentication on a network only the cluster's nodes reach")
	case c.secretFile == "":
		return nil, 0, nil
	}
	secret, perm, err := readSecretFile(c.secretFile)
	var ce *cliError
	if err != nil && !errors.As(err, &ce) {
		// A file it cannot read is a usage error, as a --token-file's.
		return nil, 0, usageErrorf("%v", err)
	}
	return secret, perm, err
}

// readSecretFile reads --cluster-secret-file: the secret is its content,
// one trailing newline dropped. It waits for a named pipe's writer as
// --token-file does, and returns the file's permission bits too.
func readSecretFile(path string) ([]byte, fs.FileMode, error) {
	deadline := time.Now().Add(tokenFileWait)
	f, err := openTokenFile(path, deadline)
	if errors.Is(err, errTokenFileSilent) {
		return nil, 0, fmt.Errorf("--cluster-secret-file %s: nothing to read within %v: a named pipe that no program writes to?", path, tokenFileWait)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("--cluster-secret-file %s: %w", path, pathErr(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("--cluster-secret-file %s: %w", path, pathErr(err))
	}
	_ = f.SetReadDeadline(deadline) // a pipe's; a regular file has none
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("--cluster-secret-file %s: %w", path, pathErr(err))
	}
	if len(data) > maxSecretFileBytes {
		return nil, 0, usageErrorf("--cluster-secret-file %s: larger than %d bytes: not a secret file", path, maxSecretFileBytes)
	}
	s := strings.TrimSuffix(string(data), "\n")
	s = strings.TrimSuffix(s, "\r")
	if len(s) < cluster.MinRaftSecretLen {
		return nil, 0, usageErrorf("--cluster-secret-file %s: the secret must be at least %d bytes, it has %d (make one with: head -c 32 /dev/urandom | base64 > FILE)", path, cluster.MinRaftSecretLen, len(s))
	}
	if err := cluster.CheckRaftSecret([]byte(s)); err != nil {
		return nil, 0, usageErrorf("--cluster-secret-file %s: %v (make one with: head -c 32 /dev/urandom | base64 > FILE)", path, err)
	}
	return []byte(s), st.Mode().Perm(), nil
}

// warnSecretFile warns, as logTokenFiles does of a token file, when group
// or others may read or write the secret file at path (perm its
// permission bits), which serve still takes: whoever reads it can join
// the cluster's Raft transport. It never logs the secret.
func warnSecretFile(log *slog.Logger, path string, perm fs.FileMode) {
	if perm&0o066 != 0 && runtime.GOOS != "windows" {
		log.Warn("cluster secret file may be read or written by group or others: make it readable by serve's user only (chmod 600)",
			"file", path, "mode", fmt.Sprintf("%#o", perm))
	}
}
