package remote

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// A reply topic belongs to the token that named it. A client with a token
// names its reply topics "%REPLY%<nonce><tag>", where tag is an HMAC of
// the nonce keyed by a key derived from the token (replyKey): the server,
// which knows every token's key, tells from the name alone which token
// made the topic, and no other token can make a name that passes as its.
// Ownership so lives in the name, where it survives whatever the topic
// survives (a restart of the server or the engine, a new cluster leader),
// with nothing stored beside it.
const (
	replyNonceBytes = 16
	replyTagBytes   = 16
	// replyIDLen is the length of a named reply topic's id, in hex.
	replyIDLen = 2 * (replyNonceBytes + replyTagBytes)
)

// replyKey is the key a token's reply topic names are tagged with. It is
// derived apart from the token's lookup digest (tokenTable).
func replyKey(token string) [sha256.Size]byte {
	return sha256.Sum256([]byte("equeue reply topic\x00" + token))
}

// replyTag returns the tag of nonce (hex) under key, in hex.
func replyTag(key *[sha256.Size]byte, nonce string) string {
	mac := hmac.New(sha256.New, key[:])
	mac.Write([]byte(nonce))
	return hex.EncodeToString(mac.Sum(nil)[:replyTagBytes])
}

// newReplyTopicName returns a fresh reply topic name owned by key's token.
func newReplyTopicName(key *[sha256.Size]byte) string {
	var b [replyNonceBytes]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	return equeue.ReplyTopicPrefix + nonce + replyTag(key, nonce)
}

// ownsReplyTopic reports whether reply topic name, as the call names it,
// was named by key's token.
func ownsReplyTopic(key *[sha256.Size]byte, name string) bool {
	id, ok := strings.CutPrefix(name, equeue.ReplyTopicPrefix)
	if !ok || len(id) != replyIDLen {
		return false
	}
	nonce, tag := id[:2*replyNonceBytes], id[2*replyNonceBytes:]
	return hmac.Equal([]byte(tag), []byte(replyTag(key, nonce)))
}

// NewReplyTopicName returns a fresh name for a producer's reply topic,
// owned by the client's token: the server lets only that token, or one
// whose rights reach every topic anyway, read and delete it (see
// replyRights). Producer.Request calls it.
//
// Broker seam: producers call it; applications need not.
func (c *Client) NewReplyTopicName() string { return newReplyTopicName(&c.replyKey) }

// NewReplyTopicName returns a fresh name for a producer's reply topic,
// owned by the client's token (see Client.NewReplyTopicName).
//
// Broker seam: producers call it; applications need not.
func (cc *ClusterClient) NewReplyTopicName() string {
	key := replyKey(cc.opts.Token)
	return newReplyTopicName(&key)
}

// replyRights adjusts what a call on a reply topic needs, for the token
// entry that makes it. The requester (produce right) creates its reply
// topic with Route, reads replies with Pull and deletes the topic with
// DeleteReplyTopic; a service answering from its handler (consume right)
// writes replies with Append. So Append of a reply topic takes either
// right, and Pull and DeleteReplyTopic take the produce right from the
// token that named the topic only: another token needs the right that
// reaches every topic (consume to read, admin to delete). Route keeps the
// produce right, so a consume-only token cannot create topics. Other
// calls keep need.
func replyRights(req any, need Rights, caller *tokenEntry) Rights {
	owned := func(name string) Rights {
		if ownsReplyTopic(&caller.replyKey, name) {
			return RightProduce
		}
		return 0
	}
	switch r := req.(type) {
	case *pb.AppendRequest:
		return appendRights(r.GetTopic())
	case *pb.PullRequest:
		if equeue.IsReplyTopic(r.GetTopic()) {
			return RightConsume | owned(r.GetTopic())
		}
	case *pb.DeleteReplyTopicRequest:
		if equeue.IsReplyTopic(r.GetName()) {
			return RightAdmin | owned(r.GetName())
		}
		return RightProduce // the engine refuses any other topic
	}
	return need
}

// appendRights is what an Append of topic needs: either right for a reply
// topic, else RightProduce.
func appendRights(topic string) Rights {
	if equeue.IsReplyTopic(topic) {
		return RightProduce | RightConsume
	}
	return RightProduce
}

// othersReplyTopic completes a refusal of req when it names a reply topic:
// the produce right reaches only the reply topics the token named.
func othersReplyTopic(req any) string {
	var name string
	switch r := req.(type) {
	case *pb.PullRequest:
		name = r.GetTopic()
	case *pb.DeleteReplyTopicRequest:
		name = r.GetName()
	}
	if !equeue.IsReplyTopic(name) {
		return ""
	}
	return fmt.Sprintf("; produce rights reach reply topic %q only for the token that named it", name)
}
