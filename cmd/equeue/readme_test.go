package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The README's command-line walkthrough must be what a reader gets by
// running its commands in order. TestREADME_Walkthrough runs every command
// of its console blocks, in one shell, in a fresh folder, and compares
// what each prints with what the README shows, identifiers, times, sizes
// and throughput figures aside. EQUEUE_README_UPDATE=1 writes the outputs
// of the run into the README instead (then review the diff).

// readmePath is the repository's README, from this package's folder.
const readmePath = "../../README.md"

// walkthroughSection is the README section whose console blocks are run.
const walkthroughSection = "## Command-line tool: `equeue`"

// consoleCommand is one "$ command" of a console block and the lines the
// README shows under it.
type consoleCommand struct {
	cmd  string
	want []string
	// line is the README line of the command; out the lines of its output
	// (for the update mode), as [first, end).
	line     int
	outFirst int
	outEnd   int
}

// consoleCommands returns the commands of the console blocks of section,
// in order.
func consoleCommands(t *testing.T, lines []string, section string) []consoleCommand {
	t.Helper()
	start := -1
	for i, l := range lines {
		if l == section {
			start = i
			break
		}
	}
	require.NotEqual(t, -1, start, "README has no section %q", section)
	var out []consoleCommand
	inBlock := false
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if !inBlock && strings.HasPrefix(l, "## ") {
			break
		}
		switch {
		case l == "```console":
			inBlock = true
		case inBlock && l == "```":
			inBlock = false
		case inBlock && strings.HasPrefix(l, "$ "):
			out = append(out, consoleCommand{cmd: strings.TrimPrefix(l, "$ "), line: i, outFirst: i + 1, outEnd: i + 1})
		case inBlock:
			require.NotEmpty(t, out, "README line %d: output before any command", i+1)
			c := &out[len(out)-1]
			c.want = append(c.want, l)
			c.outEnd = i + 1
		}
	}
	require.False(t, inBlock, "README: unterminated console block")
	return out
}

// The README's addresses, replaced by free ones for the run.
const (
	readmeListen  = "127.0.0.1:7654"
	readmeMetrics = "127.0.0.1:9100"
)

func TestREADME_Walkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed to run the README walkthrough: %v", tool, err)
			}
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	raw, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	lines := strings.Split(string(raw), "\n")
	cmds := consoleCommands(t, lines, walkthroughSection)
	require.Greater(t, len(cmds), 20, "the walkthrough's commands were not found")

	work := t.TempDir()
	tools := filepath.Join(t.TempDir(), "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(tools, "deadletter"), "../../examples/deadletter")
	build.Env = cleanEnv()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build examples/deadletter: %s", out)

	listen, metricsAddr := freePort(t), freePort(t)
	// The run uses free ports, the example built above, and a tenth of the
	// benchmark's messages (its figures are not compared, only its form).
	rewrite := strings.NewReplacer(readmeListen, listen, readmeMetrics, metricsAddr,
		"go run ./examples/deadletter", "deadletter", "bench --count 20000", "bench --count 2000")
	var script strings.Builder
	script.WriteString("__rc=0\n")
	for i, c := range cmds {
		// Each command sees the exit status of the one before, as in an
		// interactive shell ("echo $?"), and its output is framed by
		// markers.
		fmt.Fprintf(&script, "printf '\\n@@BEGIN %d@@\\n'\n(exit $__rc)\n{ %s\n} 2>&1\n__rc=$?\nprintf '\\n@@END %d@@\\n'\n", i, rewrite.Replace(c.cmd), i)
	}
	// Whatever happens, leave no server behind.
	script.WriteString("kill %1 2>/dev/null; wait\n")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir = work
	env := cleanEnv()
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + tools + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	sh.Env = env
	var stdout bytes.Buffer
	sh.Stdout, sh.Stderr = &stdout, &stdout
	runErr := sh.Run()
	got := splitMarked(t, stdout.String(), len(cmds))
	require.NoError(t, runErr, "the walkthrough's shell failed:\n%s", stdout.String())

	unrewrite := strings.NewReplacer(listen, readmeListen, metricsAddr, readmeMetrics)
	for i := range got {
		for j, l := range got[i] {
			got[i][j] = unrewrite.Replace(l)
		}
	}

	if os.Getenv("EQUEUE_README_UPDATE") != "" {
		for i := len(cmds) - 1; i >= 0; i-- {
			c := cmds[i]
			lines = append(lines[:c.outFirst], append(append([]string{}, got[i]...), lines[c.outEnd:]...)...)
		}
		require.NoError(t, os.WriteFile(readmePath, []byte(strings.Join(lines, "\n")), 0o644))
		t.Logf("wrote the walkthrough's outputs into %s", readmePath)
		return
	}

	for i, c := range cmds {
		want, have := comparable(c.cmd, c.want), comparable(c.cmd, got[i])
		if want != have {
			t.Errorf("README line %d: $ %s\n--- README shows (normalized)\n%s\n--- the command printed (normalized)\n%s\n--- the command printed\n%s",
				c.line+1, c.cmd, want, have, strings.Join(got[i], "\n"))
		}
	}
}

// splitMarked cuts the shell's output into each command's lines.
func splitMarked(t *testing.T, out string, n int) [][]string {
	t.Helper()
	got := make([][]string, n)
	cur := -1
	var buf []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "@@BEGIN ") && strings.HasSuffix(l, "@@"):
			i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(l, "@@BEGIN "), "@@"))
			require.NoError(t, err)
			cur, buf = i, nil
		case strings.HasPrefix(l, "@@END ") && strings.HasSuffix(l, "@@"):
			require.GreaterOrEqual(t, cur, 0, "output:\n%s", out)
			// The marker printf starts on a new line; drop the blank
			// line that adds after output ending in a newline.
			if len(buf) > 0 && buf[len(buf)-1] == "" {
				buf = buf[:len(buf)-1]
			}
			got[cur] = buf
			cur = -1
		case cur >= 0:
			buf = append(buf, l)
		}
	}
	for i := range got {
		require.NotNil(t, got[i], "command %d did not finish; output:\n%s", i, out)
	}
	return got
}

var (
	reID      = regexp.MustCompile(`\b[0-9a-f]{24}(?:[0-9a-f]{8})?\b`) // generated IDs; 32 digits before the compact format
	reTime    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	reLogTime = regexp.MustCompile(`time=\S+`)
	reMember  = regexp.MustCompile(`member=\S+`)
	rePeer    = regexp.MustCompile(`peer=\S+`)
	reSize    = regexp.MustCompile(`(store size:\s+).*`)
	reNumber  = regexp.MustCompile(`\d+(\.\d+)?`)
	reBench   = regexp.MustCompile(`bench-[0-9a-f]+`)
	reSpaces  = regexp.MustCompile(`[ \t]+`)
)

// comparable is the part of a command's output that does not change from
// run to run: identifiers, times, member IDs, peer addresses and store sizes
// are masked, every number of a benchmark too, runs of spaces (table
// alignment) are one, and a consume's lines are sorted, since it reads
// queues in parallel.
func comparable(cmd string, out []string) string {
	var lines []string
	for _, l := range out {
		l = reID.ReplaceAllString(l, "<ID>")
		l = reTime.ReplaceAllString(l, "<TIME>")
		l = reLogTime.ReplaceAllString(l, "time=<TIME>")
		l = reMember.ReplaceAllString(l, "member=<MEMBER>")
		l = rePeer.ReplaceAllString(l, "peer=<PEER>")
		l = reSize.ReplaceAllString(l, "${1}<SIZE>")
		if strings.Contains(cmd, "equeue bench") {
			l = reBench.ReplaceAllString(l, "bench-<TOPIC>")
			l = reNumber.ReplaceAllString(l, "<N>")
		}
		l = strings.TrimRight(reSpaces.ReplaceAllString(l, " "), " ")
		lines = append(lines, l)
	}
	if strings.Contains(cmd, " consume ") {
		sort.Strings(lines)
	}
	return strings.Join(lines, "\n")
}
