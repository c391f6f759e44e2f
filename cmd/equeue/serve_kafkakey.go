package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The key that marks the records the Kafka listener stores for idempotent
// producers (kafka.Options.ProducerRecordKey), so that after a restart a
// native message named like them does not move the producer's rebuilt
// state. serve gives the listener one without configuration:
//
//   - --kafka-record-key-file: the file's content, for operators who
//     manage keys;
//   - in cluster mode, a key derived from --cluster-secret-file's secret,
//     the same on every node, so that a new leader reads the marks of
//     the old one (without a secret: the listener's built-in key);
//   - otherwise a random key kept in the directory (kafkaRecordKeyFile),
//     made on the first start with the listener.
//
// The listener reads records marked with its built-in key, as an earlier
// serve made them, where it reads records without a mark, so a directory
// of an earlier equeue goes on working.

// kafkaRecordKeyFile is the file of the directory that keeps the key of
// a standalone serve.
const kafkaRecordKeyFile = "kafka-record-key"

// kafkaRecordKeyTempPrefix starts the names of the temporary files
// putKafkaRecordKey writes a key to before it renames it into place:
// os.CreateTemp adds decimal digits.
const kafkaRecordKeyTempPrefix = kafkaRecordKeyFile + ".tmp-"

// kafkaRecordKeyLen is the length of the key serve makes.
const kafkaRecordKeyLen = 32

// minKafkaRecordKeyLen is the shortest key --kafka-record-key-file takes.
const minKafkaRecordKeyLen = 16

// maxKafkaRecordKeyFileBytes bounds what serve reads of a key file.
const maxKafkaRecordKeyFileBytes = 4096

// kafkaRecordKeyLabel separates the key derived from the cluster secret
// from every other use of the secret (the Raft handshake's).
const kafkaRecordKeyLabel = "equeue serve: Kafka listener producer record key, v1"

// clusterRecordKey derives the key of a cluster's listeners from the
// secret its nodes share: an HMAC-SHA256 of a label of its own, keyed
// with the secret, so the key tells nothing of the secret and proves
// nothing in the Raft handshake.
func clusterRecordKey(secret []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(kafkaRecordKeyLabel))
	return h.Sum(nil)
}

// readKafkaRecordKeyFile reads --kafka-record-key-file: the key is its
// content, one trailing newline dropped, at least minKafkaRecordKeyLen
// bytes. It takes a pipe a program writes the key to (<(cmd), a named
// pipe), as --token-file and --cluster-secret-file do, and gives one up
// as they do once tokenFileWait has passed (readKeyFileWaiting).
func readKafkaRecordKeyFile(path string) ([]byte, error) {
	data, err := readKeyFileWaiting(path)
	if err != nil {
		return nil, usageErrorf("--kafka-record-key-file %s: %w", path, err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	s = strings.TrimSuffix(s, "\r")
	if len(s) < minKafkaRecordKeyLen {
		return nil, usageErrorf("--kafka-record-key-file %s: the key must be at least %d bytes, it has %d (make one with: head -c 32 /dev/urandom > FILE)", path, minKafkaRecordKeyLen, len(s))
	}
	return []byte(s), nil
}

// readBounded reads path, a regular file (readRegular: a named pipe is
// refused rather than waited for), refusing one larger than
// maxKafkaRecordKeyFileBytes: the directory's kafkaRecordKeyFile, which
// serve writes itself.
func readBounded(path string) ([]byte, error) {
	data, err := readRegular(path, maxKafkaRecordKeyFileBytes)
	if err != nil {
		return nil, err
	}
	if len(data) > maxKafkaRecordKeyFileBytes {
		return nil, fmt.Errorf("larger than %d bytes: not a key file", maxKafkaRecordKeyFileBytes)
	}
	return data, nil
}

// keptKafkaRecordKey returns the key dir keeps in kafkaRecordKeyFile, and
// makes it when there is none: kafkaRecordKeyLen random bytes, written to
// a temporary file, synced, renamed into place and the directory synced,
// so that a crash leaves the file whole or absent. A file that is there
// but cannot be read (a link to a file not there too), or is not a key,
// refuses the start: another key would leave the records marked with the
// kept one unread, and a retry across the restart stored twice.
func keptKafkaRecordKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, kafkaRecordKeyFile)
	data, err := readBounded(path)
	switch {
	case err == nil && len(data) == kafkaRecordKeyLen:
		return data, nil
	case err == nil:
		return nil, fmt.Errorf("--kafka: the record key file %s: %d bytes, a key has %d: restore the file this directory kept (remove it only if no idempotent Kafka producer is to retry across this restart)", path, len(data), kafkaRecordKeyLen)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("--kafka: the record key file %s: %w", path, pathErr(err))
	}
	// Not there to read, but there: a link to a file not there (a volume
	// not mounted yet?). The key is the link's; a new one would replace it.
	if _, lerr := os.Lstat(path); !errors.Is(lerr, fs.ErrNotExist) {
		return nil, fmt.Errorf("--kafka: the record key file %s: %w (a link to a file not there? restore its target)", path, pathErr(err))
	}
	key := make([]byte, kafkaRecordKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("--kafka: make the record key: %w", err)
	}
	if err := putKafkaRecordKey(dir, path, key); err != nil {
		return nil, fmt.Errorf("--kafka: keep the record key in %s: %w", path, err)
	}
	return key, nil
}

// putKafkaRecordKey writes key to a temporary file of dir, syncs it,
// renames it to path and syncs dir.
func putKafkaRecordKey(dir, path string, key []byte) error {
	tmp, err := os.CreateTemp(dir, kafkaRecordKeyTempPrefix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // nothing once renamed
	if _, err := tmp.Write(key); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !dirSyncUnsupported(err) {
		return err
	}
	return nil
}

// recordKey returns the key of the listener's marks: --kafka-record-key-file's;
// in cluster mode (env.eng nil) the one derived from the cluster secret,
// or nil (the built-in key) without one; otherwise the one the directory
// keeps, made now when there is none, before the listener starts. A
// standalone serve first removes the temporary files of the key's write
// that a crash before their rename left in the directory, which its
// engine holds now, as a cluster start removes the salt's
// (removeSaltTemps): left there, they would outlive every start.
func (k *kafkaAddon) recordKey(env serveEnv) ([]byte, error) {
	if env.eng != nil {
		if err := removeTempFiles(k.app.dir, kafkaRecordKeyTempPrefix, "the Kafka record key's write"); err != nil {
			return nil, fmt.Errorf("--kafka: %w", err)
		}
	}
	switch {
	case k.keyFile != "":
		return readKafkaRecordKeyFile(k.keyFile)
	case env.eng == nil && env.clusterSecret == nil:
		env.log.Warn("the Kafka listener marks idempotent producers' records with its built-in key, which anyone may use: give every node --cluster-secret-file, or the same --kafka-record-key-file")
		return nil, nil
	case env.eng == nil:
		return clusterRecordKey(env.clusterSecret), nil
	default:
		return keptKafkaRecordKey(k.app.dir)
	}
}
