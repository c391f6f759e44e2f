package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node added to a salted cluster (cluster add) and first started
// without --cluster-salt records that it runs unsalted, and its peers
// refuse it; restarted with the cluster's salt it is refused again. The
// usage error says that a node alone in the wrong (one that never
// joined) takes the cluster's salt once its own file is removed, not
// only that every node of the cluster must be stopped. Before, it named
// only the change of the whole cluster's salt, which would stop a
// running cluster for one node's mistake.
func TestKeptSalt_RefusalTellsAJoinerToRemoveItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, storeSalt(dir, nil))
	_, _, err := keptSalt(dir, []byte("orders-eu"), true)
	var ce *cliError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "if only this node is wrong", "%v", err)
	assert.Contains(t, err.Error(), "remove "+filepath.Join(dir, saltFile)+" and start it with the cluster's --cluster-salt", "%v", err)

	dir = t.TempDir()
	require.NoError(t, storeSalt(dir, []byte("orders-ue")))
	_, _, err = keptSalt(dir, []byte("orders-eu"), true)
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "if only this node is wrong", "%v", err)
}
