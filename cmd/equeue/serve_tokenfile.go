package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"time"
)

// maxTokenFileBytes bounds what serve reads of a --token-file: a token file
// is a few lines, and a path such as /dev/zero must not fill the memory.
const maxTokenFileBytes = 1 << 20

// tokenSpec is one TOKEN=RIGHTS[@NAMESPACE] given to serve, and where it
// was given, for its errors (which never show the token).
type tokenSpec struct {
	// text is the spec itself, token included: never print it.
	text string
	// file is the --token-file the spec was read from; empty for a --token
	// flag.
	file string
	// line is the spec's line in file, from 1.
	line int
}

// where names where the spec was given: --token, or FILE:LINE.
func (s tokenSpec) where() string {
	if s.file == "" {
		return "--token"
	}
	return fmt.Sprintf("%s:%d", s.file, s.line)
}

// label names the spec in an error, its token masked: "--token ****" or
// "FILE:LINE: ****".
func (s tokenSpec) label(tok string) string {
	mask := strings.Repeat("*", min(len(tok), 8))
	if s.file == "" {
		return "--token " + mask
	}
	return s.where() + ": " + mask
}

// shown is part of the spec (its rights, its namespace) as an error may
// show it: as given for a --token flag, which the command line shows
// anyway, and "..." for a line of a file, which the error names by its
// line: past its first "=" such a line may still hold a secret (NAME=SECRET
// as in an environment file, two specs on one line, a token with "=" in
// it).
func (s tokenSpec) shown(part string) string {
	if s.file == "" || part == "" {
		return part
	}
	return "..."
}

// flagTokenSpecs returns the specs of serve's --token flags.
func flagTokenSpecs(flags []string) []tokenSpec {
	out := make([]tokenSpec, 0, len(flags))
	for _, f := range flags {
		out = append(out, tokenSpec{text: f})
	}
	return out
}

// tokenFile is what serve logs of a --token-file it read: never its tokens.
type tokenFile struct {
	// path is the file's path as given.
	path string
	// tokens is how many tokens it gave.
	tokens int
	// perm is its permission bits.
	perm fs.FileMode
}

// readTokenFiles reads the specs of serve's --token-file flags, in order.
// A file it cannot read, or that has no token, is a usage error.
func readTokenFiles(paths []string) ([]tokenSpec, []tokenFile, error) {
	var specs []tokenSpec
	var files []tokenFile
	for _, p := range paths {
		s, perm, err := readTokenFile(p)
		if err != nil {
			return nil, nil, usageErrorf("%v", err)
		}
		specs = append(specs, s...)
		files = append(files, tokenFile{path: p, tokens: len(s), perm: perm})
	}
	return specs, files, nil
}

// logTokenFiles logs the path of each token file serve took, never its
// tokens, and warns about one that group or others may read or write,
// which it still takes: a Kubernetes secret volume, say, is 0644 unless
// its defaultMode says otherwise.
func (a *app) logTokenFiles(files []tokenFile) {
	for _, f := range files {
		if f.perm&0o066 != 0 && runtime.GOOS != "windows" {
			a.log.Warn("token file may be read or written by group or others: make it readable by serve's user only (chmod 600)",
				"file", f.path, "mode", fmt.Sprintf("%#o", f.perm))
		}
		a.log.Info("token file read", "file", f.path, "tokens", f.tokens)
	}
}

// readTokenFile reads one --token-file: one TOKEN=RIGHTS[@NAMESPACE] a
// line, the white space around it trimmed, blank lines and lines that
// begin with # skipped, a leading byte order mark dropped. It returns the
// file's permission bits too. The lines are checked by parseTokens and
// parseTokenNamespaces, as --token's.
func readTokenFile(path string) ([]tokenSpec, fs.FileMode, error) {
	deadline := time.Now().Add(tokenFileWait)
	f, err := openTokenFile(path, deadline)
	if errors.Is(err, errTokenFileSilent) {
		return nil, 0, fmt.Errorf("--token-file %s: nothing to read within %v: a named pipe that no program writes to?", path, tokenFileWait)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("--token-file %s: %w", path, pathErr(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("--token-file %s: %w", path, pathErr(err))
	}
	// A pipe whose writer writes nothing, and does not close it, would
	// hold the read for ever: the deadline ends it. A regular file has
	// none, and needs none.
	_ = f.SetReadDeadline(deadline)
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && len(data) == 0:
		return nil, 0, fmt.Errorf("--token-file %s: nothing to read within %v: a pipe whose writer writes nothing?", path, tokenFileWait)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, 0, fmt.Errorf("--token-file %s: not read to its end within %v: a pipe whose writer does not close it?", path, tokenFileWait)
	case err != nil:
		return nil, 0, fmt.Errorf("--token-file %s: %w", path, pathErr(err))
	}
	if len(data) > maxTokenFileBytes {
		return nil, 0, fmt.Errorf("--token-file %s: larger than %d bytes: not a token file", path, maxTokenFileBytes)
	}
	// A byte order mark (some Windows editors begin UTF-8 files with one)
	// is no part of the first line: a token holding it could never match.
	text := strings.TrimPrefix(string(data), "\ufeff")
	var out []tokenSpec
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, tokenSpec{text: line, file: path, line: i + 1})
	}
	if len(out) == 0 {
		return nil, 0, fmt.Errorf("--token-file %s: no token in it: want one TOKEN=RIGHTS[@NAMESPACE] a line", path)
	}
	return out, st.Mode().Perm(), nil
}

// pathErr returns the cause of a *fs.PathError, whose path the caller
// names already.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
