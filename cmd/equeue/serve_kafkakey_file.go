package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// readKeyFileWaiting reads the --kafka-record-key-file at path, at most
// maxKafkaRecordKeyFileBytes: a regular file, or a pipe a program writes
// the key to, waited for until tokenFileWait has passed at most, as a
// --token-file is (openTokenFile), so that a named pipe no program
// writes to, or whose writer writes nothing, fails rather than hold
// serve's start for ever. Its errors name no path: the caller does.
func readKeyFileWaiting(path string) ([]byte, error) {
	deadline := time.Now().Add(tokenFileWait)
	f, err := openTokenFile(path, deadline)
	if errors.Is(err, errTokenFileSilent) {
		return nil, fmt.Errorf("nothing to read within %v: a named pipe that no program writes to?", tokenFileWait)
	}
	if err != nil {
		return nil, pathErr(err)
	}
	defer f.Close()
	_ = f.SetReadDeadline(deadline) // a pipe's; a regular file has none
	data, err := io.ReadAll(io.LimitReader(f, maxKafkaRecordKeyFileBytes+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && len(data) == 0:
		return nil, fmt.Errorf("nothing to read within %v: a pipe whose writer writes nothing?", tokenFileWait)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fmt.Errorf("not read to its end within %v: a pipe whose writer does not close it?", tokenFileWait)
	case err != nil:
		return nil, pathErr(err)
	}
	if len(data) > maxKafkaRecordKeyFileBytes {
		return nil, fmt.Errorf("larger than %d bytes: not a key file", maxKafkaRecordKeyFileBytes)
	}
	return data, nil
}
