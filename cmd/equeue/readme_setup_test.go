package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envSetup switches TestREADME_SetUpOnACleanClone on; .ci/run sets it.
const envSetup = "EQUEUE_README_SETUP"

// setUpCommands returns the commands of the README's "Set up" section: its
// indented code lines, in order.
func setUpCommands(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	in := false
	for _, l := range lines {
		switch {
		case l == "## Set up":
			in = true
		case in && strings.HasPrefix(l, "## "):
			return out
		case in && strings.HasPrefix(l, "    ") && strings.TrimSpace(l) != "":
			out = append(out, strings.TrimSpace(l))
		}
	}
	require.True(t, in, "README has no Set up section")
	return out
}

// TestREADME_SetUpOnACleanClone clones the repository (its committed
// state) into a fresh folder and runs the README's set-up commands there,
// in order, as a new user would. "go test" commands are run with -run '^$':
// every test binary is built and linked (under -race, which needs cgo) but
// runs no test, since .ci/run runs the suite itself. It then checks what
// the README promises: the quickstart leaves no temporary folder behind,
// the built binary is ignored by git, and go install put equeue in GOBIN.
func TestREADME_SetUpOnACleanClone(t *testing.T) {
	if os.Getenv(envSetup) == "" {
		t.Skipf("set %s=1 to run the README's set-up commands on a clean clone (.ci/run does)", envSetup)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed to clone the repository: %v", err)
	}
	raw, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	cmds := setUpCommands(t, strings.Split(string(raw), "\n"))
	require.NotEmpty(t, cmds)

	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	base := t.TempDir()
	clone := filepath.Join(base, "equeue")
	gobin := filepath.Join(base, "gobin")
	tmp := filepath.Join(base, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	gitClone := exec.CommandContext(ctx, "git", "clone", "--quiet", root, clone)
	out, err := gitClone.CombinedOutput()
	require.NoError(t, err, "git clone: %s", out)

	env := []string{"GOBIN=" + gobin, "TMPDIR=" + tmp}
	for _, kv := range cleanEnv() {
		switch {
		case strings.HasPrefix(kv, "PATH="):
			kv = "PATH=" + gobin + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		case strings.HasPrefix(kv, "GOBIN="), strings.HasPrefix(kv, "TMPDIR="):
			continue
		}
		env = append(env, kv)
	}
	for _, c := range cmds {
		run := c
		if strings.HasPrefix(c, "go test") {
			run += " -run '^$'"
		}
		sh := exec.CommandContext(ctx, "bash", "-c", run)
		sh.Dir, sh.Env = clone, env
		var b bytes.Buffer
		sh.Stdout, sh.Stderr = &b, &b
		start := time.Now()
		err := sh.Run()
		t.Logf("$ %s  (%v)", run, time.Since(start).Round(time.Millisecond))
		require.NoError(t, err, "README set-up command %q failed:\n%s", c, b.String())
	}

	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "the quickstart left files in the temporary folder")
	assert.FileExists(t, filepath.Join(clone, "equeue"), "go build -o equeue")
	assert.FileExists(t, filepath.Join(gobin, "equeue"), "go install ./cmd/equeue")
	status := exec.CommandContext(ctx, "git", "status", "--porcelain")
	status.Dir = clone
	out, err = status.Output()
	require.NoError(t, err)
	assert.Empty(t, string(out), "the set-up left untracked or changed files (is .gitignore complete?)")
}
