package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestNewServer_RefusesAnAdvertisedAddressClientsCannotDial: Metadata hands
// clients the advertised address as this broker's; one without a host, with
// an unspecified one or with a bad port would send every client elsewhere
// (or to itself), so NewServer refuses it.
func TestNewServer_RefusesAnAdvertisedAddressClientsCannotDial(t *testing.T) {
	e := openEngine(t, nil)
	for _, addr := range []string{":9092", "0.0.0.0:9092", "[::]:9092", "broker", "broker:kafka", "broker:0", "broker:70000"} {
		_, err := kafka.NewServer(e, &kafka.Options{AdvertisedAddr: addr})
		require.ErrorIs(t, err, equeue.ErrInvalidOptions, addr)
	}
	for _, addr := range []string{"broker.example:9092", "10.0.0.7:9092", "[fd00::7]:19092"} {
		s, err := kafka.NewServer(e, &kafka.Options{AdvertisedAddr: addr})
		require.NoError(t, err, addr)
		assert.NoError(t, s.Close())
	}
}
