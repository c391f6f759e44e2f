package console_test

import (
	"os"
	"testing"

	"github.com/equeue-go/equeue/console"
)

func TestDump(t *testing.T) {
	if os.Getenv("DUMP") == "" {
		t.Skip()
	}
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	t.Log(s.get(t, prefix+os.Getenv("DUMP")).body)
}
