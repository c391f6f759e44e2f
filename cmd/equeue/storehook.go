package main

import (
	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// wrapEngineStore, when set, opens the store of the engines openEngine
// opens on a directory, in place of equeue.Open's own Badger store. Only
// the tests' build sets it (testhold.go, build tag equeue_testhold), to
// hold the store's calls as a hung disk would; the equeue command leaves
// it nil.
var wrapEngineStore func(dir string, bo *store.BadgerOptions) (equeue.Store, error)
