package cluster

import (
	"cmp"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A node moves a store it finds damaged at Open aside (openNodeStore), for
// an operator to look into, and rebuilds it from Raft. Each one is a full
// copy of the store: a node that meets damage again and again (a failing
// disk, repeated unclean stops) would fill its disk with them. So it keeps
// the newest Options.KeepDamaged and removes the older ones each time it
// moves one aside.

// damagedInfix joins the store's directory name and the time, in unix
// nanoseconds, it was moved aside: "engine.damaged-<unix nanoseconds>".
const damagedInfix = ".damaged-"

// defaultKeepDamaged is how many damaged stores a node keeps when
// Options.KeepDamaged is zero.
const defaultKeepDamaged = 1

// damagedAt returns the time, in unix nanoseconds, in name when it is
// exactly what openNodeStore names a damaged store: "engine.damaged-"
// followed by a positive decimal number as strconv writes it.
func damagedAt(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, engineDir+damagedInfix)
	if !ok {
		return 0, false
	}
	ns, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || ns <= 0 || strconv.FormatInt(ns, 10) != digits {
		return 0, false
	}
	return ns, true
}

// pruneDamaged removes, from the node's directory dir, the directories of
// damaged stores beyond the newest keep (at least one), newest by the time
// in their names; justMoved, the one just moved aside, is always kept.
// Nothing but a directory named exactly as openNodeStore names them is
// removed (not a file, nor a symbolic link). A failed removal is logged:
// it leaves a copy on the disk, which the next prune tries again.
func pruneDamaged(dir, justMoved string, keep int, log *slog.Logger) {
	if keep <= 0 {
		keep = defaultKeepDamaged
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Warn("older damaged stores not removed: list the node's directory", "dir", dir, "err", err)
		return
	}
	type damaged struct {
		name string
		at   int64
	}
	var older []damaged
	for _, e := range entries {
		at, ok := damagedAt(e.Name())
		if !ok || !e.IsDir() || e.Name() == justMoved {
			continue
		}
		older = append(older, damaged{e.Name(), at})
	}
	if len(older) < keep {
		return
	}
	slices.SortFunc(older, func(a, b damaged) int { return cmp.Compare(b.at, a.at) }) // newest first
	for _, d := range older[keep-1:] {
		path := filepath.Join(dir, d.name)
		if err := os.RemoveAll(path); err != nil {
			log.Warn("older damaged store not removed", "removing", path, "err", err)
			continue
		}
		log.Info("older damaged store removed: a newer one is kept", "removed", path, "kept", keep)
	}
}
