package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
// secret (it is on the command line): the file holds it as given, byte
// for byte, after a record's head (saltRecordHead). A file without a
// record was kept by an earlier equeue, as given too, or written by hand,
// and holds its content; one that ends with a newline (\n or \r\n), which
// a file written by hand (echo SALT > FILE) does without it being part
// of the salt, is taken with the flag that is its content
// whole, as an earlier equeue kept it, and written again with a record;
// with the flag less the newline, which tells the two readings no more
// than no flag does, or without the flag, the node refuses to start
// rather than change the salt it used (keptSalt). A directory without
// the file (a node of an equeue before it, or never started with a
// secret) takes the flag's salt, or none, and keeps it. To change a
// node's salt, stop it and remove the file.

// saltFile is the file of a node's directory that keeps its salt.
const saltFile = "cluster-salt"

// maxSaltFileBytes bounds the --cluster-salt serve takes (raftSecret),
// and so the salt its file holds.
const maxSaltFileBytes = 4096

// saltRecordVersion is the latest version of the records of saltFile: a
// NUL byte, which no salt of a command line holds, then the version,
// then what the version holds. Version 1 is a record that the node runs
// unsalted (noSaltRecord), version 2 a salt, byte for byte
// (saltRecordHead).
const saltRecordVersion = 2

// noSaltRecord is what saltFile holds for a node that runs unsalted.
var noSaltRecord = []byte{0, 1}

// saltRecordHead starts what saltFile holds for a node with a salt; the
// salt follows, as given.
var saltRecordHead = []byte{0, 2}

// saltKeep says what a start does with the salt keptSalt returned.
type saltKeep int

const (
	// saltKept: the directory keeps it already.
	saltKept saltKeep = iota
	// saltFirst: the directory keeps no salt yet: the start keeps it
	// before the node opens (keepSaltFirst).
	saltFirst
	// saltRewrite: the directory's file, of no record, held it in a way
	// only the flag told apart: the start writes it again, with a record
	// (replaceSalt).
	saltRewrite
)

// saltFingerprint is a short name of salt for messages: the first 8
// bytes of its SHA-256, in hexadecimal.
func saltFingerprint(salt []byte) string {
	sum := sha256.Sum256(salt)
	return hex.EncodeToString(sum[:8])
}

// keptSalt returns the salt the node on dir proves the secret with: the
// flag's (given says it was) or the one dir keeps (none when dir records
// that the node runs unsalted), and what the start is to do with it
// (saltKeep). A flag that ends with a newline is refused unless it is
// the salt dir keeps (an earlier equeue kept one so); one that is the
// salt of a file of no record less its last newline is refused too: the
// file may hold the salt whole, the node's. It creates nothing.
func keptSalt(dir string, flag []byte, given bool) (salt []byte, keep saltKeep, err error) {
	path := filepath.Join(dir, saltFile)
	// Not a named pipe, which would hold the start for ever: a regular
	// file, links followed.
	content, err := readSaltFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !given {
			return nil, saltFirst, nil
		}
		if err := newlineFlag(flag); err != nil {
			return nil, saltKept, err
		}
		return flag, saltFirst, nil
	case err != nil:
		return nil, saltKept, fmt.Errorf("read the cluster salt the node keeps in %s: %w", path, pathErr(err))
	}
	f, err := parseSaltFile(path, content)
	switch {
	case err != nil:
		return nil, saltKept, err
	case f.unsalted && given:
		return nil, saltKept, usageErrorf("--cluster-salt (fingerprint %s): this node runs without a cluster salt, as %s records: a node with a salt is refused by its unsalted peers; leave the flag out; or, if only this node is wrong (first started without the salt of the cluster it joins), stop it, remove %s and start it with the cluster's --cluster-salt; or, to give the cluster a salt, stop every node, remove that file on each, and start every node with the same --cluster-salt",
			saltFingerprint(flag), path, path)
	case f.unsalted:
		return nil, saltKept, nil
	case f.byHand == nil && !given:
		return f.salt, saltKept, nil
	case f.byHand == nil && bytes.Equal(f.salt, flag):
		return f.salt, saltKept, nil
	case f.byHand == nil:
		if err := newlineFlag(flag); err != nil {
			return nil, saltKept, err
		}
		return nil, saltKept, otherSaltError(flag, path, saltFingerprint(f.salt))
	case !given:
		return nil, saltKept, usageErrorf("%s ends with a newline and holds no record of this equeue: it holds the salt of fingerprint %s, newline included, if an earlier equeue kept it, or that of fingerprint %s, newline left out, if it was written by hand; if an earlier equeue kept it, start the node once with that salt, newline included, as its peers prove it, in --cluster-salt, which it then keeps; if it was written by hand, write it again without the newline (printf %%s SALT > FILE)",
			path, saltFingerprint(f.salt), saltFingerprint(f.byHand))
	case bytes.Equal(f.salt, flag):
		return flag, saltRewrite, nil
	case bytes.Equal(f.byHand, flag):
		// The flag agrees with the file up to its newline, and tells
		// nothing: an earlier equeue kept the salt whole, and the node
		// proved it so; taking the flag's would change the node's salt.
		return nil, saltKept, usageErrorf("--cluster-salt (fingerprint %s) is the salt %s holds less its last newline, and the file holds no record of this equeue: if an earlier equeue kept it, the node's salt is the whole of it, newline included (fingerprint %s), as its peers prove it, and taking the flag's would change it; give that salt, newline included, or leave the flag out once the node kept it; if the file was written by hand, write it again without the newline (printf %%s SALT > FILE), and start the node with the flag",
			saltFingerprint(flag), path, saltFingerprint(f.salt))
	}
	if err := newlineFlag(flag); err != nil {
		return nil, saltKept, err
	}
	return nil, saltKept, otherSaltError(flag, path, fmt.Sprintf("%s, or %s without its last newline", saltFingerprint(f.salt), saltFingerprint(f.byHand)))
}

// readSaltFile reads path whole if it is a regular file (openRegular).
func readSaltFile(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// newlineFlag refuses a --cluster-salt that ends with a newline, which a
// node of this equeue never kept (raftSecret refuses the others): a
// shell's or a configuration's newline taken for part of the salt splits
// the cluster.
func newlineFlag(flag []byte) error {
	if bytes.HasSuffix(flag, []byte("\n")) {
		return usageErrorf("--cluster-salt ends with a newline, which is not part of a salt this node keeps: give the salt without it")
	}
	return nil
}

// otherSaltError is keptSalt's usage error for a --cluster-salt that is
// not the one path keeps (of fingerprint kept).
func otherSaltError(flag []byte, path, kept string) error {
	return usageErrorf("--cluster-salt (fingerprint %s) is not the salt this node keeps in %s (fingerprint %s): a node with another salt is refused by its peers; leave the flag out to use the kept one; or, if only this node is wrong (first started with a mistyped salt), stop it, remove %s and start it with the cluster's --cluster-salt; or, to change the cluster's salt, stop every node, remove that file on each, and start every node with the same --cluster-salt",
		saltFingerprint(flag), path, kept, path)
}

// saltFileContent is what saltFile holds.
type saltFileContent struct {
	unsalted bool   // the node runs without a salt
	salt     []byte // the salt, byte for byte
	// byHand, for a file of no record that ends with a newline, is the
	// salt less that newline (\n or \r\n), as one written by hand
	// holds it; salt is then the file's content whole, as an earlier
	// equeue kept it.
	byHand []byte
}

// parseSaltFile returns what content, read from path, holds.
func parseSaltFile(path string, content []byte) (saltFileContent, error) {
	if len(content) > 0 && content[0] == 0 {
		switch {
		case bytes.Equal(content, noSaltRecord):
			return saltFileContent{unsalted: true}, nil
		case bytes.HasPrefix(content, saltRecordHead) && len(content) > len(saltRecordHead) && len(content)-len(saltRecordHead) <= maxSaltFileBytes:
			return saltFileContent{salt: content[len(saltRecordHead):]}, nil
		case len(content) >= 2 && content[1] > saltRecordVersion:
			return saltFileContent{}, fmt.Errorf("%s: a record of version %d, from a later equeue: run that equeue, or remove the file and start the node with the cluster's --cluster-salt (none if it has none)", path, content[1])
		}
		return saltFileContent{}, fmt.Errorf("%s: not a cluster salt (a damaged record): remove it and start the node with the cluster's --cluster-salt (none if it has none)", path)
	}
	// No record: kept by an earlier equeue, the salt as given, or written
	// by hand (echo SALT > FILE, an editor), where one newline at the end
	// would be none of the salt: the file does not say which, and keptSalt
	// takes no reading but the content whole (byHand names the other).
	byHand := bytes.TrimSuffix(content, []byte("\n"))
	if len(byHand) < len(content) {
		byHand = bytes.TrimSuffix(byHand, []byte("\r"))
	}
	if len(byHand) == 0 || len(byHand) > maxSaltFileBytes {
		return saltFileContent{}, fmt.Errorf("%s: not a cluster salt (%d bytes): remove it and start the node with the cluster's --cluster-salt", path, len(byHand))
	}
	if len(byHand) == len(content) {
		return saltFileContent{salt: content}, nil
	}
	return saltFileContent{salt: content, byHand: byHand}, nil
}

// errSaltKeptMeanwhile is storeSalt's error when dir came to keep a salt
// file after keptSalt read none: another start of the node on the same
// directory kept its own first.
var errSaltKeptMeanwhile = errors.New("another start of this node kept its cluster salt in its directory meanwhile: start the node once")

// storeSalt keeps salt in dir for the node's next starts (saltRecordHead
// and the salt), noSaltRecord when salt is empty: written to a temporary
// file, synced, put in place (placeSalt) and the directory synced (where
// the file system can sync one), so that a crash leaves the file whole
// or absent. It replaces no file: one there is errSaltKeptMeanwhile.
func storeSalt(dir string, salt []byte) error {
	return putSalt(dir, salt, placeSalt)
}

// replaceSalt is storeSalt replacing the file dir holds (saltRewrite), by
// a rename: a crash leaves the one or the other, whole.
func replaceSalt(dir string, salt []byte) error {
	return putSalt(dir, salt, os.Rename)
}

// putSalt writes salt's record to a temporary file of dir, syncs it, puts
// it at saltFile with place and syncs dir.
func putSalt(dir string, salt []byte, place func(tmp, path string) error) error {
	record := noSaltRecord
	if len(salt) > 0 {
		record = append(bytes.Clone(saltRecordHead), salt...)
	}
	path := filepath.Join(dir, saltFile)
	tmp, err := os.CreateTemp(dir, saltTempPrefix+"*")
	if err != nil {
		return fmt.Errorf("keep the cluster salt: %w", err)
	}
	defer os.Remove(tmp.Name()) // nothing once put in place
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
	if err := place(tmp.Name(), path); err != nil {
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
