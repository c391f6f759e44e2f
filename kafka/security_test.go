package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/equeue-go/equeue/kafka"
	"github.com/equeue-go/equeue/remote"
)

// selfSigned returns a server certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafka-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestSecurity_TLSAndSASLRights: over TLS, SASL/PLAIN with a token admits
// what its rights allow and refuses the rest; a plaintext client or a wrong
// token gets nothing.
func TestSecurity_TLSAndSASLRights(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	cert, pool := selfSigned(t)
	addr := serve(t, e, &kafka.Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}},
		Tokens: map[string]kafka.Rights{"w": kafka.RightProduce, "r": kafka.RightConsume, "a": kafka.RightAdmin}})
	client := func(token string, opts ...kgo.Opt) *kgo.Client {
		return kclient(t, addr, append([]kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
			kgo.SASL(plain.Auth{User: "u", Pass: token}.AsMechanism()), kgo.RequestRetries(0)}, opts...)...)
	}
	w := client("w", kgo.DefaultProduceTopic("t"))
	require.NoError(t, w.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr())

	r := client("r", kgo.DefaultProduceTopic("t"), kgo.DisableIdempotentWrite())
	err := r.ProduceSync(ctx, &kgo.Record{Value: []byte("no")}).FirstErr()
	assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "new", NumPartitions: 1, ReplicationFactor: 1}}
	resp, err := ct.RequestWith(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, int16(29), resp.Topics[0].ErrorCode, "TOPIC_AUTHORIZATION_FAILED")
	ra := client("a")
	resp, err = ct.RequestWith(ctx, ra)
	require.NoError(t, err)
	assert.Equal(t, int16(0), resp.Topics[0].ErrorCode)

	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, client("nope"))
	assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	plainClient := kclient(t, addr, kgo.RequestRetries(0), kgo.DialTimeout(5*time.Second))
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, plainClient)
	assert.Error(t, err, "a plaintext client cannot talk to a TLS listener")

	res, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Queues[0].MaxOffset, "only the permitted produce was stored")
}

// TestGroups_SilentMemberExpires: a member that joined and then went silent
// is dropped after its session timeout, and the partitions go to the live
// member.
func TestGroups_SilentMemberExpires(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	silent := kclient(t, addr)
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = "g", "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 1000, 60_000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)}}
	jr := requestJoin(ctx, t, silent, req)
	require.Equal(t, int16(0), jr.ErrorCode)

	live := kclient(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.HeartbeatInterval(100*time.Millisecond))
	adm := kadmin(t, addr)
	require.Eventually(t, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_ = live.PollFetches(pctx)
		cancel()
		gs, err := adm.DescribeGroups(ctx, "g")
		require.NoError(t, err)
		g := gs["g"]
		if g.State != "Stable" || len(g.Members) != 1 {
			return false
		}
		ca, ok := g.Members[0].Assigned.AsConsumer()
		return ok && len(ca.Topics) == 1 && len(ca.Topics[0].Partitions) == 2
	}, 30*time.Second, 10*time.Millisecond, "the live member owns both partitions")
}

// TestRights_SameBitsAsRemote: serve hands its gRPC token table to the
// Kafka listener by converting the bits.
func TestRights_SameBitsAsRemote(t *testing.T) {
	assert.Equal(t, kafka.RightProduce, kafka.Rights(remote.RightProduce))
	assert.Equal(t, kafka.RightConsume, kafka.Rights(remote.RightConsume))
	assert.Equal(t, kafka.RightAdmin, kafka.Rights(remote.RightAdmin))
	assert.Equal(t, kafka.RightAll, kafka.Rights(remote.RightAll))
}
