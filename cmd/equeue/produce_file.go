package main

import (
	"fmt"
	"io"
	"os"
)

// readBodyFile reads a whole file ("-": stdin) as one message body. The
// bytes are kept as they are: no line splitting, no trimming, any encoding.
// An empty body is refused, as empty lines are. What the file holds (empty,
// too large) is found while running, as a line the broker refuses is: a
// failure (exit code 1), not a usage error.
func readBodyFile(name string, stdin io.Reader) (string, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, maxLine+1))
	} else {
		var f *os.File
		if f, err = os.Open(name); err == nil {
			b, err = io.ReadAll(io.LimitReader(f, maxLine+1))
			_ = f.Close()
		}
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("--body-file: %w", err)
	case len(b) > maxLine:
		return "", fmt.Errorf("--body-file %s: larger than %d bytes", name, maxLine)
	case len(b) == 0:
		return "", fmt.Errorf("--body-file %s is empty: no message to send", name)
	}
	return string(b), nil
}
