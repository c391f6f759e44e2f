package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A node keeps the cluster's salt (--cluster-salt) in its directory, in
// saltFile, from its first start with one: restarted without the flag
// it proves the secret with the salt it keeps, as its peers expect;
// restarted with another it refuses to start, a usage error naming both
// salts' fingerprints, rather than prove another key and be refused by
// every peer with only a line of their logs. It writes the file, synced
// with its directory, before it opens or serves anything, so that a
// failure or a crash after leaves the salt it was started with. The salt
// is no secret (it is on the command line): the file holds it as given.
// To change a node's salt, stop it and remove the file.

// saltFile is the file of a node's directory that keeps its salt.
const saltFile = "cluster-salt"

// maxSaltFileBytes bounds what serve reads of saltFile, and so the
// --cluster-salt it takes (raftSecret).
const maxSaltFileBytes = 4096

// saltFingerprint is a short name of salt for messages: the first 8
// bytes of its SHA-256, in hexadecimal.
func saltFingerprint(salt []byte) string {
	sum := sha256.Sum256(salt)
	return hex.EncodeToString(sum[:8])
}

// keptSalt returns the salt the node on dir proves the secret with: the
// flag's (given says it was) or the one dir keeps. store says the flag's
// is to be kept (keepSaltFirst). It creates nothing.
func keptSalt(dir string, flag []byte, given bool) (salt []byte, store bool, err error) {
	path := filepath.Join(dir, saltFile)
	kept, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return flag, given, nil
	case err != nil:
		return nil, false, fmt.Errorf("read the cluster salt the node keeps: %w", err)
	case len(kept) == 0 || len(kept) > maxSaltFileBytes:
		return nil, false, fmt.Errorf("%s: not a cluster salt (%d bytes): remove it and start the node with the cluster's --cluster-salt", path, len(kept))
	case !given:
		return kept, false, nil
	case !bytes.Equal(kept, flag):
		return nil, false, usageErrorf("--cluster-salt (fingerprint %s) is not the salt this node keeps in %s (fingerprint %s): a node with another salt is refused by its peers; leave the flag out to use the kept one, or, to change the cluster's salt, stop the node and remove that file",
			saltFingerprint(flag), path, saltFingerprint(kept))
	}
	return kept, false, nil
}

// storeSalt keeps salt in dir for the node's next starts:
// written to a temporary file, synced, renamed into place and the
// directory synced (where the file system can sync one), so that a crash
// leaves the file whole or absent.
func storeSalt(dir string, salt []byte) error {
	path := filepath.Join(dir, saltFile)
	tmp, err := os.CreateTemp(dir, saltFile+".tmp*")
	if err != nil {
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	defer os.Remove(tmp.Name()) // nothing once renamed
	if _, err := tmp.Write(salt); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	defer d.Close()
	if err := syncSaltDir(d); err != nil && !dirSyncUnsupported(err) {
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	return nil
}

// dirSyncUnsupported reports whether err says that the platform or file
// system cannot sync a directory (EINVAL, ENOTSUP): there is nothing
// more to do there, as the cluster package and Go's own code hold.
func dirSyncUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, errors.ErrUnsupported)
}

// syncSaltDir syncs the directory storeSalt renamed the salt into. A
// variable so that tests can fail it.
var syncSaltDir = (*os.File).Sync
