package equeue

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/equeue-go/equeue/store"
)

// A topic's TopicInfo.ID is the engine's count of topic creations when it
// was made: shown as it is to a Namespace view, the IDs of a tenant's own
// topics would tell it how many topics the other namespaces made in
// between. A view so shows each ID enciphered: a keyed permutation of the
// non-zero 32-bit numbers, one per namespace, whose key the engine draws
// once and stores. It stays a topic's across reopens, no two topics share
// one (a permutation maps distinct IDs apart), and it tells nothing of the
// engine's count without the key. Nothing stored changes: the engine, its
// records and its keys keep the engine's ID.

// keyViewTopicIDs holds the key of the views' topic IDs (viewIDKeyLen
// random bytes), stored the first time a view shows an ID.
var keyViewTopicIDs = []byte("key/viewtopicid")

const (
	viewIDKeyLen = 32
	// viewIDRounds is the Feistel rounds of the permutation: well past the
	// four that make a keyed one look random.
	viewIDRounds = 8
)

// viewIDKey is the engine's key of the views' topic IDs, read or made on
// first use.
type viewIDKey struct {
	mu  sync.Mutex
	key []byte // nil until read or stored
}

// viewTopicIDs returns the IDs namespace ns's views show, reading the key
// from the store or storing a new one the first time. It fails only when
// the key can be neither read nor stored.
func (e *Engine) viewTopicIDs(ns string) (topicIDCipher, error) {
	key, err := e.viewIDKey()
	if err != nil {
		return topicIDCipher{}, fmt.Errorf("equeue: namespace topic IDs: %w", err)
	}
	sub := hmac.New(sha256.New, key)
	sub.Write([]byte("equeue view topic ID\x00"))
	sub.Write([]byte(ns))
	block, err := aes.NewCipher(sub.Sum(nil))
	if err != nil {
		return topicIDCipher{}, fmt.Errorf("equeue: namespace topic IDs: %w", err)
	}
	return topicIDCipher{block: block}, nil
}

// viewIDKey returns the engine's key of the views' topic IDs: the one in
// memory, else the stored one, else a new one it stores.
func (e *Engine) viewIDKey() ([]byte, error) {
	k := &e.viewIDs
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil {
		return k.key, nil
	}
	v, err := e.st.GetMeta(keyViewTopicIDs)
	switch {
	case err == nil && len(v) == viewIDKeyLen:
		k.key = slices.Clone(v)
		return k.key, nil
	case err == nil:
		return nil, fmt.Errorf("%w: key of %d bytes, want %d", ErrCorrupt, len(v), viewIDKeyLen)
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	fresh := make([]byte, viewIDKeyLen)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	// An indeterminate write is not taken: the next call reads what the
	// store holds, this key or none.
	if err := e.writeMeta(store.MetaOp{Key: keyViewTopicIDs, Value: fresh}); err != nil {
		return nil, err
	}
	k.key = fresh
	return k.key, nil
}

// topicIDCipher maps engine topic IDs to one namespace's: its round
// function is AES under a key derived from the engine's key and the
// namespace's name, so a listing of many topics stays cheap.
type topicIDCipher struct {
	block cipher.Block
}

// of returns the namespace's ID of the topic whose engine ID is id; 0
// stays 0. Cycle walking keeps the result off 0, which means "unknown"
// to callers (id itself, non-zero, is on its cycle, so the walk ends).
func (c topicIDCipher) of(id uint32) uint32 {
	if id == 0 {
		return 0
	}
	for x := id; ; {
		x = c.permute(x)
		if x != 0 {
			return x
		}
	}
}

// permute is a balanced Feistel network over the two 16-bit halves of x,
// its round function the keyed block cipher: a permutation of the
// uint32s.
func (c topicIDCipher) permute(x uint32) uint32 {
	l, r := uint16(x>>16), uint16(x)
	var in, out [aes.BlockSize]byte
	for round := range viewIDRounds {
		in[0] = byte(round)
		binary.BigEndian.PutUint16(in[1:], r)
		c.block.Encrypt(out[:], in[:])
		l, r = r, l^binary.BigEndian.Uint16(out[:])
	}
	return uint32(l)<<16 | uint32(r)
}
