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

// A node started with --cluster-secret-file keeps, in its directory, in
// saltFile, the cluster's salt (--cluster-salt) from its first start with
// one, or, from its first start without one, a record that it runs
// unsalted (noSaltRecord). It writes the file, synced with its directory,
// before it opens or serves anything, so that a failure or a crash after
// leaves the salt it was started with. Restarted without the flag it
// proves the secret with the salt it keeps, as its peers expect;
// restarted with another salt, or with one when it runs unsalted, it
// refuses to start, a usage error, rather than prove another key and be
// refused by every peer with only a line of their logs. The salt is no
// secret (it is on the command line): the file holds it as given, and a
// file written by hand may end with one newline (\n or \r\n), which is
// not part of the salt. A directory without the file (a node of an equeue before it, or never
// started with a secret) takes the flag's salt, or none, and keeps it.
// To change a node's salt, stop it and remove the file.

// saltFile is the file of a node's directory that keeps its salt.
const saltFile = "cluster-salt"

// maxSaltFileBytes bounds what serve reads of saltFile, and so the
// --cluster-salt it takes (raftSecret).
const maxSaltFileBytes = 4096

// saltRecordVersion is the version of the records of saltFile that are
// no salt: a NUL byte, which no salt of a command line holds, then this
// version, then the record (none: noSaltRecord).
const saltRecordVersion = 1

// noSaltRecord is what saltFile holds for a node that runs unsalted.
var noSaltRecord = []byte{0, saltRecordVersion}

// saltFingerprint is a short name of salt for messages: the first 8
// bytes of its SHA-256, in hexadecimal.
func saltFingerprint(salt []byte) string {
	sum := sha256.Sum256(salt)
	return hex.EncodeToString(sum[:8])
}

// keptSalt returns the salt the node on dir proves the secret with: the
// flag's (given says it was) or the one dir keeps (none when dir records
// that the node runs unsalted). store says the salt returned, or that
// there is none, is to be kept (keepSaltFirst): dir keeps nothing yet.
// It creates nothing.
func keptSalt(dir string, flag []byte, given bool) (salt []byte, store bool, err error) {
	path := filepath.Join(dir, saltFile)
	content, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !given {
			flag = nil
		}
		return flag, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("read the cluster salt the node keeps: %w", err)
	}
	kept, unsalted, err := parseSaltFile(path, content)
	switch {
	case err != nil:
		return nil, false, err
	case !given:
		return kept, false, nil
	case unsalted:
		return nil, false, usageErrorf("--cluster-salt (fingerprint %s): this node runs without a cluster salt, as %s records: a node with a salt is refused by its unsalted peers; leave the flag out; or, if only this node is wrong (first started without the salt of the cluster it joins), stop it, remove %s and start it with the cluster's --cluster-salt; or, to give the cluster a salt, stop every node, remove that file on each, and start every node with the same --cluster-salt",
			saltFingerprint(flag), path, path)
	case !bytes.Equal(kept, flag):
		return nil, false, usageErrorf("--cluster-salt (fingerprint %s) is not the salt this node keeps in %s (fingerprint %s): a node with another salt is refused by its peers; leave the flag out to use the kept one; or, if only this node is wrong (first started with a mistyped salt), stop it, remove %s and start it with the cluster's --cluster-salt; or, to change the cluster's salt, stop every node, remove that file on each, and start every node with the same --cluster-salt",
			saltFingerprint(flag), path, saltFingerprint(kept), path)
	}
	return kept, false, nil
}

// parseSaltFile returns the salt that content, read from path, holds, or
// unsalted when it records that the node runs without one.
func parseSaltFile(path string, content []byte) (salt []byte, unsalted bool, err error) {
	if len(content) > 0 && content[0] == 0 {
		switch {
		case bytes.Equal(content, noSaltRecord):
			return nil, true, nil
		case len(content) >= 2 && content[1] > saltRecordVersion:
			return nil, false, fmt.Errorf("%s: a record of version %d, from a later equeue: run that equeue, or remove the file and start the node with the cluster's --cluster-salt (none if it has none)", path, content[1])
		}
		return nil, false, fmt.Errorf("%s: not a cluster salt (a damaged record): remove it and start the node with the cluster's --cluster-salt (none if it has none)", path)
	}
	// Written by hand (echo SALT > FILE, an editor): one newline at the
	// end is none of the salt, as with --cluster-secret-file, and no
	// --cluster-salt ends with one (raftSecret).
	salt = bytes.TrimSuffix(content, []byte("\n"))
	if len(salt) < len(content) {
		salt = bytes.TrimSuffix(salt, []byte("\r"))
	}
	if len(salt) == 0 || len(salt) > maxSaltFileBytes {
		return nil, false, fmt.Errorf("%s: not a cluster salt (%d bytes): remove it and start the node with the cluster's --cluster-salt", path, len(salt))
	}
	return salt, false, nil
}

// errSaltKeptMeanwhile is storeSalt's error when dir came to keep a salt
// file after keptSalt read none: another start of the node on the same
// directory kept its own first.
var errSaltKeptMeanwhile = errors.New("another start of this node kept its cluster salt in its directory meanwhile: start the node once")

// storeSalt keeps salt in dir for the node's next starts, noSaltRecord
// when salt is empty: written to a temporary file, synced, put in place
// (placeSalt) and the directory synced (where the file system can sync
// one), so that a crash leaves the file whole or absent. It replaces no
// file: one there is errSaltKeptMeanwhile.
func storeSalt(dir string, salt []byte) error {
	record := salt
	if len(salt) == 0 {
		record = noSaltRecord
	}
	path := filepath.Join(dir, saltFile)
	tmp, err := os.CreateTemp(dir, saltFile+".tmp*")
	if err != nil {
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	defer os.Remove(tmp.Name()) // nothing once renamed
	if _, err := tmp.Write(record); err != nil {
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
	if err := placeSalt(tmp.Name(), path); err != nil {
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

// placeSalt puts the written file tmp at path unless a file is there: a
// hard link, which fails on one, then tmp removed. Where the file system
// has no hard links, a rename, which replaces one that came between the
// check and it.
func placeSalt(tmp, path string) error {
	err := os.Link(tmp, path)
	switch {
	case err == nil:
		return os.Remove(tmp)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s: %w", path, errSaltKeptMeanwhile)
	}
	if _, serr := os.Lstat(path); serr == nil {
		return fmt.Errorf("%s: %w", path, errSaltKeptMeanwhile)
	}
	return os.Rename(tmp, path)
}
